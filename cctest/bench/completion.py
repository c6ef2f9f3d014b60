"""The CCTest bench's kind of run (``completion``): the engine's mutants, outliers and repairs over
a dataset, as the summary's tables, figures, examples and the rows that compare two runs.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .kinds import RunKind, Table, model_label
from .metrics import CompletionSummary, summarize, t_key
from .passk import draws_compare_rows, draws_pass_at_k
from .render import Note, figure_legend, fmt, pct, pyplot, ratio, svg_of, why_empty


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
    return [["exact match", pct(em["original"]), *[pct(em["repaired"][t]) for t in ts]]]


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
        ["repaired pass@1, whole", *[pct(whole["pass_at_1_repaired"][t]) for t in ts]],
        [f"repaired pass@1, first {de['after']} tokens", *[pct(first["pass_at_1_repaired"][t]) for t in ts]],
        ["repaired pass@1, settled", *[pct(last["pass_at_1_repaired"][t]) for t in ts]],
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
            ["  enhancement ratio", "", *[ratio(er["bleu"][t]) for t in ts]],
            ["edit similarity", fmt(e["original"]), *[fmt(e["repaired"][t]) for t in ts]],
            ["  enhancement ratio", "", *[ratio(er["edit_similarity"][t]) for t in ts]],
            *_exact_match_row(summary, ts),
            ["pass@1", pct(p["original"]), *[pct(p["repaired"][t]) for t in ts]],
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
                pct(v["failure_rate"]),
                *[pct(v["outlier_rate_per_T"][t]) for t in ts],
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
    drawn = summary.get("pass_at_k")
    if drawn:
        out[f"pass@k ({drawn['samples']} draws per prompt, {drawn['prompts']} tested prompts)"] = (
            ["", "original", *[f"repaired T={t}" for t in ts]],
            [
                [k, pct(v), *[pct(drawn["repaired"].get(t, {}).get(k)) for t in ts]]
                for k, v in drawn["original"].items()
            ],
        )
    return out


def _num(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def figures(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
    """Figures (title -> inline SVG, or a ``Note`` where there is nothing to draw) for one run, or
    for several side by side; every legend names every run."""
    plt = pyplot()
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
        out["Outliers per T"] = svg_of(fig)

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
    out["Scores before and after repair"] = svg_of(fig)

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
    out["Structural consistency histogram"] = svg_of(fig)

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
        out["Precision, recall and F1 per T"] = svg_of(fig)

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
            out["Per scheme"] = svg_of(fig)
    return out


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


FIGURES_AFTER = {
    "Structural consistency of the mutants (Table IV)": ("Structural consistency histogram",),
    "No results and outliers per T (Table V)": ("Outliers per T",),
    "Scores before and after repair": ("Scores before and after repair",),
    "Flagged as outlier vs fails its tests (Table VI)": ("Precision, recall and F1 per T",),
    "Per scheme": ("Per scheme",),
}


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
            pct(a["structural_consistency"]["cumulative_pct"][1] / 100),
            pct(b["structural_consistency"]["cumulative_pct"][1] / 100),
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
    rows.append(["pass@1 original", pct(a["pass_at_1"]["original"]), pct(b["pass_at_1"]["original"])])
    rows += [
        [f"pass@1 repaired T={t}", pct(a["pass_at_1"]["repaired"][t]), pct(b["pass_at_1"]["repaired"][t])]
        for t in ts
    ]
    rows += draws_compare_rows(a, b, ts)  # --samples n: pass@k over the draws
    rows += [
        [f"F1 flag vs failure T={t}", fmt(a["flag_vs_failure"][t]["f1"]), fmt(b["flag_vs_failure"][t]["f1"])]
        for t in ts
    ]
    return rows


class CompletionKind(RunKind):
    """The CCTest bench: the engine's mutants, outliers and repairs over a dataset."""

    name = "completion"

    def summarize(self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> CompletionSummary:
        # Algorithm 1 flags a completion when more than T of its similarities to the others fall
        # below the median; with k mutants a completion has at most k others, so T >= k never fires
        k = int(config.get("k") or 0)
        thresholds = [float(t) for t in config["thresholds"]]
        summary = summarize(records, [t for t in thresholds if t < k])
        drawn = draws_pass_at_k(records, [t_key(t) for t in thresholds if t < k])
        if drawn is not None:  # cctest bench --samples n
            summary["pass_at_k"] = drawn
        dropped = [t_key(t) for t in thresholds if t >= k]
        if dropped:
            summary["thresholds_dropped"] = {"thresholds": dropped, "k": k}
        return summary

    def settings(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
        # one completion per prompt (--samples 1) is every run recorded before --samples was, and
        # mutants chosen without their cost (prefill_budget 0) every run before the budget: listed
        # only otherwise, so such runs report and compare as they did
        unlisted = {"samples": 1, "prefill_budget": 0}
        return {k: v for k, v in config.items() if not (k in unlisted and v == unlisted[k])}

    def notes(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
        note = dropped_note(summary)
        return [note] if note else []

    def empty_table(self, title: str, summary: Mapping[str, Any]) -> str:
        return dropped_note(summary) or super().empty_table(title, summary)

    def headline(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        return (
            f"cctest bench · {config.get('dataset')} · {config.get('backend')} {model_label(config)} · "
            f"k={config.get('k')} · {summary['counts']['prompts']} prompts"
        )

    def tables(self, summary: Mapping[str, Any]) -> dict[str, Table]:
        return tables(summary)

    def figures(self, runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
        return figures(runs)

    figures_after = FIGURES_AFTER

    def examples(
        self, config: Mapping[str, Any], summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
    ) -> str:
        t = examples_threshold(summary)
        if t is None:
            return ""
        return (
            f"<h2>Examples: original completion flagged at T={html.escape(t)}"
            " (the T that flags the most)</h2>" + examples(records, t)
        )

    def compare_rows(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
        return compare_rows(a, b)

    def compare_settings(self, ca: Mapping[str, Any], cb: Mapping[str, Any]) -> list[list[str]]:
        return [
            *super().compare_settings(ca, cb),
            ["dataset", str(ca.get("dataset")), str(cb.get("dataset"))],
            ["k", str(ca.get("k")), str(cb.get("k"))],
        ]
