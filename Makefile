# The two commands the README opens with:
#   make demo   a repaired completion on the bundled model: needs .venv only (no root, no apt-get)
#   make test   every test: Python (unit + end-to-end with real LSP clients), the unit tests at the
#               dependencies' lowest versions (test-floors), and the VS Code extension
# Setup, each step idempotent and announced with its duration:
#   make setup       .venv with cctest (scripts/setup.sh)
#   make setup-all   setup + bubblewrap and WordNet, as root with apt-get (scripts/setup-system.sh)
#   make setup-e2e   setup-all + Neovim, the extension's npm packages and .vsix, code-server (scripts/setup-e2e.sh),
#                    llama.cpp's server and llama-cpp-python's, built once per version (scripts/setup-llama.sh)
.PHONY: setup setup-all setup-e2e demo test test-python test-floors test-extension lint bench

setup:
	bash scripts/setup.sh

setup-all: setup
	bash scripts/setup-system.sh

setup-e2e: setup-all
	bash scripts/setup-e2e.sh
	bash scripts/setup-llama.sh

demo: setup
	.venv/bin/cctest complete examples/demo.py:6:5

test: setup-e2e test-python test-floors test-extension

# one line per test file with the running count ("[ 812/2575]"), then pytest's usual summary line
test-python: setup-all
	.venv/bin/python -m pytest -o console_output_style=count

# the unit tests again with every runtime dependency at pyproject.toml's lower bound (.venv-floors)
test-floors: setup-all
	bash scripts/test-floors.sh

test-extension: setup-e2e
	@if [ -f vscode-extension/package.json ]; then cd vscode-extension && npm test; fi

lint: setup
	.venv/bin/ruff check cctest lsp_server tests benchmarks tools
	.venv/bin/ruff format --check cctest lsp_server tests benchmarks tools
	.venv/bin/mypy  # cctest, lsp_server and benchmarks (pyproject.toml)

bench: setup
	for f in benchmarks/*.py; do .venv/bin/python $$f || exit 1; done
