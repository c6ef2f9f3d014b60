#!/usr/bin/env bash
# What `make demo` needs and nothing more: .venv with torch and cctest installed (editable) with its
# development tools. No root, no apt-get (bubblewrap and WordNet: scripts/setup-system.sh, run by
# `make setup-all` and `make test`). Idempotent: a step already done is skipped silently.
# torch is installed first and pinned to 2.13.0: on the project's build machines that is a local
# CPU wheel (a bare "torch" requirement would pull a multi-GB CUDA build); elsewhere pip gets the
# usual wheel for the platform.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
PY=${PYTHON:-python3}

make_venv() {
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
}
install_torch() {
  .venv/bin/python -m pip install -q "torch==2.13.0" || .venv/bin/python -m pip install -q torch
}

[[ -x .venv/bin/python ]] || step "venv (.venv)" make_venv
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  step "torch" with_heartbeat "installing torch" install_torch
fi
stamp=.venv/.cctest-installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  step "cctest and its development tools" with_heartbeat "installing cctest's dependencies" \
    .venv/bin/python -m pip install -q -e ".[all,dev]"
  touch "$stamp"
fi
