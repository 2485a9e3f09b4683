#!/usr/bin/env bash
# Runs COMMAND... in a private network namespace whose only interface is
# loopback (up), and a private PID namespace: nothing it starts can reach or
# be reached from outside, and every process it leaves behind (Ray's raylet,
# GCS, workers) ends when COMMAND ends or this script is killed.
#   tools/serving/in_private_netns.sh COMMAND...
# Needs CAP_SYS_ADMIN (root, as in CI) or unprivileged user namespaces.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: in_private_netns.sh COMMAND..." >&2; exit 2; }
if [ "$(id -u)" -eq 0 ]; then userns=(); else userns=(--map-root-user); fi
exec unshare "${userns[@]}" --net --pid --fork --kill-child --mount-proc \
  bash -c 'ip link set lo up && exec "$@"' in_private_netns "$@"
