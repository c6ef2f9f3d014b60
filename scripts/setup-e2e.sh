#!/usr/bin/env bash
# What the end-to-end tests need beyond .venv: Neovim (a real LSP client), Chromium and code-server
# (a real VS Code), and the extension's npm packages. Idempotent; run by `make test` (needs root
# for apt-get when Neovim or code-server's build tools are missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

if ! command -v nvim >/dev/null; then
  if ! can_install; then
    say "Neovim is not installed and installing it needs root: run 'make test' as root, or" \
      "install neovim (0.7 or later) yourself; tests/e2e/lsp/test_lsp_neovim.py needs it." >&2
    exit 1
  fi
  step "Neovim" apt_install neovim
fi
# tests/e2e/lsp/test_lsp_neovim.py needs Neovim's built-in LSP client with vim.wait: 0.7 or later
nvim_version=$(nvim --version | sed -nE '1s/^NVIM v([0-9]+)\.([0-9]+).*/\1 \2/p')
read -r nvim_major nvim_minor <<<"${nvim_version:-0 0}"
if ((nvim_major == 0 && nvim_minor < 7)); then
  say "Neovim ${nvim_major}.${nvim_minor} is too old for the LSP test; 0.7 or later is needed." >&2
  exit 1
fi
if [[ -f vscode-extension/package.json ]]; then
  # npm ci again whenever package-lock.json is newer than the last install
  if [[ ! vscode-extension/node_modules/.package-lock.json -nt vscode-extension/package-lock.json ]]; then
    npm_ci() ( cd vscode-extension && npm ci --no-audit --no-fund --no-update-notifier )
    step "the extension's npm packages (npm ci)" with_heartbeat "installing npm packages" npm_ci
  fi
  # the extension's .vsix (the esbuild bundle, then vsce package), again whenever one of its inputs
  # is newer; tests/e2e/packaging/test_vsix.py checks what it carries
  vsix=vscode-extension/cctest.vsix
  inputs=(vscode-extension/{src,package.json,package-lock.json,.vscodeignore,README.md,LICENSE})
  if [[ ! -f $vsix || -n $(find "${inputs[@]}" -newer "$vsix" -not -path '*/src/test/*' -print -quit) ]]; then
    package_vsix() {
      local log rc=0
      log=$(cd vscode-extension && npm run --silent package 2>&1) || rc=$?
      ((rc == 0)) || echo "$log" >&2
      return "$rc"
    }
    step "the extension's .vsix (npm run package)" package_vsix
  fi
  bash tools/install-code-server.sh "${CODE_SERVER_PREFIX:-$HOME/.cache/code-server-e2e}"
fi
