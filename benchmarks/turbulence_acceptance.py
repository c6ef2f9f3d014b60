"""Acceptance: the Turbulence benchmark's own model solutions, given as every answer, must be judged
correct: CorrSc 1.0 and the class perfect success for every template whose files are complete.

Runs every question of a clone of the benchmark (``--benchmark DIR``: the clone, or its
``Benchmark/`` folder) as ``cctest bench turbulence`` runs it by default: the benchmark's parameter
rows (seed "1", shuffled), the harness's per-question rules, Pylint's error checks, instance by
instance skipping of a broken instance. A question that lacks one of its files is named and left
out; the others run. Each instance's answer is its filled model solution in a fenced block, the
shape a chat model answers in. Prints per template its CorrSc, class and skipped instances, then
the figure: complete templates at CorrSc 1.0 out of those judged, and how many instances of each
were judged (M; an instance whose model solution fails its own checks is skipped and named).

Time limits are the default's, relative to the model solution's own time on each call
(``--input-limits reference``; ``fixed`` for the absolute 1 s CPU / 2 s wall-clock pair).
``--busy N`` runs N CPU-bound processes beside the whole check, as a loaded machine.

    .venv/bin/python benchmarks/turbulence_acceptance.py --benchmark ~/src/Turbulence-Benchmark
    .venv/bin/python benchmarks/turbulence_acceptance.py --benchmark DIR --instances 20 --inputs 10
    .venv/bin/python benchmarks/turbulence_acceptance.py --benchmark DIR --templates 45 --busy 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _busy import busy  # noqa: E402

from cctest.suites import turbulence_metrics as tm  # noqa: E402
from cctest.suites.turbulence import (  # noqa: E402
    DEFAULT_PARAM_SEED,
    benchmark_root,
    build_tasks,
    instance_of,
    load_benchmark,
)
from cctest.tasks import OracleSettings, judge_many  # noqa: E402
from cctest.tasks.oracle import with_reference_times  # noqa: E402
from cctest.tasks.run import check_tasks  # noqa: E402


def acceptance(
    benchmark: str | Path,
    *,
    instances: int = 100,
    inputs: int = 100,
    workers: int = 2,
    only: list[str] | None = None,
    input_limits: str = "reference",
) -> dict[str, object]:
    """Judge every complete template's model solutions as answers; returns ``corrsc``, ``classes``
    (template -> class), ``judged`` (template -> instances judged, M), ``failures``, ``missing``
    and ``skipped_templates`` (template -> why), and ``skipped_instances`` (instance -> why)."""
    root = benchmark_root(benchmark)
    left_out: dict[str, str] = {}
    templates = load_benchmark(root, only, missing=left_out)
    missing = dict(left_out)
    tasks = build_tasks(templates, instances, seed=DEFAULT_PARAM_SEED, errors=left_out)
    oracle = OracleSettings(inputs=inputs, static_check="pylint", input_limits=input_limits)
    measured: dict[str, dict[str, object]] = {}
    broken = check_tasks(tasks, oracle, workers, skip_broken=instance_of, measured=measured)
    sound = [
        with_reference_times(t, measured[t.task_id]) if t.task_id in measured else t
        for t in tasks
        if t.task_id not in broken
    ]
    answers = [(t, f"```python\n{t.reference}\n```", None) for t in sound]
    judged = judge_many(answers, oracle, workers=workers)
    outcomes: dict[str, dict[int, list[bool]]] = {}
    details: dict[str, list[str]] = {}
    for t, j in zip(sound, judged, strict=True):
        template = str(t.meta["template"])
        outcomes.setdefault(template, {})[int(t.meta["instance"])] = [j.passed]
        if not j.passed:
            details.setdefault(template, []).append(f"{t.task_id}: {j.category}: {j.detail}")
    return {
        "corrsc": {t: tm.corrsc(o) for t, o in outcomes.items()},
        "classes": {t: tm.classify(o) for t, o in outcomes.items()},
        "judged": {t: len(o) for t, o in outcomes.items()},
        "failures": details,
        "missing": missing,
        "skipped_templates": {t: w for t, w in left_out.items() if t not in missing},
        "skipped_instances": broken,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", required=True, help="a clone of the Turbulence benchmark")
    ap.add_argument("--templates", default=None, help="comma-separated question numbers (default all)")
    ap.add_argument("--instances", type=int, default=100, help="instances per template (default 100)")
    ap.add_argument("--inputs", type=int, default=100, help="fuzz inputs per answer (default 100)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--input-limits", choices=("reference", "fixed"), default="reference")
    ap.add_argument("--busy", type=int, default=0, help="CPU-bound processes beside the check")
    args = ap.parse_args()
    only = [x.strip() for x in args.templates.split(",")] if args.templates else None
    start = time.monotonic()
    with busy(args.busy) as procs:
        r = acceptance(
            args.benchmark,
            instances=args.instances,
            inputs=args.inputs,
            workers=args.workers,
            only=only,
            input_limits=args.input_limits,
        )
        loaded = all(p.poll() is None for p in procs)  # the load was there throughout
    left_out: dict[str, str] = {**r["missing"], **r["skipped_templates"]}  # type: ignore[dict-item]
    for t, why in left_out.items():
        print(f"{t}: left out; {why}")
    corrsc: dict[str, float | None] = r["corrsc"]  # type: ignore[assignment]
    classes: dict[str, str | None] = r["classes"]  # type: ignore[assignment]
    skipped: dict[str, str] = r["skipped_instances"]  # type: ignore[assignment]
    failures: dict[str, list[str]] = r["failures"]  # type: ignore[assignment]
    judged: dict[str, int] = r["judged"]  # type: ignore[assignment]
    for t, score in corrsc.items():
        mine = [k for k in skipped if k.startswith(t + "/")]
        print(
            f"{t}: CorrSc {score if score is None else round(score, 4)}, {classes[t]}, "
            f"{judged[t]} instances judged, {len(mine)} skipped"
        )
        for k in mine[:3]:
            print(f"    skipped {k}: {skipped[k][:160]}")
        for line in failures.get(t, [])[:3]:
            print(f"    failed {line[:200]}")
    perfect = sum(1 for s in corrsc.values() if s == 1.0)
    print(
        f"{perfect} of {len(corrsc)} complete templates at CorrSc 1.0 (perfect success), "
        f"{args.instances} instances and {args.inputs} inputs each, {args.input_limits} limits, "
        f"{args.busy} busy processes beside it{'' if loaded else ' (one ended early)'}, "
        f"{time.monotonic() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
