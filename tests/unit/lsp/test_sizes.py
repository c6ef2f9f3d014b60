"""Keeps lsp_server's parts small (measured with ast): no function over 50 lines, no class over
250, and every LSP handler three statements at most (get the arguments, call, convert).

The class limit covers lsp_server only: in cctest, HFBackend, HTTPBackend, DefectStore and
SiteCollector are longer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lsp_server

ROOT = Path(lsp_server.__file__).parent
MAX_FUNCTION = 50
MAX_CLASS = 250
MAX_HANDLER_STATEMENTS = 3


def _nodes() -> list[tuple[str, ast.AST]]:
    return [
        (path.name, node)
        for path in sorted(ROOT.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
    ]


def _length(node: ast.stmt) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1


def _too_long(kinds: tuple[type[ast.stmt], ...], limit: int) -> list[str]:
    return [
        f"{name}:{node.name} ({_length(node)} lines)"
        for name, node in _nodes()
        if isinstance(node, kinds) and _length(node) > limit  # type: ignore[attr-defined]
    ]


def _is_handler(node: ast.AST) -> bool:
    """A function decorated with ``@server.feature(...)`` or ``@server.command(...)``."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        isinstance(d, ast.Call)
        and isinstance(d.func, ast.Attribute)
        and d.func.attr in ("feature", "command")
        for d in node.decorator_list
    )


def _statements(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return len(body)


def test_no_function_over_50_lines() -> None:
    assert _too_long((ast.FunctionDef, ast.AsyncFunctionDef), MAX_FUNCTION) == []


def test_no_class_over_250_lines() -> None:
    assert _too_long((ast.ClassDef,), MAX_CLASS) == []


def test_handlers_are_get_call_convert() -> None:
    handlers = [(name, node) for name, node in _nodes() if _is_handler(node)]
    assert len(handlers) >= 10  # the server's handlers were found
    long = [
        f"{name}:{node.name} ({_statements(node)} statements)"  # type: ignore[attr-defined]
        for name, node in handlers
        if _statements(node) > MAX_HANDLER_STATEMENTS  # type: ignore[arg-type]
    ]
    assert long == []
