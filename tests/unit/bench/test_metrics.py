"""Metrics on examples small enough to compute by hand."""

from __future__ import annotations

import json

import pytest

from cctest.bench.metrics import (
    confusion,
    consistency_histogram,
    edit_similarity,
    enhancement_ratio,
    precision_recall_f1,
    summarize,
)

REQUIRED = {
    "structural_consistency",
    "no_results",
    "outliers_per_T",
    "bleu",
    "edit_similarity",
    "enhancement_ratio",
    "pass_at_1",
    "flag_vs_failure",
}


def test_edit_similarity_by_hand() -> None:
    # kitten -> sitting: 3 edits, longer string 7 characters
    assert edit_similarity("kitten", "sitting") == pytest.approx(4 / 7)
    assert edit_similarity("  return x\n", "return x") == 1.0  # surrounding whitespace is ignored
    assert edit_similarity("abc", "") == 0.0
    assert edit_similarity("", "") == 1.0


def test_histogram_bins_are_closed_on_the_right() -> None:
    h = consistency_histogram([0.0, 0.05, 0.06, 0.1, 0.15, 0.2, 0.5, 0.9, 0.95, 1.0])
    assert h["counts"] == [2, 2, 1, 1, 2, 2]
    assert h["freq_pct"] == [20.0, 20.0, 10.0, 10.0, 20.0, 20.0]
    assert h["cumulative_pct"] == [20.0, 40.0, 50.0, 60.0, 80.0, 100.0]
    assert consistency_histogram([])["counts"] == [0] * 6


def test_enhancement_ratio_edge_cases() -> None:
    assert enhancement_ratio(0.4, 0.5) == pytest.approx(0.25)
    assert enhancement_ratio(0.5, 0.4) == pytest.approx(-0.2)
    assert enhancement_ratio(0.0, 0.0) == 0.0
    assert enhancement_ratio(0.0, 0.3) is None  # undefined, not infinite
    assert enhancement_ratio(None, 0.3) is None


def test_precision_recall_f1_by_hand() -> None:
    # the paper's Table VI, T=9: TP 689, FN 104, precision 0.861 => FP = 689/0.861 - 689 ≈ 111
    r = precision_recall_f1(689, 111, 104)
    assert round(r["precision"], 3) == 0.861 and round(r["recall"], 3) == 0.869
    assert confusion([(True, True), (True, False), (False, True), (False, False), (True, True)]) == {
        "tp": 2,
        "fp": 1,
        "fn": 1,
        "tn": 1,
        "precision": 2 / 3,
        "recall": 2 / 3,
        "f1": pytest.approx(2 / 3),
    }
    assert precision_recall_f1(0, 0, 2) == {"precision": None, "recall": 0.0, "f1": None}
    assert precision_recall_f1(0, 3, 0) == {"precision": 0.0, "recall": None, "f1": None}


def _c(text: str, ok: bool = True) -> dict:
    return {"source": "x", "text": text, "is_result": ok, "eligible": ok, "error": None}


def _t(outcome: str) -> dict:
    return {"outcome": outcome, "detail": "", "seconds": 0.1, "isolation": {}}


RECORDS = [
    {
        "task_id": "A",
        "ground_truth": "return a + b",
        "has_tests": True,
        "error": None,
        "mutants": [
            {"scheme": "REP_R", "structural_distance": 0.05},
            {"scheme": "IRR", "structural_distance": 0.1},
            {"scheme": "REP_R", "structural_distance": 0.0},
        ],
        "dropped": [{"scheme": "GRA_R", "structural_distance": 0.95}],
        "completions": [_c("return a + b"), _c("return a - b"), _c("return a + b"), _c("", ok=False)],
        "per_T": {"1": {"outliers": [1], "chosen": 0}, "3": {"outliers": [], "chosen": 0}},
        "tests": [_t("passed"), _t("assertion_failure"), _t("passed"), None],
    },
    {
        "task_id": "B",
        "ground_truth": "y",
        "has_tests": True,
        "error": None,
        "mutants": [
            {"scheme": "REL_R", "structural_distance": 0.2},
            {"scheme": "REL_R", "structural_distance": 0.21},
        ],
        "dropped": [],
        "completions": [_c("x"), _c("y"), _c("y")],
        "per_T": {"1": {"outliers": [0], "chosen": 1}, "3": {"outliers": [], "chosen": 0}},
        "tests": [_t("runtime_error"), _t("passed"), _t("passed")],
    },
]


