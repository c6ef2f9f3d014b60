"""The curated public API: every name in cctest.__all__ resolves, and importing cctest stays light."""

from __future__ import annotations

import subprocess
import sys

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
