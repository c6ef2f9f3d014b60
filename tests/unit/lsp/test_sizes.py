"""Keeps lsp_server's functions small (measured with ast): none over 50 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import lsp_server

ROOT = Path(lsp_server.__file__).parent
MAX_FUNCTION = 50


def _too_long() -> list[str]:
    found = []
    for path in sorted(ROOT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION:
                    found.append(f"{path.name}:{node.name} ({length} lines)")
    return found


def test_no_function_over_50_lines() -> None:
    assert _too_long() == []
