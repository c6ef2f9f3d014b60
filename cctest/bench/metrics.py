"""The numbers of the CCTest paper's Tables IV–VI, computed from a run's per-prompt records.

Everything here is a pure function of the records in ``results.jsonl`` (see ``runner.py``), so a
report can be rebuilt, and two runs compared, without touching a model.

Definitions (see docs/bench.md for the reasoning):

* **Structural consistency** (Table IV): the structural distance of every mutant generated, kept or
  dropped by the distance bound, binned as [0, 0.05], (0.05, 0.1], (0.1, 0.15], (0.15, 0.2],
  (0.2, 0.9], (0.9, 1.0].
* **No results / outliers per T** (Table V): completions (original and mutants) that were empty or
  failed; completions whose count of below-median similarities exceeds T.
* **BLEU** (sacrebleu's corpus BLEU, 0–100) and **edit similarity** (mean of RapidFuzz's normalised
  Levenshtein similarity, 0–1) of the original completion and of the repaired one against the
  ground truth, both stripped of surrounding whitespace; a prompt with no result scores against "".
* **Exact match**: the share of prompts with a ground truth whose original (repaired) completion,
  stripped, equals it (the score of single-line infilling, with edit similarity).
* **Enhancement ratio** r = (s′ − s) / s; when s = 0 it is 0 if s′ = 0 too and undefined (null)
  otherwise.
* **pass@1**: the share of prompts with tests whose original (repaired) completion passes them; a
  prompt with no completion counts as failed.
* **Flag vs failure** (Table VI, tests in place of manual labels): the population is every
  completion, original or mutant, that gave a result, on a prompt with tests; a completion is
  *positive* when flagged as an outlier at T, and *truly defective* when the original prompt
  followed by its de-mutated completion fails the tests. Precision, recall and F1 are the usual
  ones; a ratio with a zero denominator is null.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict

from rapidfuzz.distance import Levenshtein

# (low, high, label); the first bin is closed on both sides, the others only on the right
STRUCTURAL_BINS: tuple[tuple[float, float, str], ...] = (
    (0.0, 0.05, "[0, 0.05]"),
    (0.05, 0.1, "(0.05, 0.1]"),
    (0.1, 0.15, "(0.1, 0.15]"),
    (0.15, 0.2, "(0.15, 0.2]"),
    (0.2, 0.9, "(0.2, 0.9]"),
    (0.9, 1.0, "(0.9, 1.0]"),
)


def t_key(t: float) -> str:
    """The JSON key of a threshold: ``1`` for 1.0, ``2.5`` for 2.5."""
    return f"{t:g}"


def structural_bin(distance: float) -> int:
    """Index of the Table IV bin holding ``distance``.

    >>> [structural_bin(d) for d in (0, 0.05, 0.0501, 0.1, 0.9, 1.0)]
    [0, 0, 1, 1, 4, 5]
    """
    for i, (_low, high, _label) in enumerate(STRUCTURAL_BINS):
        if distance <= high:
            return i
    return len(STRUCTURAL_BINS) - 1  # distances are in [0, 1]; anything above lands in the last bin


class Counts(TypedDict):
    """How many of each thing a run's records hold (``CompletionSummary["counts"]``)."""

    prompts: int
    prompts_with_ground_truth: int
    prompts_with_tests: int
    engine_errors: int
    completions: int
    mutants: int
    dropped_mutants: int


class Scores(TypedDict):
    """A score of the original completions and of the repaired ones per T (its key)."""

    original: float | None
    repaired: dict[str, float | None]


class CompletionSummary(TypedDict):
    """``summary.json`` of a CCTest bench run (the completion kind): the paper's tables, then
    cctest's own (the keys in the order ``summarize`` writes them)."""

    structural_consistency: dict[str, Any]
    no_results: dict[str, int]
    outliers_per_T: dict[str, int]
    bleu: Scores
    edit_similarity: Scores
    exact_match: Scores
    enhancement_ratio: dict[str, dict[str, float | None]]
    pass_at_1: Scores
    flag_vs_failure: dict[str, dict[str, Any]]
    original_flagged_per_T: dict[str, int]
    test_outcomes: dict[str, dict[str, int]]
    counts: Counts
    timings_ms: dict[str, float | None]
    per_scheme: dict[str, Any]
    decided_early: NotRequired[dict[str, Any]]  # runs that decided after the first tokens
    pass_at_k: NotRequired[dict[str, Any]]  # --samples n (the completion kind adds it)
    thresholds_dropped: NotRequired[dict[str, Any]]  # thresholds T >= k, which never fire


