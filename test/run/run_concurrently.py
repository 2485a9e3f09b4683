#!/usr/bin/env python3
"""Runs several commands at once and waits for all of them (bounded).

    run_concurrently.py TIMEOUT_S OUT_PREFIX -- CMD... [--- CMD...]...

Command K's stdout and stderr go to OUT_PREFIX.K.txt. Exits 1 when any command
fails or runs past TIMEOUT_S (then every process still running is killed by its
id), else 0. Two processes starting cold on one cache folder is the case it is
for (test/run/stress.test)."""
import subprocess
import sys
import time

timeout = float(sys.argv[1])
prefix = sys.argv[2]
assert sys.argv[3] == "--"
commands, current = [], []
for arg in sys.argv[4:]:
    if arg == "---":
        commands.append(current)
        current = []
    else:
        current.append(arg)
commands.append(current)

processes = []
for k, command in enumerate(commands):
    out = open(f"{prefix}.{k}.txt", "w")
    processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT))
deadline = time.monotonic() + timeout
failed = False
for k, p in enumerate(processes):
    try:
        rc = p.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        print(f"command {k} ran past {timeout} s; stopping it")
        p.kill()
        p.wait()
        rc = -1
    print(f"command {k}: exit {rc}")
    failed = failed or rc != 0
sys.exit(1 if failed else 0)
