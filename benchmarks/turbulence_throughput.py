"""Figure: ``cctest bench turbulence``'s judging throughput, question instances judged per minute
with 100 fuzz inputs each, beside the same instances judged on their fixed tests only.

The answers are the built-in templates' model solutions for their first ``--instances``
instances, in the shape chat models answer (a fenced block): correct answers are the costly case,
every fuzz input runs. Each answer is judged by ``judge_many`` (parse, pyflakes, one sandboxed
process running the fixed tests and the inputs) with ``--workers`` processes at a time. The two
settings are interleaved round by round, so a background load hits both alike; prints instances
per minute for each and the ratio (the cost of the 100 inputs).

    .venv/bin/python benchmarks/turbulence_throughput.py                 # 3 instances per template, 2 rounds
    .venv/bin/python benchmarks/turbulence_throughput.py --instances 10 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cctest.suites.turbulence import BUILTIN, build_tasks, load_benchmark  # noqa: E402
from cctest.tasks import OracleSettings, judge_many  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=3, help="instances per template (default 3)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--inputs", type=int, default=100)
    args = ap.parse_args()
    tasks = build_tasks(load_benchmark(BUILTIN), args.instances)
    rates: dict[str, list[float]] = {"fixed tests + fuzz inputs": [], "fixed tests only": []}
    for r in range(args.rounds):
        for label, inputs in (("fixed tests + fuzz inputs", args.inputs), ("fixed tests only", 0)):
            # a comment per round and setting, so no answer is deduplicated against another run's
            items = [(t, f"```python\n# {r} {inputs}\n{t.reference}```\n", None) for t in tasks]
            start = time.perf_counter()
            judged = judge_many(items, OracleSettings(inputs=inputs, seed=r), workers=args.workers)
            seconds = time.perf_counter() - start
            assert all(j.category == "passed" for j in judged), [
                j.detail for j in judged if j.category != "passed"
            ]
            rates[label].append(60 * len(items) / seconds)
    n, per = len(tasks), args.instances
    print(f"{n} instances ({per} per template), {args.workers} workers, {args.rounds} rounds")
    med = {k: statistics.median(v) for k, v in rates.items()}
    for k, v in med.items():
        print(f"  {k:28s} {v:8.1f} instances judged per minute")
    ratio = med["fixed tests only"] / med["fixed tests + fuzz inputs"]
    print(f"  ratio (fixed only / with {args.inputs} inputs): {ratio:.2f}x")


if __name__ == "__main__":
    main()
