#!/usr/bin/env bash
# The floors job (`make test-floors`, part of `make test`): cctest installed with every runtime
# dependency at the lowest version pyproject.toml allows (scripts/floors.py pins each '>=' bound),
# in .venv-floors, and the unit tests run there. A floor the code does not work with fails here:
# an import, an API the older release lacks, or a resolution pip cannot make (two floors that
# contradict each other). The pins are installed again whenever pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
SETUP_TAG=floors
PY=${PYTHON:-python3}
VENV=.venv-floors
stamp=$VENV/.floors-installed

install_floors() {
  if [[ ! -x $VENV/bin/python ]]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
  fi
  .venv/bin/python scripts/floors.py >"$VENV/constraints.txt"
  # torch first, as scripts/setup.sh does: its floor is the CPU build on this disk
  "$VENV/bin/python" -m pip install -q -c "$VENV/constraints.txt" torch
  "$VENV/bin/python" -m pip install -q -c "$VENV/constraints.txt" -e ".[all,dev]"
}

if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  step "cctest at the lowest versions pyproject.toml allows ($VENV)" \
    with_heartbeat "installing the floors" install_floors
  touch "$stamp"
fi
say "at the floors: $(tr '\n' ' ' <"$VENV/constraints.txt")"
step "the unit tests at the floors" \
  "$VENV/bin/python" -m pytest tests/unit -p no:cacheprovider -q -o console_output_style=count "$@"
