"""Run kinds: how a run directory's records become a summary, a report and a comparison.

Every benchmark (the CCTest bench over a dataset, a task file, each natural-language suite)
writes the same run directory (``runner``: ``config.json``, ``results.jsonl``, resume) and gets
``summary.json``, ``report.html``, the terminal table and ``cctest bench compare`` from the same
code (``report``). What differs is said by a ``RunKind``: how records are summarised, the tables
and figures of the summary, examples worth showing, and the rows that compare two summaries.

``config.json`` names its kind (``"kind"``; a run without one is the CCTest bench,
``completion``), so ``cctest bench report`` and ``compare`` find it again.

``SUITES`` is the one registry of kinds of run: each line names a kind's ``RunKind`` and the module
of its ``cctest bench NAME`` sub-command (both imported on first use). The CLI's suites, the
report and comparison dispatch and a resume's check of the records all derive from it, so a new
suite is its own modules plus one line here.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

Table = tuple[list[str], list[list[str]]]  # headers, rows


class RunKind:
    """What a kind of run needs to say about itself; subclass and override."""

    name = "completion"
    title = "cctest bench"  # the reports' heading
    docs = "docs/bench.md"  # where every number is defined
    # figures placed after the table of the same title (figure titles); the rest go at the end
    figures_after: Mapping[str, tuple[str, ...]] = {}

    def summarize(self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """``summary.json`` of a run (it must hold ``counts``: a dict of named counts)."""
        raise NotImplementedError

    def headline(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        """One line naming the run: what ran, on what, how much."""
        return f"{self.title} · {config.get('backend')} {model_label(config)}".strip()

    def tables(self, summary: Mapping[str, Any]) -> dict[str, Table]:
        """The summary as titled tables, shared by the terminal and the HTML report."""
        raise NotImplementedError

    def notes(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
        """Sentences printed under the headline (the terminal's and the report's): what the run
        left out and why; none by default."""
        return []

    def empty_table(self, title: str, summary: Mapping[str, Any]) -> str:
        """The one sentence printed instead of the table ``title`` when it has no rows: why."""
        return "Nothing of this kind was measured in this run."

    def settings(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
        """The settings the report lists: ``config.json``, with what an ``auto`` became where the
        records say so."""
        return dict(config)

    def figures(self, runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
        """Figures (title -> inline SVG, or a ``report.Note``: the sentence saying why there is
        nothing to draw) for one run, or several side by side; none by default."""
        return {}

    def examples(
        self, config: Mapping[str, Any], summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
    ) -> str:
        """An HTML section of examples from the records (already escaped); none by default."""
        return ""

    def compare_rows(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
        """Side-by-side rows ``[label, value in a, value in b]`` of two summaries' headline numbers."""
        raise NotImplementedError

    def compare_settings(self, ca: Mapping[str, Any], cb: Mapping[str, Any]) -> list[list[str]]:
        """The settings rows printed above ``compare_rows`` in the terminal."""
        return [
            [
                "backend / model",
                f"{ca.get('backend')} {ca.get('model') or ''}".strip(),
                f"{cb.get('backend')} {cb.get('model') or ''}".strip(),
            ]
        ]


def model_label(config: Mapping[str, Any]) -> str:
    """How a run's model is named in titles."""
    if config.get("model"):
        return str(config["model"])
    return "(bundled model)" if config.get("backend") == "hf" else ""


@dataclass(frozen=True)
class Suite:
    """One kind of run in the registry: where its ``RunKind`` and its sub-command live."""

    kind: str  # "module:Class" of its RunKind (summary, report, comparison)
    # the module of ``cctest bench NAME`` (``add_arguments(group)`` and ``run(args, rest)``);
    # None for the CCTest bench, which is ``cctest bench --dataset`` itself
    command: str | None = None


# name -> its suite; a new suite adds its own line
SUITES: dict[str, Suite] = {
    "completion": Suite("cctest.bench.completion:CompletionKind"),
    "tasks": Suite("cctest.tasks.run:TasksKind", "cctest.commands.bench_tasks"),
    "syntactic": Suite("cctest.suites.syntactic:SyntacticKind", "cctest.commands.bench_syntactic"),
    "turbulence": Suite("cctest.suites.turbulence:TurbulenceKind", "cctest.commands.bench_turbulence"),
    "operational": Suite("cctest.suites.operational:OperationalKind", "cctest.commands.bench_operational"),
    "evaluate": Suite("cctest.bench.evaluate:EvaluateKind", "cctest.commands.bench_evaluate"),
}


def suite_commands() -> dict[str, str]:
    """``cctest bench``'s sub-commands: name -> the module that adds its options and runs it."""
    return {name: s.command for name, s in SUITES.items() if s.command}


def get_kind(name: str) -> RunKind:
    """The kind registered under ``name``."""
    suite = SUITES.get(name)
    if suite is None:
        raise ConfigError(f"unknown kind of run '{name}' (known: {', '.join(sorted(SUITES))}).")
    module, _, attr = suite.kind.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    kind: RunKind = cls()
    return kind


def kind_of(config: Mapping[str, Any]) -> RunKind:
    """The kind of the run ``config`` (``config.json``) describes."""
    return get_kind(str(config.get("kind") or "completion"))
