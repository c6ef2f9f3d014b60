"""``cctest bench --samples n``: more draws of each prompt, for pass@k.

At a temperature above 0 each prompt is asked n times (in the same model call: the engine's
variants of each draw, seeded as the backend seeds a batch's rows, so a re-run draws the same);
the record's own completions are the first draw, each further one is an entry of its ``draws``:
its original completion and the completion repair chose at each T (``draw``), and once tested,
whether each passed the task's tests (``judge_draws``). ``passk.draws_pass_at_k`` turns a run's
records into pass@1/10/100 (those ≤ n) for the original and the repaired completions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import repair
from ..detect import outliers_from_counts
from .datasets import Problem
from .metrics import t_key
from .sandbox import Limits, check_program, run_many, unique

# the most draws per prompt ``--samples`` takes: each draw of a batch's prompts is a row of one
# model call, with its variants, so N multiplies what one call holds; pass@k goes up to k = 100
# (Chen et al. drew 200 per HumanEval problem)
MAX_SAMPLES = 1000


def draw(result: Any, thresholds: Sequence[float]) -> dict[str, Any]:
    """One more draw of a prompt (an ``EngineResult``, or the exception that ended it): its
    original completion and the one repair chose at each T (None: no completion)."""
    from ..engine import eligible_mask

    if isinstance(result, Exception):
        return {"error": f"{type(result).__name__}: {result}", "original": None, "repaired": {}}
    texts = [c.text if c.is_result else None for c in result.completions]
    matrix = [list(row) for row in result.similarity]
    counts = list(result.verdict.counts)
    eligible = eligible_mask(result.mutants, result.completions)
    repaired: dict[str, str | None] = {}
    for t in thresholds:  # as the run decides its record's own (``runner.decide``)
        chosen = repair.choose(matrix, outliers_from_counts(counts, t), eligible)
        repaired[t_key(t)] = texts[chosen] if chosen is not None else None
    return {"error": None, "original": texts[0] if texts else None, "repaired": repaired}


def judge_draws(task: Problem, draws: Sequence[dict[str, Any]], limits: Limits, workers: int) -> None:
    """Run each draw's original and repaired completions on ``task``'s tests (each distinct text
    once) and add ``passed`` (``original``, ``repaired`` per T) to every draw."""
    texts = unique(
        t for d in draws for t in [d.get("original"), *(d.get("repaired") or {}).values()] if t is not None
    )
    programs = {
        t: check_program(task.prompt, t + task.suffix, task.tests or "", task.entry_point) for t in texts
    }
    distinct = unique(programs.values())
    results = dict(zip(distinct, run_many(distinct, limits, workers=workers), strict=True))
    ok = {t: results[program].passed for t, program in programs.items()}

    def passed(text: str | None) -> bool:
        return text is not None and ok.get(text, False)

    for d in draws:
        d["passed"] = {
            "original": passed(d.get("original")),
            "repaired": {t: passed(x) for t, x in (d.get("repaired") or {}).items()},
        }
