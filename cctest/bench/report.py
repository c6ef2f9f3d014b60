"""The benchmark's reports: a terminal table, ``report.html`` for one run, ``compare.html`` for two.

The page layout, ``summary.json`` and the comparison are the same for every kind of run
(``kinds``); the tables, figures and examples of the CCTest bench (the ``completion`` kind) are
defined here too.

The HTML files are self-contained (inline CSS, matplotlib figures embedded as base64 PNG, drawn
with the Agg backend so no display is needed), so they can be mailed or archived as one file.
Labels are drawn as plain text: a run named ``$x$`` is not read as mathtext. Every file is written
whole through a temporary file renamed over it (``runner.write_run_file``): never through a
symlink planted in the directory.

Records of another shape than their kind writes (a hand-edited ``results.jsonl``) are one
sentence (``summarize_run``), not a traceback.
"""

from __future__ import annotations

import html
import io
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .kinds import kind_of
from .runner import RESULTS, make_dir, write_run_file

# ------------------------------------------------------------------ formatting


def fmt(x: Any, digits: int = 3) -> str:
    """A number for a table: '—' for None, percentages stay as given."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _ratio(x: float | None) -> str:
    return "undefined" if x is None else f"{100 * x:+.1f}%"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [
        max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
        for i, h in enumerate(headers)
    ]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def _ts(summary: Mapping[str, Any]) -> list[str]:
    return list(summary["outliers_per_T"].keys())


def dropped_note(summary: Mapping[str, Any]) -> str | None:
    """The one line saying which thresholds were dropped because they cannot fire for the run's k."""
    dropped = summary.get("thresholds_dropped")
    if not dropped:
        return None
    k = dropped["k"]
    return (
        f"T={', '.join(dropped['thresholds'])} left out: with k={k} mutants a completion has at most "
        f"{k} similarities to the others and is flagged only when more than T of them fall below "
        f"the median, so only T < {k} can flag one."
    )


def _exact_match_row(summary: Mapping[str, Any], ts: list[str]) -> list[list[str]]:
    """The exact-match row (none for a summary written before it was measured)."""
    em = summary.get("exact_match")
    if not em:
        return []
    return [["exact match", _pct(em["original"]), *[_pct(em["repaired"][t]) for t in ts]]]


