"""Run kinds: how a run directory's records become a summary, a report and a comparison.

Every benchmark (the CCTest bench over a dataset, a task file, each natural-language suite)
writes the same run directory (``store``: ``config.json``, ``results.jsonl``, resume) and gets
``summary.json``, ``report.html``, the terminal table and ``cctest bench compare`` from the same
code (``report``). What differs is said by a ``RunKind``: how its ``config.json`` is read (older
shapes included), how records are summarised, the tables and figures of the summary, examples
worth showing, and the rows that compare two summaries.

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
from ..extras import require
from ..models import BUNDLED_MODEL

Table = tuple[list[str], list[list[str]]]  # headers, rows


def recorded_model(backend: Any, model: Any) -> str | None:
    """The model as a run names it: the bundled model by name (``model`` null with ``hf``)."""
    if model is None:
        return f"{BUNDLED_MODEL} (bundled)" if backend == "hf" else None
    return str(model)


# the CCTest bench's config.json: its fields of the engine's settings before it embedded them
# (``"settings"``), as its readers still see them (``runner.run_config``): field -> setting
FLAT_SETTINGS = {
    "backend": "backend",
    "model": "model",
    "k": "mutants",
    "schemes": "schemes",
    "seed": "seed",
    "max_new_tokens": "max_new_tokens",
    "temperature": "temperature",
    "max_distance": "max_distance",
    "mutant_pool": "mutant_pool",
    "spare_suffix": "spare_suffix",
    "near_sites": "near_sites",
    "prefill_budget": "prefill_budget",
    "fim": "fim",
    "completion_scope": "completion_scope",
}
# the fields in their order (the report lists them so), the run's own among them
FLAT_ORDER = (
    "dataset", "dataset_source", "tasks", "backend", "model", "k", "schemes", "thresholds", "limit",
    "seed", "shuffle", "max_new_tokens", "temperature", "max_distance", "sandbox", "infill",
    "mutant_pool", "spare_suffix", "near_sites", "prefill_budget", "fim", "completion_scope",
    "decide_after",
)  # fmt: skip
# settings recorded only since a later version: a run recorded before was made with these
RECORDED_SINCE = {
    "mutant_pool": 1,
    "spare_suffix": False,
    "near_sites": False,
    "prefill_budget": 0,  # (before it, the mutants were chosen without their cost)
    "fim": "auto",
    "completion_scope": "block",
}


def flat_config(
    config: Mapping[str, Any], flat_settings: Mapping[str, str], order: Sequence[str]
) -> dict[str, Any]:
    """A run's ``config.json`` as its readers see it, whatever its shape: the run's fields with the
    engine's settings its kind once copied beside them (``flat_settings``: field -> setting) among
    them again, ``model`` named as ``recorded_model`` names it, in the fields' old ``order``. A
    config written before the settings were embedded (``"settings"``) is that shape already."""
    settings = config.get("settings")
    if not isinstance(settings, Mapping):
        return dict(config)
    flat = {k: v for k, v in config.items() if k != "settings"}
    flat.update({name: settings.get(key) for name, key in flat_settings.items()})
    flat["model"] = recorded_model(settings.get("backend"), settings.get("model"))
    place = {name: i for i, name in enumerate(order)}
    return dict(sorted(flat.items(), key=lambda item: place.get(item[0], len(place))))


class RunKind:
    """What a kind of run needs to say about itself; subclass and override."""

    name = "completion"
    title = "cctest bench"  # the reports' heading
    docs = "docs/bench.md"  # where every number is defined
    # figures placed after the table of the same title (figure titles); the rest go at the end
    figures_after: Mapping[str, tuple[str, ...]] = {}
    # config.json's fields of the engine's settings (``"settings"``) as the kind's readers see them
    # (``read_config``): field -> setting, and the fields' order; the CCTest bench's by default
    flat_settings: Mapping[str, str] = FLAT_SETTINGS
    flat_order: Sequence[str] = FLAT_ORDER
    # fields of ``read_config``'s view recorded only since a later version: a run recorded before
    # was made with these (a resume's check gives an older config.json them)
    recorded_since: Mapping[str, Any] = RECORDED_SINCE

    def read_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """``config.json`` (or a config's ``to_dict()``) as every reader of this kind sees it
        (``store.config_view``), whatever shape a version wrote it in (``flat_config``)."""
        return flat_config(config, self.flat_settings, self.flat_order)

    def summarize(self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        """``summary.json`` of a run (it must hold ``counts``: a dict of named counts); the kind's
        own summary type (``TasksSummary``, ...)."""
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
    extra: str = "bench"  # the install's extra its run needs (cctest.extras)


# name -> its suite; a new suite adds its own line
SUITES: dict[str, Suite] = {
    "completion": Suite("cctest.bench.completion:CompletionKind"),
    "tasks": Suite("cctest.tasks.run:TasksKind", "cctest.commands.bench_tasks", extra="suites"),
    "syntactic": Suite(
        "cctest.suites.syntactic:SyntacticKind", "cctest.commands.bench_syntactic", extra="suites"
    ),
    "turbulence": Suite(
        "cctest.suites.turbulence:TurbulenceKind", "cctest.commands.bench_turbulence", extra="suites"
    ),
    "operational": Suite(
        "cctest.suites.operational:OperationalKind", "cctest.commands.bench_operational", extra="suites"
    ),
    "evaluate": Suite("cctest.bench.evaluate:EvaluateKind", "cctest.commands.bench_evaluate"),
}


def suite_commands() -> dict[str, str]:
    """``cctest bench``'s sub-commands: name -> the module that adds its options and runs it."""
    return {name: s.command for name, s in SUITES.items() if s.command}


def needed_extra(name: str) -> str:
    """The install's extra that ``cctest bench NAME`` (a suite or an action) needs."""
    suite = SUITES.get(name)
    return suite.extra if suite else "bench"


def get_kind(name: str) -> RunKind:
    """The kind registered under ``name``; ``MissingExtraError`` where its extra is not installed."""
    suite = SUITES.get(name)
    if suite is None:
        raise ConfigError(f"unknown kind of run '{name}' (known: {', '.join(sorted(SUITES))}).")
    require(suite.extra, f"a '{name}' run")
    module, _, attr = suite.kind.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    kind: RunKind = cls()
    return kind


def kind_of(config: Mapping[str, Any]) -> RunKind:
    """The kind of the run ``config`` (``config.json``) describes."""
    return get_kind(str(config.get("kind") or "completion"))
