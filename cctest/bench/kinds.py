"""Run kinds: how a run directory's records become a summary, a report and a comparison.

Every benchmark (the CCTest bench over a dataset, a task file, each natural-language suite)
writes the same run directory (``runner``: ``config.json``, ``results.jsonl``, resume) and gets
``summary.json``, ``report.html``, the terminal table and ``cctest bench compare`` from the same
code (``report``). What differs is said by a ``RunKind``: how records are summarised, the tables
and figures of the summary, examples worth showing, and the rows that compare two summaries.

``config.json`` names its kind (``"kind"``; a run without one is the CCTest bench,
``completion``), so ``cctest bench report`` and ``compare`` find it again. A suite adds its kind
to ``KINDS`` as ``"module:Class"`` (imported on first use).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
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


# name -> "module:Class"; a suite adds its own line
KINDS: dict[str, str] = {
    "completion": "cctest.bench.completion:CompletionKind",
    "tasks": "cctest.tasks.run:TasksKind",
    "syntactic": "cctest.suites.syntactic:SyntacticKind",
    "turbulence": "cctest.suites.turbulence:TurbulenceKind",
    "operational": "cctest.suites.operational:OperationalKind",
}


def get_kind(name: str) -> RunKind:
    """The kind registered under ``name``."""
    spec = KINDS.get(name)
    if spec is None:
        raise ConfigError(f"unknown kind of run '{name}' (known: {', '.join(sorted(KINDS))}).")
    module, _, attr = spec.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    kind: RunKind = cls()
    return kind


def kind_of(config: Mapping[str, Any]) -> RunKind:
    """The kind of the run ``config`` (``config.json``) describes."""
    return get_kind(str(config.get("kind") or "completion"))