def test_summary_on_hand_built_records() -> None:
    s = summarize(RECORDS, [1, 3])
    assert REQUIRED <= set(s)
    json.loads(json.dumps(s))  # plain JSON
    assert s["structural_consistency"]["counts"] == [2, 1, 0, 1, 1, 1]
    assert s["no_results"] == {"original": 0, "mutants": 1, "total": 1}
    assert s["outliers_per_T"] == {"1": 2, "3": 0}
    assert s["original_flagged_per_T"] == {"1": 1, "3": 0}
    # A's original passes, B's fails; repaired at T=1 both pass, at T=3 nothing changes
    assert s["pass_at_1"] == {"original": 0.5, "repaired": {"1": 1.0, "3": 0.5}}
    # edit similarity: A 1.0, B "x" vs "y" 0.0 -> 0.5; repaired at T=1: 1.0 and 1.0
    assert s["edit_similarity"]["original"] == 0.5
    assert s["edit_similarity"]["repaired"] == {"1": 1.0, "3": 0.5}
    assert s["enhancement_ratio"]["edit_similarity"] == {"1": 1.0, "3": 0.0}
    # repaired at T=1 reproduces every reference exactly: BLEU 100, and above the original's
    assert s["bleu"]["repaired"]["1"] == pytest.approx(100.0)
    assert s["bleu"]["original"] < 100.0 and s["enhancement_ratio"]["bleu"]["3"] == 0.0
    # population: the 6 completions with a result; failing ones: A1 and B0, both flagged at T=1
    assert s["flag_vs_failure"]["1"] == {
        "tp": 2,
        "fp": 0,
        "fn": 0,
        "tn": 4,
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
    }
    assert s["flag_vs_failure"]["3"] == {
        "tp": 0,
        "fp": 0,
        "fn": 2,
        "tn": 4,
        "precision": None,
        "recall": 0.0,
        "f1": None,
    }
    assert s["test_outcomes"]["original"] == {"passed": 1, "runtime_error": 1}
    rep = s["per_scheme"]["REP_R"]
    assert (rep["mutants"], rep["no_results"], rep["outliers_per_T"]["1"], rep["failure_rate"]) == (
        2,
        1,
        1,
        1.0,
    )
    assert s["per_scheme"]["GRA_R"]["dropped"] == 1
    assert s["per_scheme"]["REL_R"]["outlier_rate_per_T"] == {"1": 0.0, "3": 0.0}


def test_engine_errors_count_as_no_result_and_failure() -> None:
    err = {
        "task_id": "C",
        "ground_truth": "z",
        "has_tests": True,
        "error": "backend down",
        "mutants": [],
        "dropped": [],
        "completions": [],
        "per_T": {"1": {"outliers": [], "chosen": None}},
        "tests": None,
    }
    s = summarize([err], [1])
    assert s["no_results"]["original"] == 1
    assert s["pass_at_1"] == {"original": 0.0, "repaired": {"1": 0.0}}
    assert s["counts"]["engine_errors"] == 1
    assert s["flag_vs_failure"]["1"]["tp"] == 0


def test_doctests() -> None:
    import doctest

    from cctest.bench import metrics

    result = doctest.testmod(metrics)
    assert result.attempted >= 4 and result.failed == 0


