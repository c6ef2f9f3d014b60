"""Turbulence's metrics over a run's records, and CCTest's outlier detection across a neighbourhood.

Pure functions over plain data. An *outcome* table maps each template to its instances, and each
instance to the list of its rounds' results (``True`` passed, ``False`` failed; ``verdicts`` reads
them from a record's rounds, a backend error as ``False``: a wrong answer, as the paper counts
every round it asked):

* ``corrsc`` — Definition 1: correct answers / (M × N), M the instances judged (a skipped instance
  is none of them) and N the rounds each was asked.
* ``classify`` — the four classes: perfect success (CorrSc = 1), perfect failure (0), consistent
  failure (some instance failed in every one of its rounds, and some answer passed), random
  failure (the rest: failures, but no instance failed in every round).
* ``histogram`` — CorrSc in the bins of the paper's Figure 3 and the benchmark's published
  ``Classified_CCScores.json``: 0, (0, 0.1), [0.1, 0.2), ..., [0.9, 1.0), 1.
* ``range_patterns`` — the paper's pattern check on a parameter row: two integer parameters
  ``p <= q`` next to each other read as a range; is it ``bounds equal``, ``lower bound 0`` or
  ``bounds one apart``?
* ``normalise`` and ``outlier_scores`` — beyond the paper: an answer's code with the instance's
  parameter values replaced by ``$0``, ``$1``, ...; then, per round, the normalised answers of a
  neighbourhood go through the Levenshtein matrix and Algorithm 1 (``cctest.detect``), and the
  flagged answers are compared with the oracle's verdicts (precision and recall of "outlier" for
  "failed the oracle").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..detect import (
    DEFAULT_RELATIVE_THRESHOLD,
    absolute_threshold,
    outlier_counts,
    outliers_from_counts,
    similarity_matrix,
)

CLASSES = ("perfect_success", "perfect_failure", "consistent_failure", "random_failure")
BINS = ("0.0", "(0.0, 0.1)") + tuple(f"[{i / 10:.1f}, {(i + 1) / 10:.1f})" for i in range(1, 10)) + ("1.0",)
PATTERNS = ("bounds_equal", "lower_bound_0", "bounds_one_apart")

Outcomes = Mapping[Any, Sequence[bool]]  # instance -> its rounds' verdicts


def verdicts(rounds: Sequence[Mapping[str, Any]]) -> list[bool]:
    """A record's rounds as verdicts: passed, or not; a backend error (no category) is a wrong
    answer, so that CorrSc's denominator stays every round asked (M × N).

    >>> verdicts([{"category": "passed"}, {"category": None, "error": "HTTP 400"}, {"category": "x"}])
    [True, False, False]
    """
    return [a.get("category") == "passed" for a in rounds]


def corrsc(instances: Outcomes) -> float | None:
    """Correct answers over every round of every instance (M × N); ``None`` with no round at all.

    >>> corrsc({0: [True, True], 1: [True, False]})
    0.75
    >>> corrsc({0: []}) is None
    True
    """
    judged = [v for rounds in instances.values() for v in rounds]
    return sum(judged) / len(judged) if judged else None


def classify(instances: Outcomes) -> str | None:
    """The template's class among ``CLASSES`` (``None`` with no answer).

    >>> classify({0: [True] * 5, 1: [True] * 5})
    'perfect_success'
    >>> classify({0: [False] * 5, 1: [False] * 5})
    'perfect_failure'
    >>> classify({0: [True] * 5, 1: [False] * 5})     # blocked on instance 1
    'consistent_failure'
    >>> classify({0: [True] * 5, 1: [False, True, False, False, False]})
    'random_failure'
    """
    score = corrsc(instances)
    if score is None:
        return None
    if score == 1:
        return "perfect_success"
    if score == 0:
        return "perfect_failure"
    if any(rounds and not any(rounds) for rounds in instances.values()):
        return "consistent_failure"
    return "random_failure"


def bin_of(score: float) -> str:
    """The Figure 3 bin of a CorrSc.

    >>> [bin_of(x) for x in (0, 0.05, 0.1, 0.95, 0.999, 1)]
    ['0.0', '(0.0, 0.1)', '[0.1, 0.2)', '[0.9, 1.0)', '[0.9, 1.0)', '1.0']
    """
    if score <= 0:
        return BINS[0]
    if score >= 1:
        return BINS[-1]
    if score < 0.1:
        return BINS[1]
    return BINS[1 + min(9, int(round(score * 10, 9)))]


def histogram(scores: Mapping[str, float | None]) -> dict[str, int]:
    """Templates per bin (templates without answers are left out).

    >>> h = histogram({"Q1": 1.0, "Q2": 0.0, "Q3": 0.93, "Q4": None})
    >>> h["1.0"], h["0.0"], h["[0.9, 1.0)"], sum(h.values())
    (1, 1, 1, 3)
    """
    out = dict.fromkeys(BINS, 0)
    for s in scores.values():
        if s is not None:
            out[bin_of(s)] += 1
    return out


def classes(outcomes: Mapping[str, Outcomes]) -> dict[str, Any]:
    """Counts of the four classes and the templates in each.

    >>> classes({"Q1": {0: [True]}, "Q2": {0: [True], 1: [False]}})["counts"]
    {'perfect_success': 1, 'perfect_failure': 0, 'consistent_failure': 1, 'random_failure': 0}
    """
    members: dict[str, list[str]] = {c: [] for c in CLASSES}
    for template, instances in outcomes.items():
        c = classify(instances)
        if c is not None:
            members[c].append(template)
    return {"counts": {c: len(m) for c, m in members.items()}, "templates": members}


def range_patterns(params: Sequence[Any]) -> list[str]:
    """Which of the paper's range patterns a parameter row shows (adjacent integers p <= q).

    >>> range_patterns([0, 0])
    ['bounds_equal', 'lower_bound_0']
    >>> range_patterns([4, 5]), range_patterns([3, 9]), range_patterns(["a", "b"]), range_patterns([7])
    (['bounds_one_apart'], [], [], [])
    """
    found: set[str] = set()
    for p, q in zip(params, params[1:], strict=False):
        if not (isinstance(p, int) and isinstance(q, int)) or isinstance(p, bool) or isinstance(q, bool):
            continue
        if p > q:
            continue
        if p == q:
            found.add("bounds_equal")
        if p == 0:
            found.add("lower_bound_0")
        if q == p + 1:
            found.add("bounds_one_apart")
    return [x for x in PATTERNS if x in found]


def failing_params(instances: Outcomes, params: Mapping[Any, Sequence[Any]]) -> dict[str, Any]:
    """The parameter rows of the instances that failed in some round (with how many rounds), and
    per pattern its share among those rows against its share among all rows.

    >>> r = failing_params({0: [False, False], 1: [True, True], 2: [True, False]},
    ...                    {0: [3, 3], 1: [2, 9], 2: [0, 5]})
    >>> [(f["instance"], f["params"], f["failed_rounds"], f["rounds"]) for f in r["failing"]]
    [(0, [3, 3], 2, 2), (2, [0, 5], 1, 2)]
    >>> r["patterns"]["bounds_equal"]
    {'failing': 1, 'failing_share': 0.5, 'all_share': 0.3333333333333333}
    """
    failing = [
        {
            "instance": i,
            "params": list(params[i]),
            "failed_rounds": rounds.count(False),
            "rounds": len(rounds),
        }
        for i, rounds in instances.items()
        if False in rounds
    ]
    judged = [i for i, rounds in instances.items() if rounds]
    patterns: dict[str, dict[str, Any]] = {}
    for pat in PATTERNS:
        in_failing = sum(pat in range_patterns(f["params"]) for f in failing)
        in_all = sum(pat in range_patterns(params[i]) for i in judged)
        patterns[pat] = {
            "failing": in_failing,
            "failing_share": in_failing / len(failing) if failing else None,
            "all_share": in_all / len(judged) if judged else None,
        }
    return {"failing": failing, "patterns": patterns}


# -- beyond the paper: CCTest's outlier detection across a neighbourhood ----------------------------


def normalise(code: str, params: Sequence[Any]) -> str:
    """``code`` with the instance's parameter values replaced by ``$0``, ``$1``, ...: integers
    as whole numbers, strings where they are quoted (longer values first).

    >>> normalise("def f(lst):\\n    return lst[10:11 + 1]", [10, 11])
    'def f(lst):\\n    return lst[$0:$1 + 1]'
    >>> print(normalise("s.replace('a', 'b')", ["a", "b"]))
    s.replace('$0', '$1')
    """
    order = sorted(range(len(params)), key=lambda i: -len(str(params[i])))
    for i in order:
        v = params[i]
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            code = re.sub(rf"(?<![\w.$]){re.escape(str(v))}(?![\w.])", f"${i}", code)
        elif isinstance(v, str) and v:
            code = code.replace(f"'{v}'", f"'${i}'").replace(f'"{v}"', f'"${i}"')
    return code


def outlier_scores(
    answers: Sequence[tuple[str | None, bool]], relative: float = DEFAULT_RELATIVE_THRESHOLD
) -> list[bool]:
    """Algorithm 1 over one round's normalised answers of a neighbourhood (``None``: no answer,
    left out); returns per answer whether it is flagged as an outlier.

    >>> same = ("return lst[$0:$1 + 1]", True)
    >>> outlier_scores([same] * 5 + [("while True: pass", False)])
    [False, False, False, False, False, True]
    """
    texts = [a or "" for a, _ in answers]
    valid = [a is not None and a != "" for a, _ in answers]
    n = sum(valid)
    if n < 3:
        return [False] * len(answers)
    counts = outlier_counts(similarity_matrix(texts, valid), valid)
    flagged = set(outliers_from_counts(counts, absolute_threshold(relative, n)))
    return [i in flagged for i in range(len(answers))]


def precision_recall(flags: Sequence[bool], failed: Sequence[bool]) -> dict[str, Any]:
    """Precision and recall of "outlier" as a predictor of "failed the oracle".

    >>> precision_recall([True, True, False, False], [True, False, True, False])
    {'flagged': 2, 'failed': 2, 'true_positives': 1, 'precision': 0.5, 'recall': 0.5}
    """
    tp = sum(f and x for f, x in zip(flags, failed, strict=True))
    nf, nx = sum(flags), sum(failed)
    return {
        "flagged": nf,
        "failed": nx,
        "true_positives": tp,
        "precision": tp / nf if nf else None,
        "recall": tp / nx if nx else None,
    }
