#!/usr/bin/env bash
# What the end-to-end tests need beyond .venv: Neovim (a real LSP client), Chromium and code-server
# (a real VS Code), and the extension's npm packages. Idempotent; run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v nvim >/dev/null || need+=(neovim)
if ((${#need[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# tests/e2e/lsp/test_lsp_neovim.py needs Neovim's built-in LSP client with vim.wait: 0.7 or later
nvim_version=$(nvim --version | sed -nE '1s/^NVIM v([0-9]+)\.([0-9]+).*/\1 \2/p')
read -r nvim_major nvim_minor <<<"${nvim_version:-0 0}"
if ((nvim_major == 0 && nvim_minor < 7)); then
  echo "setup-e2e: Neovim ${nvim_major}.${nvim_minor} is too old for the LSP test; 0.7 or later is needed." >&2
  exit 1
fi
if [[ -f vscode-extension/package.json ]]; then
  # npm ci again whenever package-lock.json is newer than the last install
  (cd vscode-extension && { [[ node_modules/.package-lock.json -nt package-lock.json ]] || npm ci --no-audit --no-fund; })
  bash tools/install-code-server.sh "${CODE_SERVER_PREFIX:-$HOME/.cache/code-server-e2e}"
fi