def consistency_histogram(distances: Iterable[float]) -> dict[str, Any]:
    """Counts, frequencies and cumulative frequencies (in %) over the Table IV bins."""
    counts = [0] * len(STRUCTURAL_BINS)
    for d in distances:
        counts[structural_bin(d)] += 1
    n = sum(counts)
    freq = [100.0 * c / n if n else 0.0 for c in counts]
    cumulative = []
    running = 0.0
    for f in freq:
        running += f
        cumulative.append(running)
    return {
        "bins": [label for *_, label in STRUCTURAL_BINS],
        "counts": counts,
        "freq_pct": [round(f, 2) for f in freq],
        "cumulative_pct": [round(c, 2) for c in cumulative],
        "n": n,
    }


def edit_similarity(a: str, b: str) -> float:
    """Normalised Levenshtein similarity, 1 − distance / max(len), of the stripped texts.

    >>> edit_similarity("return a + b", "return a - b")
    0.9166666666666666
    """
    return float(Levenshtein.normalized_similarity(a.strip(), b.strip()))


def exact_match(a: str, b: str) -> float:
    """1.0 when the stripped texts are equal, else 0.0.

    >>> exact_match("  return a + b ", "return a + b"), exact_match("return a", "return b")
    (1.0, 0.0)
    """
    return float(a.strip() == b.strip())


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float | None:
    """sacrebleu's corpus BLEU (0–100) of stripped texts; None for an empty corpus."""
    if not hypotheses:
        return None
    import sacrebleu

    return float(
        sacrebleu.corpus_bleu([h.strip() for h in hypotheses], [[r.strip() for r in references]]).score
    )


def enhancement_ratio(before: float | None, after: float | None) -> float | None:
    """r = (after − before) / before; 0 when both are 0, None when only ``before`` is 0.

    >>> enhancement_ratio(0.5, 0.75), enhancement_ratio(0.0, 0.0), enhancement_ratio(0.0, 0.2)
    (0.5, 0.0, None)
    """
    if before is None or after is None:
        return None
    if before == 0:
        return 0.0 if after == 0 else None
    return (after - before) / before


def precision_recall_f1(tp: int, fp: int, fn: int) -> dict[str, float | None]:
    """The three ratios; a ratio whose denominator is 0 is None.

    >>> {k: round(v, 4) for k, v in precision_recall_f1(3, 1, 2).items()}
    {'precision': 0.75, 'recall': 0.6, 'f1': 0.6667}
    """
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    if precision is None or recall is None or precision + recall == 0:
        f1 = None if precision is None or recall is None else 0.0
    else:
        f1 = 2 * precision * recall / (precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1}


def confusion(pairs: Iterable[tuple[bool, bool]]) -> dict[str, Any]:
    """Confusion counts and ratios of (flagged, failed) pairs."""
    c = Counter((bool(f), bool(d)) for f, d in pairs)
    tp, fp, fn, tn = c[(True, True)], c[(True, False)], c[(False, True)], c[(False, False)]
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, **precision_recall_f1(tp, fp, fn)}