def _early_table(de: Mapping[str, Any], ts: list[str]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """``--decide-after N``: the verdicts on the first N tokens beside those on whole completions
    and the settled ones (the early choice, the outliers of the cut completions run on)."""
    whole, first = de["every_row"], de["early"]
    # a run recorded before the settled verdict was: the early one stands in for it
    last = de.get("settled", first)
    rows = [
        ["outliers, whole", *[str(whole["outliers_per_T"][t]) for t in ts]],
        [f"outliers, first {de['after']} tokens", *[str(first["outliers_per_T"][t]) for t in ts]],
        ["outliers, settled", *[str(last["outliers_per_T"][t]) for t in ts]],
        ["F1, whole", *[fmt(whole["flag_vs_failure"][t]["f1"]) for t in ts]],
        [f"F1, first {de['after']} tokens", *[fmt(first["flag_vs_failure"][t]["f1"]) for t in ts]],
        ["F1, settled (the defect log's verdict)", *[fmt(last["flag_vs_failure"][t]["f1"]) for t in ts]],
        ["repaired pass@1, whole", *[_pct(whole["pass_at_1_repaired"][t]) for t in ts]],
        [f"repaired pass@1, first {de['after']} tokens", *[_pct(first["pass_at_1_repaired"][t]) for t in ts]],
        ["repaired pass@1, settled", *[_pct(last["pass_at_1_repaired"][t]) for t in ts]],
    ]
    same = de["chosen_as_full"]
    title = (
        f"Deciding after {de['after']} tokens (the editor's repair mode) vs every completion whole: "
        f"{de['prompts']} prompts, {de['decided']} decided early, {de['errors']} failed; "
        f"the chosen row's text as the run's at {same['same']} of {same['same'] + same['different']}"
    )
    if "settled_as_full" in de:  # a summary written before the settled verdict has none
        full = de["settled_as_full"]
        title += (
            f"; settled (the cut completions run on to their ends) as the run's completions at "
            f"{full['same']} of {full['same'] + full['different']}, {de['unsettled']} cut without one "
            "(their early verdict stands in)"
        )
    return {title: (["", *[f"T={t}" for t in ts]], rows)}


def tables(summary: Mapping[str, Any]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The report's tables as (headers, rows), shared by the terminal and the HTML."""
    ts = _ts(summary)
    sc = summary["structural_consistency"]
    out: dict[str, tuple[list[str], list[list[str]]]] = {}
    out["Structural consistency of the mutants (Table IV)"] = (
        ["distance", *sc["bins"]],
        [
            ["count", *map(str, sc["counts"])],
            ["freq. %", *(fmt(x, 2) for x in sc["freq_pct"])],
            ["cumulative %", *(fmt(x, 2) for x in sc["cumulative_pct"])],
        ],
    )
    nr = summary["no_results"]
    out["No results and outliers per T (Table V)"] = (
        ["", "no results (orig + mutants)", *[f"T={t}" for t in ts]],
        [
            [
                "outliers (all completions)",
                f"{nr['original']} + {nr['mutants']}",
                *[str(summary["outliers_per_T"][t]) for t in ts],
            ],
            ["original flagged", "", *[str(summary["original_flagged_per_T"][t]) for t in ts]],
        ],
    )
    b, e, p = summary["bleu"], summary["edit_similarity"], summary["pass_at_1"]
    er = summary["enhancement_ratio"]
    out["Scores before and after repair"] = (
        ["metric", "original", *[f"repaired T={t}" for t in ts]],
        [
            ["BLEU", fmt(b["original"], 2), *[fmt(b["repaired"][t], 2) for t in ts]],
            ["  enhancement ratio", "", *[_ratio(er["bleu"][t]) for t in ts]],
            ["edit similarity", fmt(e["original"]), *[fmt(e["repaired"][t]) for t in ts]],
            ["  enhancement ratio", "", *[_ratio(er["edit_similarity"][t]) for t in ts]],
            *_exact_match_row(summary, ts),
            ["pass@1", _pct(p["original"]), *[_pct(p["repaired"][t]) for t in ts]],
        ],
    )
    fv = summary["flag_vs_failure"]
    if not summary["counts"]["prompts_with_tests"]:
        out["Scores before and after repair"][1].pop()  # pass@1: no tests to run
    else:
        out["Flagged as outlier vs fails its tests (Table VI)"] = (
            ["", *[f"T={t}" for t in ts]],
            [
                [
                    name,
                    *[
                        fmt(fv[t][key]) if key in ("precision", "recall", "f1") else str(fv[t][key])
                        for t in ts
                    ],
                ]
                for name, key in (
                    ("TP", "tp"),
                    ("FP", "fp"),
                    ("FN", "fn"),
                    ("TN", "tn"),
                    ("precision", "precision"),
                    ("recall", "recall"),
                    ("F1", "f1"),
                )
            ]
            if ts
            else [],
        )
    if summary.get("decided_early") and ts:
        out.update(_early_table(summary["decided_early"], ts))
    ps = summary["per_scheme"]
    out["Per scheme"] = (
        [
            "scheme",
            "mutants",
            "dropped",
            "mean dist.",
            "no result",
            "fails tests",
            *[f"outlier rate T={t}" for t in ts],
        ],
        [
            [
                s,
                str(v["mutants"]),
                str(v["dropped"]),
                fmt(v["mean_distance"]),
                str(v["no_results"]),
                _pct(v["failure_rate"]),
                *[_pct(v["outlier_rate_per_T"][t]) for t in ts],
            ]
            for s, v in ps.items()
        ],
    )
    to = summary["test_outcomes"]
    kinds = sorted(set(to["all"]) | set(to["original"]))
    if kinds:
        out["Test outcomes"] = (
            ["completions", *kinds],
            [
                ["original", *[str(to["original"].get(k, 0)) for k in kinds]],
                ["all", *[str(to["all"].get(k, 0)) for k in kinds]],
            ],
        )
    return out


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


# ------------------------------------------------------------------ figures


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")  # no display: render to memory
    matplotlib.rcParams["text.parse_math"] = False  # a label is text: "$x$" in a run's name is no formula
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: small, searchable, selectable
    matplotlib.rcParams["svg.hashsalt"] = "cctest"  # the same figure gives the same file
    import matplotlib.pyplot as plt

    return plt


class Note(str):
    """A figure that cannot be drawn, as the one sentence saying why (the report prints it in
    the figure's place)."""


def why_empty(ax: Any, sentence: str) -> None:
    """Write ``sentence`` across ``ax``, a panel with nothing to draw, so it is not an empty plot."""
    ax.text(
        0.5,
        0.5,
        sentence,
        ha="center",
        va="center",
        wrap=True,
        fontsize=8,
        transform=ax.transAxes,
        gid="cc-why-empty",
    )


def figure_legend(fig: Any, ax: Any, **kwargs: Any) -> None:
    """A legend of ``ax``'s series for the whole figure (outside every panel)."""
    handles, labels = ax.get_legend_handles_labels()
    legend = fig.legend(handles, labels, **kwargs)
    legend.cc_handles = handles  # for _tag_series: a figure's legend keeps no link to its series


def _tag_series(fig: Any) -> None:
    """Name every drawn artist in the SVG: ``cc-series-KIND-N-J`` for the artists of legend entry
    N (its text ``cc-legend-N``), ``cc-data-KIND-J`` for the rest (KIND: line or patch), so a
    reader (the browser test) can tell an empty plot and a legend entry without a series."""
    from matplotlib.container import Container
    from matplotlib.lines import Line2D

    def kind(a: Any) -> str:
        return "line" if isinstance(a, Line2D) else "patch"

    n = j = 0
    legends = [(legend, getattr(legend, "cc_handles", [])) for legend in fig.legends]
    legends += [(ax.get_legend(), ax.get_legend_handles_labels()[0]) for ax in fig.axes if ax.get_legend()]
    for legend, handles in legends:
        texts = legend.get_texts()
        if len(texts) == len(handles):
            for handle, text in zip(handles, texts, strict=True):
                n += 1
                text.set_gid(f"cc-legend-{n}")
                for a in list(handle) if isinstance(handle, Container) else [handle]:
                    j += 1
                    a.set_gid(f"cc-series-{kind(a)}-{n}-{j}")
    for ax in fig.axes:
        for a in [*ax.lines, *ax.patches, *ax.collections]:
            if a.get_gid() is None:
                j += 1
                a.set_gid(f"cc-data-{kind(a)}-{j}")


def _svg(fig: Any) -> str:
    """``fig`` as an inline ``<svg>`` element, its ids prefixed so that several figures share a page."""
    import hashlib
    import re

    _tag_series(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    _plt().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    prefix = "f" + hashlib.sha1(text.encode()).hexdigest()[:8] + "-"
    text = re.sub(r'\bid="', f'id="{prefix}', text)
    text = re.sub(r'(url\(#|href="#)', lambda m: m.group(1) + prefix, text)
    return text


def _num(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def figures(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
    """Figures (title -> inline SVG, or a ``Note`` where there is nothing to draw) for one run, or
    for several side by side; every legend names every run."""
    plt = _plt()
    ts = _ts(runs[0][1])
    n = len(runs)
    width = 0.8 / n
    out: dict[str, str] = {}
    no_t = Note(dropped_note(runs[0][1]) or "No threshold T was evaluated.")

    if not ts:
        out["Outliers per T"] = no_t
    else:
        fig, ax = plt.subplots(figsize=(6.4, 3.4))
        for j, (name, s) in enumerate(runs):
            xs = [i + (j - (n - 1) / 2) * width for i in range(len(ts))]
            ax.bar(
                xs,
                [s["outliers_per_T"][t] for t in ts],
                width,
                color=f"C{j}",
                edgecolor=f"C{j}",  # a bar of 0 is a line, not nothing
                linewidth=1.5,
                label=f"{name}: all completions",
            )
            ax.plot(
                xs,
                [s["original_flagged_per_T"][t] for t in ts],
                "^",
                color="black" if n == 1 else f"C{j}",
                markeredgecolor="black",
                label=f"{name}: original flagged",
            )
        ax.set_xticks(range(len(ts)), [f"T={t}" for t in ts])
        ax.set_ylabel("outliers")
        ax.set_ylim(bottom=0, top=max(1, *(max(s["outliers_per_T"][t] for t in ts) for _, s in runs)) * 1.15)
        ax.set_title("Outliers per threshold T")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        out["Outliers per T"] = _svg(fig)

    tested = any(s["counts"]["prompts_with_tests"] for _, s in runs)
    keys = (("bleu", "BLEU"), ("edit_similarity", "edit similarity")) + (
        (("pass_at_1", "pass@1"),) if tested else ()
    )
    fig, axes = plt.subplots(1, len(keys), figsize=(3.4 * len(keys), 3.3), squeeze=False)
    axes = axes[0]
    for ax, (key, label) in zip(axes, keys, strict=True):
        for j, (name, s) in enumerate(runs):
            if ts:
                vals = [_num(s[key]["repaired"][t]) for t in ts]
                ax.plot(range(len(ts)), vals, "o-", color=f"C{j}", label=f"{name}: repaired")
            ax.axhline(_num(s[key]["original"]), ls="--", color=f"C{j}", label=f"{name}: original")
        ax.set_xticks(range(len(ts)), [f"T={t}" for t in ts])
        ax.set_title(label)
        if key == "pass_at_1":
            ax.set_ylim(-0.02, 1.02)
    # the legend under the panels, where it covers no point
    figure_legend(fig, axes[0], fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4)
    fig.suptitle("Scores before (dashed) and after repair", y=1.04)
    out["Scores before and after repair"] = _svg(fig)

    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    bins = runs[0][1]["structural_consistency"]["bins"]
    for j, (name, s) in enumerate(runs):
        xs = [i + (j - (n - 1) / 2) * width for i in range(len(bins))]
        ax.bar(
            xs,
            s["structural_consistency"]["freq_pct"],
            width,
            color=f"C{j}",
            edgecolor=f"C{j}",
            linewidth=1.5,
            label=name,
        )
    ax.set_xticks(range(len(bins)), bins, fontsize=8)
    ax.set_xlabel("structural distance (pycode-similar based)")
    ax.set_ylabel("% of mutants")
    ax.set_title("Structural consistency of the mutants (Table IV bins)")
    if not any(sum(s["structural_consistency"]["counts"]) for _, s in runs):
        why_empty(ax, "No mutant was made, so there is no distance to show.")
    elif n > 1:
        ax.legend(fontsize=8)
    out["Structural consistency histogram"] = _svg(fig)

    if tested and not ts:
        out["Precision, recall and F1 per T"] = no_t
    elif tested:
        fig, ax = plt.subplots(figsize=(6.4, 3.4))
        drawn = False
        for j, (name, s) in enumerate(runs):
            fv = s["flag_vs_failure"]
            for key, style in (("precision", "o-"), ("recall", "s--"), ("f1", "^:")):
                vals = [_num(fv[t][key]) for t in ts]
                if all(v != v for v in vals):  # NaN: never measured (nothing flagged, or nothing failed)
                    continue
                drawn = True
                ax.plot(range(len(ts)), vals, style, color=f"C{j}", label=f"{name}: {key}")
        ax.set_xticks(range(len(ts)), [f"T={t}" for t in ts])
        ax.set_ylim(0, 1.05)
        ax.set_title("Flagged as outlier vs fails its tests")
        if drawn:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        else:
            why_empty(
                ax,
                "No completion was flagged and none failed its tests, so precision, recall and F1 "
                "are undefined.",
            )
        out["Precision, recall and F1 per T"] = _svg(fig)

    schemes = sorted({sch for _, s in runs for sch in s["per_scheme"]})
    if schemes:
        mid = ts[len(ts) // 2] if ts else None
        panels: list[tuple[str, Callable[[Mapping[str, Any]], Any], str]] = []
        if mid is not None:
            panels.append(
                (
                    f"outlier rate of the scheme's mutants (T={mid})",
                    lambda v: v.get("outlier_rate_per_T", {}).get(mid),
                    f"No mutant's completion was an outlier at T={mid}.",
                )
            )
        if tested:
            panels.append(
                (
                    "share of the scheme's completions failing the tests",
                    lambda v: v.get("failure_rate"),
                    "No mutant's completion failed its tests.",
                )
            )
        if panels:
            fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 3.4), squeeze=False)
            axes = axes[0]
            for ax, (title, get, why) in zip(axes, panels, strict=True):
                shown = False
                for j, (name, s) in enumerate(runs):
                    xs = [i + (j - (n - 1) / 2) * width for i in range(len(schemes))]
                    vals = [_num(get(s["per_scheme"].get(sch, {}))) for sch in schemes]
                    shown = shown or any(v == v and v > 0 for v in vals)
                    ax.bar(xs, vals, width, color=f"C{j}", edgecolor=f"C{j}", linewidth=1.5, label=name)
                ax.set_xticks(range(len(schemes)), schemes, rotation=30, fontsize=8)
                ax.set_title(title, fontsize=10)
                if not shown:
                    why_empty(ax, why)
                elif n > 1:
                    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
            out["Per scheme"] = _svg(fig)
    return out


# ------------------------------------------------------------------ HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem}
h1{font-size:1.5rem} h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .6rem;text-align:right}
th:first-child,td:first-child{text-align:left} th{background:#f4f6f8}
.meta td{text-align:left} .meta td:first-child{white-space:nowrap} img,svg{max-width:100%;height:auto}
figure{margin:.5rem 0} table{max-width:100%} td+td{overflow-wrap:anywhere}
pre{background:#f7f7f7;padding:.5rem;overflow:auto;font-size:.8rem;margin:.2rem 0;max-width:100%;
white-space:pre-wrap;overflow-wrap:anywhere}
.ex{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:.5rem} .ex>div{min-width:0}
.note{color:#555;font-size:.85rem}
tr.differs td{background:#fff4d6} tr.differs td:first-child{font-weight:bold}
"""


def _html_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "", marked: Sequence[bool] = ()
) -> str:
    """A table; the rows whose ``marked`` is true get the class ``differs``."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join(
        ("<tr class='differs'>" if i < len(marked) and marked[i] else "<tr>")
        + "".join(f"<td>{html.escape(str(c))}</td>" for c in r)
        + "</tr>"
        for i, r in enumerate(rows)
    )
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _page(title: str, body: str) -> str:
    head = f'<meta charset="utf-8"><title>{html.escape(title)}</title><style>{_CSS}</style>'
    return f'<!doctype html><html lang="en"><head>{head}</head><body>{body}</body></html>\n'


def examples_threshold(summary: Mapping[str, Any]) -> str | None:
    """The T whose examples the report shows: the one that flags the most original completions
    (the middle one among equals), so examples appear whenever any T flags one.

    >>> flags = {"1": 2, "3": 2, "5": 0}
    >>> examples_threshold({"outliers_per_T": flags, "original_flagged_per_T": flags})
    '3'
    """
    ts = _ts(summary)
    if not ts:
        return None
    flagged = summary.get("original_flagged_per_T", {})
    mid = (len(ts) - 1) / 2
    return max(ts, key=lambda t: (flagged.get(t, 0), -abs(ts.index(t) - mid)))


def examples(records: Sequence[Mapping[str, Any]], t: str, n: int = 5) -> str:
    """A few prompts whose original completion was flagged, with the repaired completion."""
    shown = []
    for r in records:
        comps = r.get("completions") or []
        if not comps or 0 not in r["per_T"][t]["outliers"]:
            continue
        chosen = r["per_T"][t]["chosen"]
        source = comps[chosen]["source"] if chosen is not None else "none"
        tests = r.get("tests") or []

        def outcome(i: int | None, tests: list[Any] = tests) -> str:
            if i is None or i >= len(tests) or tests[i] is None:
                return ""
            return f" · {tests[i]['outcome']}"

        shown.append(
            f"<h3>{html.escape(r['task_id'])}</h3><div class='ex'>"
            f"<div><b>prompt (end)</b><pre>{html.escape(r['prompt'][-600:])}</pre></div>"
            f"<div><b>original completion{outcome(0)}</b><pre>{html.escape(comps[0]['text'])}</pre></div>"
            f"<div><b>repaired ({html.escape(source)}){outcome(chosen)}</b>"
            f"<pre>{html.escape(comps[chosen]['text'] if chosen is not None else '')}</pre></div></div>"
        )
        if len(shown) >= n:
            break
    return "".join(shown) or "<p class='note'>No original completion was flagged at this threshold.</p>"


def write_report(
    run_dir: Path, config: Mapping[str, Any], summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> Path:
    """``report.html`` for one run of any kind: settings, counts, the kind's tables, figures, examples."""
    page = _from_records(run_dir, lambda: report_page(config, summary, records))
    path = run_dir / "report.html"
    write_run_file(path, page)
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
    body.append("<h2>Run</h2>" + _html_table(["setting", "value"], meta_rows, "meta"))
    figs = kind.figures([(str(config.get("model") or config.get("backend")), summary)])
    placed: set[str] = set()
    for title, (headers, rows) in kind.tables(summary).items():
        if rows:
            body.append(f"<h2>{html.escape(title)}</h2>" + _html_table(headers, rows))
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
    return _page(f"{kind.title} report", "".join(body))


def _setting(v: Any) -> str:
    return json.dumps(v) if isinstance(v, (list, dict)) else fmt(v)


def _img(title: str, svg: str) -> str:
    """A figure in the page: the inline SVG, or the sentence of a ``Note``."""
    if isinstance(svg, Note):
        return f"<p class='note'>{html.escape(svg)}</p>"
    return f'<figure class="plot" aria-label="{html.escape(title)}">{svg}</figure>'


def finish_run(run_dir: Path, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> str:
    """Write ``summary.json`` (atomically) and ``report.html`` for a run; returns the terminal report."""
    summary = summarize_run(run_dir, config, records)
    write_run_file(run_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    write_report(run_dir, config, summary, records)
    return _from_records(run_dir, lambda: terminal_report(summary, config))  # type: ignore[no-any-return]


FIGURES_AFTER = {
    "Structural consistency of the mutants (Table IV)": ("Structural consistency histogram",),
    "No results and outliers per T (Table V)": ("Outliers per T",),
    "Scores before and after repair": ("Scores before and after repair",),
    "Flagged as outlier vs fails its tests (Table VI)": ("Precision, recall and F1 per T",),
    "Per scheme": ("Per scheme",),
}


# ------------------------------------------------------------------ comparison


def compare_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
    """Side-by-side rows of the headline numbers of two summaries."""
    ts = [t for t in _ts(a) if t in b["outliers_per_T"]]
    rows = [
        ["prompts", str(a["counts"]["prompts"]), str(b["counts"]["prompts"])],
        [
            "no results (orig + mutants)",
            f"{a['no_results']['original']} + {a['no_results']['mutants']}",
            f"{b['no_results']['original']} + {b['no_results']['mutants']}",
        ],
        [
            "mutants with distance <= 0.1",
            _pct(a["structural_consistency"]["cumulative_pct"][1] / 100),
            _pct(b["structural_consistency"]["cumulative_pct"][1] / 100),
        ],
    ]
    for t in ts:
        rows.append([f"outliers T={t}", str(a["outliers_per_T"][t]), str(b["outliers_per_T"][t])])
    rows.append(["BLEU original", fmt(a["bleu"]["original"], 2), fmt(b["bleu"]["original"], 2)])
    rows += [
        [f"BLEU repaired T={t}", fmt(a["bleu"]["repaired"][t], 2), fmt(b["bleu"]["repaired"][t], 2)]
        for t in ts
    ]
    rows.append(
        ["edit sim. original", fmt(a["edit_similarity"]["original"]), fmt(b["edit_similarity"]["original"])]
    )
    rows += [
        [
            f"edit sim. repaired T={t}",
            fmt(a["edit_similarity"]["repaired"][t]),
            fmt(b["edit_similarity"]["repaired"][t]),
        ]
        for t in ts
    ]
    rows.append(["pass@1 original", _pct(a["pass_at_1"]["original"]), _pct(b["pass_at_1"]["original"])])
    rows += [
        [f"pass@1 repaired T={t}", _pct(a["pass_at_1"]["repaired"][t]), _pct(b["pass_at_1"]["repaired"][t])]
        for t in ts
    ]
    rows += [
        [f"F1 flag vs failure T={t}", fmt(a["flag_vs_failure"][t]["f1"]), fmt(b["flag_vs_failure"][t]["f1"])]
        for t in ts
    ]
    return rows


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
        + _html_table(["", na, nb], cfg_rows, "meta", differ)
    )
    body.append("<h2>Headline numbers</h2>" + _html_table(["", na, nb], kind.compare_rows(sa, sb)))
    for title, svg in kind.figures([(na, sa), (nb, sb)]).items():
        body.append(f"<h2>{html.escape(title)}</h2>" + _img(title, svg))
    path = out_dir / "compare.html"
    make_dir(out_dir)
    write_run_file(path, _page(f"{kind.title} comparison", "".join(body)))
    return path
