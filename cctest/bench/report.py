"""The benchmark's reports: a terminal table, ``report.html`` for one run, ``compare.html`` for two.

The page layout, ``summary.json`` and the comparison are the same for every kind of run: this
module asks the run's kind (``kinds``) for its tables, figures and examples and lays them out with
``render``'s pieces; the CCTest bench's own are in ``completion``.

The HTML files are self-contained (inline CSS, matplotlib figures inline as SVG, drawn
with the Agg backend so no display is needed), so they can be mailed or archived as one file.
Labels are drawn as plain text: a run named ``$x$`` is not read as mathtext. Every file is written
whole through a temporary file renamed over it (``store.write_file``): never through a
symlink planted in the directory.

Records of another shape than their kind writes (a hand-edited ``results.jsonl``) are one
sentence (``summarize_run``), not a traceback.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .kinds import kind_of
from .render import Note, fmt, html_page, html_table, text_table
from .store import REPORT, RESULTS, RunStore, make_dir, write_file


def terminal_report(summary: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> str:
    """The summary as text tables, under a headline naming the run (its kind's)."""
    kind = kind_of(config or {})
    parts = []
    if config:
        parts.append(kind.headline(config, summary))
        parts += kind.notes(config, summary)
    for title, (headers, rows) in kind.tables(summary).items():
        if rows:
            parts.append(f"\n{title}\n" + text_table(headers, rows))
        else:
            parts.append(f"\n{title}\n" + kind.empty_table(title, summary))
    return "\n".join(parts) + "\n"


def write_report(
    run_dir: Path, config: Mapping[str, Any], summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> Path:
    """``report.html`` for one run of any kind: settings, counts, the kind's tables, figures, examples."""
    page = _from_records(run_dir, lambda: report_page(config, summary, records))
    path = run_dir / REPORT
    write_file(path, page)
    return path


_SHAPE_ERRORS = (LookupError, TypeError, ValueError, AttributeError, ArithmeticError)


def _from_records(run_dir: Path, make: Callable[[], Any]) -> Any:
    """``make()``, whose failure on records of another shape than their kind writes (a field
    missing or of another type) is one sentence naming the run's records."""
    try:
        return make()
    except _SHAPE_ERRORS as exc:
        what = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        raise ConfigError(
            f"{run_dir / RESULTS} holds records of another shape than its run writes ({what}); "
            "no report can be made from them."
        ) from None


def summarize_run(
    run_dir: Path, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``summary.json`` of a run (its kind's summary), one sentence if its records cannot be read so."""
    summary: dict[str, Any] = _from_records(run_dir, lambda: kind_of(config).summarize(config, records))
    return summary


def report_page(
    config: Mapping[str, Any], summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> str:
    """The HTML of ``report.html``."""
    kind = kind_of(config)
    settings = kind.settings(config, summary)
    meta_rows = [[k, _setting(v)] for k, v in settings.items()]
    meta_rows += [[f"count: {k}", str(v)] for k, v in summary["counts"].items()]
    meta_rows += [[f"time: {k}", fmt(v, 1)] for k, v in summary.get("timings_ms", {}).items()]
    body = [f"<h1>{html.escape(kind.headline(config, summary))}</h1>"]
    body += [f"<p class='note'>{html.escape(note)}</p>" for note in kind.notes(config, summary)]
    body.append("<h2>Run</h2>" + html_table(["setting", "value"], meta_rows, "meta"))
    figs = kind.figures([(str(config.get("model") or config.get("backend")), summary)])
    placed: set[str] = set()
    for title, (headers, rows) in kind.tables(summary).items():
        if rows:
            body.append(f"<h2>{html.escape(title)}</h2>" + html_table(headers, rows))
        else:
            why = html.escape(kind.empty_table(title, summary))
            body.append(f"<h2>{html.escape(title)}</h2><p class='note'>{why}</p>")
        for fig_title in kind.figures_after.get(title, ()):
            if fig_title in figs:
                placed.add(fig_title)
                if rows or not isinstance(figs[fig_title], Note):  # the table's sentence says it already
                    body.append(_img(fig_title, figs[fig_title]))
    body += [f"<h2>{html.escape(t)}</h2>" + _img(t, svg) for t, svg in figs.items() if t not in placed]
    body.append(kind.examples(config, summary, records))
    body.append(
        f"<p class='note'>Definitions of every number: {html.escape(kind.docs)}. "
        f"Generated by {html.escape(kind.title)}.</p>"
    )
    return html_page(f"{kind.title} report", "".join(body))


def _setting(v: Any) -> str:
    return json.dumps(v) if isinstance(v, (list, dict)) else fmt(v)


def _img(title: str, svg: str) -> str:
    """A figure in the page: the inline SVG, or the sentence of a ``Note``."""
    if isinstance(svg, Note):
        return f"<p class='note'>{html.escape(svg)}</p>"
    return f'<figure class="plot" aria-label="{html.escape(title)}">{svg}</figure>'


def finish_run(store: RunStore[Any], config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str:
    """Write ``summary.json`` (atomically) and ``report.html`` for a run; returns the terminal report."""
    summary = summarize_run(store.path, config, records)
    store.write_summary(summary)
    write_report(store.path, config, summary, records)
    return _from_records(store.path, lambda: terminal_report(summary, config))  # type: ignore[no-any-return]


# ------------------------------------------------------------------ comparison


def compare_runs(
    runs: Sequence[tuple[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]], out_dir: Path
) -> tuple[str, Path]:
    """Two runs, (name, config, records) each, of the same kind: a terminal table and ``compare.html``."""
    (na, ca, ra), (nb, cb, rb) = runs
    kind = kind_of(ca)
    if kind_of(cb).name != kind.name:
        raise ConfigError(
            f"{na} is a '{kind.name}' run and {nb} a '{kind_of(cb).name}' run; only runs of one kind compare."
        )
    sa, sb = summarize_run(Path(na), ca, ra), summarize_run(Path(nb), cb, rb)
    rows = [*kind.compare_settings(ca, cb), *kind.compare_rows(sa, sb)]
    return text_table(["", na, nb], rows), write_compare(out_dir, [(na, ca, sa), (nb, cb, sb)])


def write_compare(out_dir: Path, runs: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]]) -> Path:
    """``compare.html`` for two runs of one kind: (name, config, summary) each."""
    (na, ca, sa), (nb, cb, sb) = runs
    kind = kind_of(ca)
    ga, gb = kind.settings(ca, sa), kind.settings(cb, sb)
    # the settings that differ first, marked, then the rest
    keys = sorted(set(ga) | set(gb), key=lambda k: (ga.get(k) == gb.get(k), k))
    cfg_rows = [[k, _setting(ga.get(k)), _setting(gb.get(k))] for k in keys]
    differ = [ga.get(k) != gb.get(k) for k in keys]
    body = [f"<h1>{html.escape(kind.title)}: {html.escape(na)} vs {html.escape(nb)}</h1>"]
    for name, config, summary in runs:
        body += [
            f"<p class='note'>{html.escape(name)}: {html.escape(n)}</p>" for n in kind.notes(config, summary)
        ]
    n_differ = sum(differ)
    body.append(
        "<h2>Settings</h2><p class='note'>"
        + (
            f"{n_differ} of {len(keys)} settings differ (marked, first)."
            if n_differ
            else f"All {len(keys)} settings are the same."
        )
        + "</p>"
        + html_table(["", na, nb], cfg_rows, "meta", differ)
    )
    body.append("<h2>Headline numbers</h2>" + html_table(["", na, nb], kind.compare_rows(sa, sb)))
    for title, svg in kind.figures([(na, sa), (nb, sb)]).items():
        body.append(f"<h2>{html.escape(title)}</h2>" + _img(title, svg))
    path = out_dir / "compare.html"
    make_dir(out_dir)
    write_file(path, html_page(f"{kind.title} comparison", "".join(body)))
    return path
