# Sourced by the install-*-deps.sh scripts: one way to make a virtual
# environment of pinned packages.
#   pinned_venv VENV_DIR PACKAGE==VERSION...
# Creates VENV_DIR from /usr/bin/python3 when it is not a venv yet, and
# installs the packages unless every one is already there at its pinned
# version (a second run costs one `pip freeze`).
pinned_venv() {
  local venv=$1
  shift
  if [ ! -x "$venv/bin/python" ]; then
    /usr/bin/python3 -m venv "$venv"
  fi
  local have spec
  have=$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null || true)
  for spec in "$@"; do
    # pip freeze lists no extras ("pkg[extra]==v" is "pkg==v") and spells
    # names as the index does: compare without extras, ignoring case.
    if ! grep -qixF "$(sed 's/\[[^]]*\]//' <<<"$spec")" <<<"$have"; then
      "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"
      return
    fi
  done
}