def test_decided_early_judges_early_flags_by_the_whole_completions_tests() -> None:
    """``--decide-after``: the flags and the choice made on the first tokens, over the same
    prompts, each completion judged by its whole text's tests (the run's)."""
    early_a = {
        "after": 8,
        "error": None,
        "decided_after": 8,
        "cut": [1, 3],
        "chosen": 2,
        "chosen_as_full": True,
    }
    early_a["per_T"] = {"1": {"outliers": [2], "chosen": 2}, "3": {"outliers": [1], "chosen": 1}}
    # A's cut completions run on to their ends: other outliers, the early choice kept
    early_a["settled"] = {"error": None, "as_full": True}
    early_a["settled"]["per_T"] = {
        "1": {"outliers": [1], "chosen": 2},
        "3": {"outliers": [1, 2], "chosen": 1},
    }
    # B decided nothing (every row ended within 8 tokens): no settled entry, its early verdict stands
    early_b = {
        "after": 8,
        "error": None,
        "decided_after": None,
        "cut": [],
        "chosen": 1,
        "chosen_as_full": False,
    }
    early_b["per_T"] = {"1": {"outliers": [0], "chosen": 1}, "3": {"outliers": [], "chosen": 0}}
    records = [{**RECORDS[0], "early": early_a}, {**RECORDS[1], "early": early_b}]
    s = summarize(records, [1, 3])
    de = s["decided_early"]
    assert (de["after"], de["prompts"], de["errors"], de["decided"]) == (8, 2, 0, 1)
    assert de["chosen_as_full"] == {"same": 1, "different": 1}
    # the whole completions' verdicts are the run's own
    assert de["every_row"]["flag_vs_failure"] == s["flag_vs_failure"]
    assert de["every_row"]["pass_at_1_repaired"] == s["pass_at_1"]["repaired"]
    # early, T=1: A flags row 2 (passes: FP) and misses row 1 (fails: FN); B flags row 0 (fails: TP)
    assert {k: de["early"]["flag_vs_failure"]["1"][k] for k in ("tp", "fp", "fn", "tn")} == {
        "tp": 1,
        "fp": 1,
        "fn": 1,
        "tn": 3,
    }
    # repaired, T=1: A's row 2 passes, B's row 1 passes; T=3: A's row 1 fails, B's row 0 fails
    assert de["early"]["pass_at_1_repaired"] == {"1": 1.0, "3": 0.0}
    assert de["early"]["outliers_per_T"] == {"1": 2, "3": 1}
    assert de["early"]["original_flagged_per_T"] == {"1": 1, "3": 0}
    # settled, T=1: A flags row 1 (fails: TP), B row 0 (fails: TP); T=3: A flags rows 1 (TP) and
    # 2 (passes: FP), B flags nothing (its row 0 fails: FN)
    settled = de["settled"]["flag_vs_failure"]
    assert {k: settled["1"][k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 2, "fp": 0, "fn": 0, "tn": 4}
    assert {k: settled["3"][k] for k in ("tp", "fp", "fn", "tn")} == {"tp": 1, "fp": 1, "fn": 1, "tn": 3}
    assert de["settled"]["outliers_per_T"] == {"1": 2, "3": 2}
    assert de["settled"]["original_flagged_per_T"] == {"1": 1, "3": 0}
    # the choice is the early one: the answer the editor got
    assert de["settled"]["pass_at_1_repaired"] == de["early"]["pass_at_1_repaired"]
    assert (de["settled_as_full"], de["unsettled"]) == ({"same": 1, "different": 0}, 0)
    # rows cut but no settled verdict (a settling that failed, or none): counted, the early stands in
    unsettled = {k: v for k, v in early_a.items() if k != "settled"}
    for early in ({**early_a, "settled": {"error": "the model ran out of memory"}}, unsettled):
        records[0] = {**RECORDS[0], "early": early}
        de = summarize(records, [1, 3])["decided_early"]
        assert (de["settled_as_full"], de["unsettled"]) == ({"same": 0, "different": 0}, 1)
        assert de["settled"] == de["early"]
    # a failed early request: out of the comparison, counted
    records[1] = {**RECORDS[1], "early": {"after": 8, "error": "the model ran out of memory"}}
    de = summarize(records, [1, 3])["decided_early"]
    assert (de["prompts"], de["errors"]) == (1, 1)
    assert "decided_early" not in summarize(RECORDS, [1, 3])
