"""The one registry of kinds of run (``cctest.bench.kinds.SUITES``): every kind it names loads,
and the CLI's ``cctest bench`` sub-commands are exactly its suites' plus the actions."""

from __future__ import annotations

import argparse

from cctest.bench.kinds import SUITES, get_kind, kind_of
from cctest.cli import build_parser


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_registered_kind_loads_under_its_name() -> None:
    assert {name: get_kind(name).name for name in SUITES} == {name: name for name in SUITES}
    assert kind_of({}).name == "completion"  # a config.json written before kinds had names


def test_the_bench_sub_commands_are_the_registry_s_suites() -> None:
    bench = _choices(build_parser())["bench"]
    suites = {name for name, suite in SUITES.items() if suite.command}
    assert set(_choices(bench)) == suites | {"compare", "report", "export"}
    assert "completion" not in suites  # the CCTest bench is cctest bench --dataset itself
