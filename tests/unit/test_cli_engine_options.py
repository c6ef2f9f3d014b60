"""Every cctest sub-command's engine options (those that set a ``Settings`` field, and ``--scheme``)
as they are pinned in ``tests/data/cli/engine_options.json``: their option strings, destination,
default, type, choices, metavar and help, and the sentence a value of the wrong type or outside the
choices gets. The options are generated from ``cctest.config.SPECS``; this test holds them to the
command line users already know.

Regenerate the fixture (after a deliberate change) with
``python tests/unit/test_cli_engine_options.py --write``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cctest.cli import build_parser
from cctest.config import SPECS

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "cli" / "engine_options.json"

# the arguments a sub-command needs before an option's value can be the first error
_NEEDS = {
    "cctest complete": ["f.py:1:1"],
    "cctest mutate": ["f.py:1:1"],
    "cctest proxy": ["--upstream", "http://127.0.0.1:1"],
}


def _engine(action: argparse.Action) -> bool:
    return action.dest in SPECS or action.dest == "scheme"


def _value(value: Any) -> Any:
    if value is argparse.SUPPRESS:
        return "==SUPPRESS=="
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def _parsers(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _parsers(sub, f"{path} {name}")
    return found


def _error(argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        build_parser().parse_args(argv)
    return err.getvalue().strip()


def engine_options() -> dict[str, list[dict[str, Any]]]:
    """Each parser (``cctest complete``, ``cctest bench syntactic``, ...) -> its engine options."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path, parser in _parsers(build_parser(), "cctest"):
        options = []
        for a in parser._actions:
            if not _engine(a):
                continue
            entry = {
                "option_strings": a.option_strings,
                "dest": a.dest,
                "action": type(a).__name__,
                "default": _value(a.default),
                "type": getattr(a.type, "__name__", None),
                "choices": list(a.choices) if a.choices is not None else None,
                "metavar": a.metavar,
                "nargs": a.nargs,
                "required": a.required,
                "help": a.help,
            }
            if a.nargs != 0 and (a.type is not None or a.choices is not None):
                argv = path.split()[1:]
                entry["bad_value_error"] = _error([*argv, *_NEEDS.get(path, []), a.option_strings[-1], "x?"])
            options.append(entry)
        if options:
            out[path] = options
    return out


def test_every_sub_command_s_engine_options_are_as_pinned() -> None:
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    actual = json.loads(json.dumps(engine_options()))
    # a sub-command added since is not pinned (its options come from the same specs)
    assert sorted(set(expected) - set(actual)) == []
    for path, options in expected.items():
        assert actual[path] == options, path


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-new-tokens", "0"], "max-new-tokens: 0 is not an integer of at least 1."),
        (["--temperature", "3"], "temperature: 3.0 is not a number from 0 to 2."),
        (["--top-p", "0"], "top-p: 0.0 is not a number above 0 and at most 1."),
        (["--timeout", "0"], "timeout: 0.0 is not a number above 0."),
        (["-k", "65"], "mutants: 65 is not an integer from 0 to 64."),
        (["--fim", "nosuch"], "fim:"),
    ],
)
def test_a_setting_out_of_its_range_is_the_spec_s_sentence(argv: list[str], message: str, capsys) -> None:
    from cctest.cli import main

    assert main(["complete", "f.py:1:1", "--backend", "rules", *argv]) == 2
    assert message in capsys.readouterr().err


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(engine_options(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
