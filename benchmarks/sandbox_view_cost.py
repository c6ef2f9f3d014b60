"""Figure: what the sandbox's private filesystem view (bubblewrap) costs per sample.

Runs the same HumanEval programs (prompt + canonical solution + tests) through
``cctest.bench.sandbox.run_program`` with the private view and without it (the fallback every
machine without bubblewrap gets: the other layers only), interleaved sample by sample so a
background load hits both alike. Prints the median wall time per sample of each and their ratio.

    .venv/bin/python benchmarks/sandbox_view_cost.py              # 20 programs, 2 rounds
    .venv/bin/python benchmarks/sandbox_view_cost.py --programs 40 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cctest.bench import sandbox  # noqa: E402
from cctest.bench.datasets import load_humaneval  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    bwrap = sandbox.bubblewrap()
    if bwrap is None:
        print("bubblewrap cannot run here: there is no private view to measure.")
        return 0
    tasks = load_humaneval().tasks[: args.programs]
    # HumanEval tasks all have a ground truth and tests
    programs = [
        sandbox.check_program(t.prompt, t.ground_truth or "", t.tests or "", t.entry_point) for t in tasks
    ]
    times: dict[str, list[float]] = {"private view": [], "no view": []}
    outcomes: dict[str, set[str]] = {"private view": set(), "no view": set()}
    for round_ in range(args.rounds):
        for i, program in enumerate(programs):
            order = ["private view", "no view"] if (i + round_) % 2 == 0 else ["no view", "private view"]
            for way in order:
                sandbox._probed = (bwrap if way == "private view" else None,)
                start = time.perf_counter()
                result = sandbox.run_program(program)
                times[way].append(time.perf_counter() - start)
                outcomes[way].add(f"{result.outcome} ({result.isolation.get('filesystem')})")
    sandbox._probed = (bwrap,)
    for way, ts in times.items():
        print(f"{way:13s} median {statistics.median(ts) * 1000:7.1f} ms per sample  {sorted(outcomes[way])}")
    ratio = statistics.median(times["private view"]) / statistics.median(times["no view"])
    print(f"ratio (private view / no view): {ratio:.2f}x over {len(times['no view'])} samples each")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
