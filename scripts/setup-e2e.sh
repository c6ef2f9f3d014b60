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
if [[ -f vscode-extension/package.json ]]; then
  # npm ci again whenever package-lock.json is newer than the last install
  (cd vscode-extension && { [[ node_modules/.package-lock.json -nt package-lock.json ]] || npm ci --no-audit --no-fund; })
  bash tools/install-code-server.sh "${CODE_SERVER_PREFIX:-$HOME/.cache/code-server-e2e}"
fi
