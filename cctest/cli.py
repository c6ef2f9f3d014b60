"""The ``cctest`` command line: one sub-command per module in ``cctest.commands``.

Each command module exports ``add_arguments(parser)`` and ``run(args) -> int`` and imports heavy
libraries (torch, transformers) only inside ``run``, so ``cctest --help`` stays fast.
Errors a user can cause (``CCTestError``) print one sentence on stderr and exit with 2. Log lines
(warnings and errors) go to stderr through ``RedactingFormatter``: no URL credentials, no raw
control characters; so do the error sentences.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from . import __version__
from .errors import CCTestError
from .redact import RedactingFormatter
from .safe_text import terminal_text

COMMANDS = {
    "mutate": ("cctest.commands.mutate", "print the structure-consistent mutants of a prompt"),
    "complete": (
        "cctest.commands.complete",
        "complete at a cursor, detect outliers, print the repaired completion",
    ),
    "serve": (
        "cctest.commands.serve",
        "serve a local model over OpenAI-compatible /v1/completions and /v1/chat/completions",
    ),
    "bench": ("cctest.commands.bench", "benchmark a model's robustness on a dataset"),
    "defects": ("cctest.commands.defects", "list, show and export the suspected-defect log"),
    "proxy": (
        "cctest.commands.proxy",
        "repair the completions an editor plugin asks a model server for (OpenAI, Ollama, TGI APIs)",
    ),
    "formula": ("cctest.commands.formula", "mutate or reduce an equation (syntactic robustness)"),
}


# the namespace's record of the innermost (sub-)parser that read the arguments, removed after parsing
_PARSER = "_cctest_parser"


class SentenceParser(argparse.ArgumentParser):
    """argparse, but a usage error is one sentence and exit code 2 (argparse's usage noise
    omitted), with "did you mean" for a mistyped option or sub-command; ``cctest`` and
    ``cctest-lsp`` both parse with it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # a sub-command's parser sets this after its parent did: the last one set is the innermost
        self.set_defaults(**{_PARSER: self})

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        ns, extras = self.parse_known_args(args, namespace)
        parser = vars(ns).pop(_PARSER, self)
        if extras:
            message = f"unrecognized arguments: {' '.join(extras)}"
            option = next((a.split("=", 1)[0] for a in extras if a.startswith("-")), None)
            close = difflib.get_close_matches(option, parser.option_names(), n=1) if option else []
            parser.error(f"{message}; did you mean {close[0]}?" if close else message)
        return ns

    def option_names(self) -> list[str]:
        """The option strings ``--help`` shows (a deprecated spelling is hidden)."""
        return [o for a in self._actions if a.help != argparse.SUPPRESS for o in a.option_strings]

    def error(self, message: str) -> NoReturn:
        name = self.prog.split()[0]  # a subcommand's errors are the program's
        text = message[0].upper() + message[1:].rstrip(".") if message else "Bad arguments"
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", text)
        if choice:
            names = [c.strip(" '") for c in choice[2].split(",")]
            close = difflib.get_close_matches(choice[1], names, n=1)
            text = f"{text}; did you mean {close[0]}?" if close else text
        self.exit(2, f"{name}: {text}{'' if text.endswith('?') else '.'}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = SentenceParser(
        prog="cctest",
        description="Test and repair code completions with structure-consistent prompt mutants.",
    )
    parser.add_argument("--version", action="version", version=f"cctest {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=SentenceParser)
    sub.required = True
    for name, (module, help_text) in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


class _StderrLog(logging.StreamHandler):  # type: ignore[type-arg]
    """Warnings and errors on stderr as it is when each line is written (the message alone, as
    Python's own last-resort handler writes them), through ``RedactingFormatter``."""

    def __init__(self) -> None:
        super().__init__()
        self.setLevel(logging.WARNING)
        self.setFormatter(RedactingFormatter("%(message)s"))

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def log_to_stderr() -> None:
    """The command line's log lines: Python's handler of last resort (used while no handler is
    configured, as in every ``cctest`` command) becomes ``_StderrLog``."""
    if not isinstance(logging.lastResort, _StderrLog):
        logging.lastResort = _StderrLog()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (its sentence is on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    log_to_stderr()
    try:
        return int(args._run(args) or 0)
    except CCTestError as exc:
        print(f"cctest: {terminal_text(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("cctest: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
