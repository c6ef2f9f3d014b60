"""The distribution's metadata: setuptools applies pyproject.toml without a warning (so an install
prints none), the licence is an SPDX expression with its file, and the version has one source."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

import cctest

ROOT = Path(__file__).resolve().parents[2]


def test_setuptools_applies_pyproject_without_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # setuptools resolves the licence file and the version from here
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a deprecation (the old licence table) fails here
        dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    meta = dist.metadata
    assert meta.license_expression == "MIT" and meta.license_files == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    assert (meta.name, meta.version) == ("cctest", cctest.__version__)
