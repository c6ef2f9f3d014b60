"""Figure: the task oracle's throughput, answers checked per second with 100 inputs each, ONE
sandboxed process per answer (what ``cctest.tasks.judge_many`` does) vs one process per input.

Both ways run the same driver program in the same sandbox (``cctest.bench.sandbox``, every
containment layer the machine allows), with the same number of worker processes, on the same
answers: correct solutions of the three tasks in ``tests/data/tasks/small.jsonl`` in the shape
chat models answer (a fenced block), each made distinct by a comment so none is deduplicated.
Correct answers are the costly case for the one-process way (no early stop: every input runs).

* **one process per answer**: ``judge_many``: parse, pyflakes, then one process runs the fixed
  tests and all ``--inputs`` generated inputs against the reference;
* **one process per input**: the same checks, but each generated input in a process of its own
  (the fixed tests run in the first one), the way a harness that starts a program per test
  would do it.

The two are interleaved round by round, so a background load that changes during the run hits
both alike. Prints answers per second for each and the ratio.

    .venv/bin/python benchmarks/oracle_throughput.py                  # 3 rounds
    .venv/bin/python benchmarks/oracle_throughput.py --rounds 1 --per-input-answers 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cctest.bench.sandbox import run_many  # noqa: E402
from cctest.tasks import OracleSettings, Task, load_tasks  # noqa: E402
from cctest.tasks.oracle import OUTPUT_BYTES, driver_program, interpret, judge_many, prejudge  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "tasks" / "small.jsonl"
SOLUTIONS = {
    "add": "def add(a, b):\n    return a + b\n",
    "mean": "def mean(xs):\n    return round(sum(xs) / len(xs), 2)\n",
    "slice": "def middle(xs):\n    return xs[2:6]\n",
}


def answers(tasks: list[Task], n: int, tag: str) -> list[tuple[Task, str, str | None]]:
    """``n`` distinct chat-shaped correct answers, cycling over the tasks."""
    out: list[tuple[Task, str, str | None]] = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        code = SOLUTIONS[task.task_id]
        out.append((task, f"Here it is:\n\n```python\n# {tag} answer {i}\n{code}```\n", None))
    return out


def per_input(items: list[tuple[Task, str, str | None]], settings: OracleSettings, workers: int) -> int:
    """Judge each answer with one sandboxed process per generated input; returns the processes run."""
    programs = []
    for task, answer, prompt in items:
        code = prejudge(task, answer, prompt)
        assert isinstance(code, str), code
        for i in range(settings.inputs):
            # input i alone: the seeds differ per input exactly as in one process; fixed tests once
            one = OracleSettings(
                inputs=1,
                seed=settings.seed * 1_000_003 + i,
                input_cpu_seconds=settings.input_cpu_seconds,
                input_wall_seconds=settings.input_wall_seconds,
                limits=settings.limits,
            )
            single = task if i == 0 else task.replace(tests=())
            programs.append((driver_program(single, code, one), code))
    runs = run_many([p for p, _ in programs], settings.limits, workers=workers, output_bytes=OUTPUT_BYTES)
    for run, (_, code) in zip(runs, programs, strict=True):
        judgement = interpret(run, code)[0]
        assert judgement.passed, judgement
    return len(programs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inputs", type=int, default=100)
    ap.add_argument("--answers", type=int, default=24, help="answers per round, one process per answer")
    ap.add_argument(
        "--per-input-answers", type=int, default=2, help="answers per round, one process per input"
    )
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    tasks = load_tasks(DATA)
    settings = OracleSettings(inputs=args.inputs)
    one_rates, per_rates = [], []
    for r in range(args.rounds):
        items = answers(tasks, args.answers, f"one-{r}")
        start = time.perf_counter()
        judgements = judge_many(items, settings, workers=args.workers)
        one = time.perf_counter() - start
        assert all(j.passed and j.inputs_passed + j.inputs_skipped == args.inputs for j in judgements)
        one_rates.append(len(items) / one)

        items = answers(tasks, args.per_input_answers, f"per-{r}")
        start = time.perf_counter()
        processes = per_input(items, settings, args.workers)
        per = time.perf_counter() - start
        per_rates.append(len(items) / per)
        print(
            f"round {r + 1}: one process per answer {one_rates[-1]:.2f} answers/s "
            f"({len(judgements)} answers, {one:.1f} s); one process per input {per_rates[-1]:.3f} answers/s "
            f"({len(items)} answers, {processes} processes, {per:.1f} s)",
            flush=True,
        )
    a, b = statistics.median(one_rates), statistics.median(per_rates)
    print(
        f"\n{args.inputs} inputs per answer, {args.workers} workers: one process per answer "
        f"{a:.2f} answers/s, one process per input {b:.3f} answers/s: {a / b:.1f}x "
        f"(median of {args.rounds} rounds)"
    )


if __name__ == "__main__":
    main()
