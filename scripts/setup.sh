#!/usr/bin/env bash
# Create .venv with cctest installed (editable) and its development tools. Idempotent.
# torch is installed first and pinned to 2.13.0: on the project's build machines that is a local
# CPU wheel (a bare "torch" requirement would pull a multi-GB CUDA build); elsewhere pip gets the
# usual wheel for the platform.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0" || .venv/bin/python -m pip install -q torch
fi
stamp=.venv/.cctest-installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  .venv/bin/python -m pip install -q -e ".[dev]"
  touch "$stamp"
fi
# the bench's sandbox gives each sample a private filesystem view with bubblewrap (docs/bench.md)
if ! command -v bwrap >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    # not fatal: without it the sandbox keeps its other layers and says so once
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } ||
      echo "setup: bubblewrap could not be installed; the bench's sandbox will run without a private view." >&2
  else
    echo "setup: bubblewrap (bwrap) is not installed, so the bench's sandbox runs samples without" \
      "a private filesystem view; install it (apt-get install bubblewrap) to give them one." >&2
  fi
fi
# ReplaceWord's default neighbours and METEOR read WordNet from Debian's data (docs/operational.md)
if [[ ! -f /usr/share/wordnet/data.noun ]]; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wordnet-base >/dev/null
  else
    echo "setup: WordNet's data is not installed; 'cctest bench operational' needs it" \
      "(apt-get install wordnet-base)." >&2
  fi
fi
