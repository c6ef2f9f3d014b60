"""The curated public API: every name in cctest.__all__ resolves, and importing cctest stays light."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import cctest


def test_every_exported_name_resolves():
    for name in cctest.__all__:
        assert getattr(cctest, name) is not None, name


def test_import_cctest_does_not_load_heavy_libraries():
    heavy = ("torch", "transformers", "libcst", "pygls")
    code = f"import sys, cctest; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


def test_type_checkers_see_the_real_types():
    # the TYPE_CHECKING imports name exactly the lazily exported names, from the same modules
    import ast
    from pathlib import Path

    tree = ast.parse(Path(cctest.__file__).read_text())
    guarded = next(
        n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    )
    typed = {
        alias.name: "cctest" + ("." + node.module if node.module else "")
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == cctest._EXPORTS


@pytest.mark.slow
def test_mypy_reads_cctest_engine_as_the_class(tmp_path):
    from mypy import api

    user = tmp_path / "user.py"
    user.write_text(
        "from cctest import Engine, Settings\nreveal_type(Engine)\nreveal_type(Settings().mutants)\n"
    )
    out, err, status = api.run(
        [str(user), "--no-incremental", "--ignore-missing-imports", "--follow-imports=silent"]
    )
    assert 'Revealed type is "def (' in out and "cctest.engine.Engine" in out, out + err
    assert re.search(r'Revealed type is "(builtins\.)?int"', out), out + err