def _mean(xs: Sequence[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def _text(record: Mapping[str, Any], index: int | None) -> str:
    if index is None:
        return ""
    c = record["completions"][index]
    return c["text"] if c["is_result"] else ""


def _failed(record: Mapping[str, Any], index: int | None) -> bool:
    """Whether the completion at ``index`` fails the prompt's tests (no completion fails)."""
    if index is None:
        return True
    outcome = record["tests"][index] if record.get("tests") else None
    return outcome is None or outcome["outcome"] != "passed"


def flag_pairs(record: Mapping[str, Any], verdict: Mapping[str, Any]) -> list[tuple[bool, bool]]:
    """(flagged, failed) for each completion of a tested ``record`` that gave a result, flagged
    by ``verdict`` (one T's entry of a ``per_T``: its ``outliers``)."""
    return [
        (i in verdict["outliers"], _failed(record, i))
        for i, c in enumerate(record.get("completions") or [])
        if c["is_result"]
    ]


def summarize(records: Sequence[Mapping[str, Any]], thresholds: Sequence[float]) -> CompletionSummary:
    """summary.json: the paper's tables for one run, plus per-scheme breakdowns."""
    ts = [t_key(t) for t in thresholds]
    ok = [r for r in records if not r.get("error")]
    distances: list[float] = []
    no_original = 0
    no_mutants = 0
    outliers = {t: 0 for t in ts}
    original_flagged = {t: 0 for t in ts}
    for r in records:
        distances += [m["structural_distance"] for m in r.get("mutants", []) + r.get("dropped", [])]
        comps = r.get("completions") or []
        if not comps or not comps[0]["is_result"]:
            no_original += 1
        no_mutants += sum(1 for c in comps[1:] if not c["is_result"])
        for t in ts:
            flagged = r["per_T"][t]["outliers"] if comps else []
            outliers[t] += len(flagged)
            original_flagged[t] += 0 in flagged

    # scores against the ground truth
    with_gt = [r for r in records if r.get("ground_truth") is not None]
    refs = [r["ground_truth"] for r in with_gt]
    orig_texts = [_text(r, 0) if r.get("completions") else "" for r in with_gt]
    bleu_orig = corpus_bleu(orig_texts, refs)
    es_orig = _mean([edit_similarity(h, g) for h, g in zip(orig_texts, refs, strict=True)])
    em_orig = _mean([exact_match(h, g) for h, g in zip(orig_texts, refs, strict=True)])
    bleu_rep: dict[str, float | None] = {}
    es_rep: dict[str, float | None] = {}
    em_rep: dict[str, float | None] = {}
    for t in ts:
        texts = [_text(r, r["per_T"][t]["chosen"]) if r.get("completions") else "" for r in with_gt]
        bleu_rep[t] = corpus_bleu(texts, refs)
        es_rep[t] = _mean([edit_similarity(h, g) for h, g in zip(texts, refs, strict=True)])
        em_rep[t] = _mean([exact_match(h, g) for h, g in zip(texts, refs, strict=True)])

    # execution against the tests
    tested = [r for r in records if r.get("has_tests")]
    pass_orig = _mean([0.0 if _failed(r, 0 if r.get("completions") else None) else 1.0 for r in tested])
    pass_rep = {
        t: _mean(
            [
                0.0 if _failed(r, r["per_T"][t]["chosen"] if r.get("completions") else None) else 1.0
                for r in tested
            ]
        )
        for t in ts
    }
    flag_vs_failure = {t: confusion(p for r in tested for p in flag_pairs(r, r["per_T"][t])) for t in ts}
    outcomes_all: Counter[str] = Counter()
    outcomes_original: Counter[str] = Counter()
    for r in tested:
        for i, o in enumerate(r.get("tests") or []):
            if o is not None:
                outcomes_all[o["outcome"]] += 1
                if i == 0:
                    outcomes_original[o["outcome"]] += 1

    summary: CompletionSummary = {
        "structural_consistency": consistency_histogram(distances),
        "no_results": {"original": no_original, "mutants": no_mutants, "total": no_original + no_mutants},
        "outliers_per_T": outliers,
        "bleu": {"original": bleu_orig, "repaired": bleu_rep},
        "edit_similarity": {"original": es_orig, "repaired": es_rep},
        "exact_match": {"original": em_orig, "repaired": em_rep},
        "enhancement_ratio": {
            "bleu": {t: enhancement_ratio(bleu_orig, bleu_rep[t]) for t in ts},
            "edit_similarity": {t: enhancement_ratio(es_orig, es_rep[t]) for t in ts},
        },
        "pass_at_1": {"original": pass_orig, "repaired": pass_rep},
        "flag_vs_failure": flag_vs_failure,
        # beyond the required keys
        "original_flagged_per_T": original_flagged,
        "test_outcomes": {"all": dict(outcomes_all), "original": dict(outcomes_original)},
        "counts": {
            "prompts": len(records),
            "prompts_with_ground_truth": len(with_gt),
            "prompts_with_tests": len(tested),
            "engine_errors": len(records) - len(ok),
            "completions": sum(len(r.get("completions") or []) for r in records),
            "mutants": sum(len(r.get("mutants", [])) for r in records),
            "dropped_mutants": sum(len(r.get("dropped", [])) for r in records),
        },
        "timings_ms": _timings(records),
        "per_scheme": per_scheme(records, ts),
    }
    if early := decided_early(records, thresholds):
        summary["decided_early"] = early
    return summary


def decided_early(records: Sequence[Mapping[str, Any]], thresholds: Sequence[float]) -> dict[str, Any] | None:
    """``cctest bench --decide-after N``: the verdicts of the editor's repair mode, made on every
    completion's first N tokens, against those made on the whole completions, over the same
    prompts (those whose early request succeeded with the same mutants). A completion is judged by
    its whole text's tests either way (the decision stops a row; the chosen row is finished
    alone, the same text the run has for it), and the settled verdict beside them: the outliers
    among the completions the decision cut run on to their ends, with the early choice (the
    verdict for a defect log, made after the early answer). None: no record has such a verdict."""
    mine = [r for r in records if isinstance(r.get("early"), Mapping) and r["early"].get("error") is None]
    if not mine:
        return None
    bare = [{k: v for k, v in r.items() if k != "early"} for r in mine]
    whole = summarize(bare, thresholds)
    early = [{**b, "per_T": per_t_of(r, "early")} for b, r in zip(bare, mine, strict=True)]
    first = summarize(early, thresholds)
    # the verdict for a defect log: the outliers among the whole completions the decision cut, the
    # choice the early one; a prompt without a settled entry had nothing cut (its early verdict was
    # on whole completions already); one that cut rows but has no settled verdict (its settling
    # failed, the backend could not run them on, or the run predates settling) keeps its early
    # verdict, counted as ``unsettled``
    settled = [{**b, "per_T": per_t_of(r, "settled")} for b, r in zip(bare, mine, strict=True)]
    last = summarize(settled, thresholds)

    def figures(s: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "outliers_per_T": s["outliers_per_T"],
            "original_flagged_per_T": s["original_flagged_per_T"],
            "pass_at_1_repaired": s["pass_at_1"]["repaired"],
            "flag_vs_failure": s["flag_vs_failure"],
        }

    chosen = [r["early"].get("chosen_as_full") for r in mine]
    as_full = [_settled(r["early"]).get("as_full") for r in mine if _settled(r["early"]) is not r["early"]]
    return {
        "after": mine[0]["early"]["after"],
        "prompts": len(mine),
        "errors": sum(1 for r in records if isinstance(r.get("early"), Mapping) and r["early"].get("error")),
        "decided": sum(1 for r in mine if r["early"].get("decided_after") is not None),
        "chosen_as_full": {"same": chosen.count(True), "different": chosen.count(False)},
        "pass_at_1_original": whole["pass_at_1"]["original"],
        "every_row": figures(whole),
        "early": figures(first),
        "settled": figures(last),
        "settled_as_full": {"same": as_full.count(True), "different": as_full.count(False)},
        "unsettled": sum(1 for r in mine if r["early"].get("cut") and _settled(r["early"]) is r["early"]),
    }


def _settled(early: Mapping[str, Any]) -> Mapping[str, Any]:
    """An early record's settled entry; the early record itself where there is none (nothing was
    cut) or it failed."""
    settled = early.get("settled")
    return settled if isinstance(settled, Mapping) and settled.get("error") is None else early


VERDICTS = ("whole", "early", "settled")


def per_t_of(record: Mapping[str, Any], verdict: str) -> Mapping[str, Any] | None:
    """A record's ``per_T`` for one of ``VERDICTS``: ``whole`` (every completion whole), ``early``
    (``--decide-after``: the answer's, on the first tokens) or ``settled`` (the defect log's, as
    ``decided_early`` counts it); None when the record has no such verdict."""
    if verdict == "whole":
        return record.get("per_T") if not record.get("error") else None
    early = record.get("early")
    if not isinstance(early, Mapping) or early.get("error") is not None:
        return None
    return (_settled(early) if verdict == "settled" else early)["per_T"]


def _timings(records: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Mean time per prompt of the model (``complete``) and of the rest of the engine."""
    timed = [r["timings_ms"] for r in records if r.get("timings_ms")]
    return {
        "mean_model_ms": _mean([t.get("complete", 0.0) for t in timed]),
        "mean_engine_ms": _mean([t.get("engine", 0.0) for t in timed]),
    }


def per_scheme(records: Sequence[Mapping[str, Any]], ts: Sequence[str]) -> dict[str, Any]:
    """For each mutation scheme: its mutants' distances, no-results, outlier rate and defects per T."""
    acc: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "distances": [],
            "dropped": 0,
            "no_results": 0,
            "results": 0,
            "outliers": Counter(),
            "pairs": defaultdict(list),
            "failed": 0,
            "tested": 0,
        }
    )
    for r in records:
        for m in r.get("dropped", []):
            a = acc[m["scheme"]]
            a["distances"].append(m["structural_distance"])
            a["dropped"] += 1
        comps = r.get("completions") or []
        for i, m in enumerate(r.get("mutants", []), start=1):
            a = acc[m["scheme"]]
            a["distances"].append(m["structural_distance"])
            if i >= len(comps) or not comps[i]["is_result"]:
                a["no_results"] += 1
                continue
            a["results"] += 1
            for t in ts:
                flagged = i in r["per_T"][t]["outliers"]
                a["outliers"][t] += flagged
                if r.get("has_tests"):
                    a["pairs"][t].append((flagged, _failed(r, i)))
            if r.get("has_tests"):
                a["tested"] += 1
                a["failed"] += _failed(r, i)
    out = {}
    for scheme in sorted(acc):
        a = acc[scheme]
        out[scheme] = {
            "mutants": len(a["distances"]),
            "dropped": a["dropped"],
            "mean_distance": _mean(a["distances"]),
            "no_results": a["no_results"],
            "outliers_per_T": {t: a["outliers"][t] for t in ts},
            "outlier_rate_per_T": {
                t: (a["outliers"][t] / a["results"] if a["results"] else None) for t in ts
            },
            "failure_rate": a["failed"] / a["tested"] if a["tested"] else None,
            "flag_vs_failure": {t: confusion(a["pairs"][t]) for t in ts} if a["tested"] else {},
        }
    return out
