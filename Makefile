# The two commands the README opens with:
#   make demo   a repaired completion on the bundled model
#   make test   every test: Python (unit + end-to-end with real LSP clients) and the VS Code extension
.PHONY: setup setup-e2e demo test test-python test-extension lint bench

setup:
	bash scripts/setup.sh

setup-e2e: setup
	bash scripts/setup-e2e.sh

demo: setup
	.venv/bin/cctest complete examples/demo.py:6:5

test: setup-e2e test-python test-extension

test-python: setup
	.venv/bin/python -m pytest -q

test-extension: setup-e2e
	@if [ -f vscode-extension/package.json ]; then cd vscode-extension && npm test; fi

lint: setup
	.venv/bin/ruff check cctest lsp_server tests benchmarks tools
	.venv/bin/ruff format --check cctest lsp_server tests benchmarks tools
	.venv/bin/mypy  # cctest, lsp_server and benchmarks (pyproject.toml)

bench: setup
	for f in benchmarks/*.py; do .venv/bin/python $$f || exit 1; done
