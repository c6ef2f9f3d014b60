"""Figure: queries per task and wall time of ``cctest bench operational``, and the answer cache's
saving on a re-run with a doubled budget.

Runs, in one process and one after the other, on the same tasks and a fresh answer cache:

1. ``--budget B`` (default 20) into a new run directory, with cctest's earlier search
   (``--per-order 50 --protect-stop-words``: the README's figure was measured with them);
2. ``--budget 2B`` into another, with the same cache: only the queries the first run did not make
   reach the model.

Prints, per run: tasks, queries per task, model queries made (not answered from the cache), wall
time; and the second run's wall time against a third, uncached run with the doubled budget.

    .venv/bin/python benchmarks/operational_cache.py                      # 20 HumanEval tasks, bundled model
    .venv/bin/python benchmarks/operational_cache.py --limit 5 --budget 10
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cctest.cli import main as cctest  # noqa: E402


def run(out: Path, budget: int, cache: str, limit: int, extra: list[str]) -> tuple[dict, float]:
    argv = ["bench", "operational", "--dataset", "humaneval", "--limit", str(limit), "--budget", str(budget)]
    argv += ["--per-order", "50", "--protect-stop-words"]  # the search the README's figure measured
    argv += ["--answers-cache", cache, "--no-progress", "--out", str(out), *extra]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        assert cctest(argv) == 0
    return json.loads((out / "summary.json").read_text()), time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--budget", type=int, default=20)
    args, extra = p.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        cache = str(t / "answers.sqlite")
        s1, w1 = run(t / "first", args.budget, cache, args.limit, extra)
        s2, w2 = run(t / "doubled", 2 * args.budget, cache, args.limit, extra)
        s3, w3 = run(t / "uncached", 2 * args.budget, "none", args.limit, extra)
    print(f"{'run':<28} {'tasks':>5} {'queries/task':>12} {'model queries':>13} {'wall s':>8}")
    for name, s, w in (
        (f"budget {args.budget}", s1, w1),
        (f"budget {2 * args.budget}, cached", s2, w2),
        (f"budget {2 * args.budget}, no cache", s3, w3),
    ):
        made = s["queries"]["total"] - s["queries"]["cached"]
        print(f"{name:<28} {s['counts']['tasks']:>5} {s['queries_per_task']:>12.2f} {made:>13} {w:>8.1f}")
    print("status (first run):", s1["status"])
    print(f"doubled budget: cached run {w2:.1f} s vs uncached {w3:.1f} s: {w3 / w2:.2f}x faster")


if __name__ == "__main__":
    main()
