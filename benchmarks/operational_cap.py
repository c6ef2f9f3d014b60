"""Figure: the wall time per model query of ``cctest bench operational`` for a description of
100, 300 and 1,000 words (the cap), on a quiet machine and beside busy processes.

A description's search measures every paraphrase it makes (up to 1,000 per task) by every
metric, so the cost per query grows with the description's length; this is what a user with a
long task description waits for. The model here is the ``rules`` backend (its answer costs
microseconds), so the figure is cctest's own cost: paraphrasing, measuring, judging, recording.
The descriptions are drawn from two vocabularies (short words, and long words that bring a
description near the 10,000-character cap at 1,000 words), seeded.

Each run is ``cctest bench operational --budget Q`` on one task (``--answers-cache none``), timed
from the process's start to its end (the interpreter's start and imports included, so the figure
is an upper bound). ``--busy N`` runs the same beside N processes that spin on the CPU.

    .venv/bin/python benchmarks/operational_cap.py
    .venv/bin/python benchmarks/operational_cap.py --busy 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _busy import busy  # noqa: E402

SHORT = (
    "return the total of two given numbers and report that result as one value when both inputs "
    "are whole numbers give back their plain sum otherwise keep the same order and explain nothing"
).split()
LONG = (
    "implementation function arguments description calculate consecutive integers whenever "
    "particular representation determine otherwise respective numbers resulting sequence temporary "
    "characters remaining corresponding collection appropriate structure element the a of to and is"
).split()


def task(words: int, vocab: list[str], seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    head = "Return the sum of a and b."
    body = " ".join(rng.choice(vocab) for _ in range(words - len(head.split())))
    return {
        "task_id": "add",
        "description": f"{head} {body}",
        "name": "add",
        "args": ["a", "b"],
        "reference": "def add(a, b):\n    return a + b\n",
        "tests": ["assert add(2, 3) == 5"],
    }


def timed_run(spec: dict[str, object], budget: int, work: Path) -> tuple[float, int]:
    """Seconds for the whole command, and the queries it made."""
    tasks = work / "tasks.jsonl"
    tasks.write_text(json.dumps(spec) + "\n", encoding="utf-8")
    out = work / f"run-{time.monotonic_ns()}"
    command = [sys.executable, "-m", "cctest", "bench", "operational", "--tasks", str(tasks)]
    command += ["--backend", "rules", "--budget", str(budget), "--answers-cache", "none"]
    command += ["--no-progress", "--out", str(out)]
    t0 = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    record = json.loads((out / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
    return seconds, int(record["query_count"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--words", default="100,300,1000")
    parser.add_argument("--budget", type=int, default=4, help="model queries per task (default 4)")
    parser.add_argument("--seeds", default="11,12", help="description seeds (default 11,12)")
    parser.add_argument("--busy", type=int, default=0, help="processes spinning beside the runs")
    args = parser.parse_args()
    with busy(args.busy):
        print(f"budget {args.budget}, beside {args.busy} busy processes, {os.cpu_count()} CPUs")
        heads = ("words", "vocab", "chars", "seed", "queries", "seconds", "s/query")
        print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (6, 6, 6, 5, 8, 8, 8), strict=True)))
        with tempfile.TemporaryDirectory() as tmp:
            for words in (int(w) for w in args.words.split(",")):
                for name, vocab in (("short", SHORT), ("long", LONG)):
                    for seed in (int(s) for s in args.seeds.split(",")):
                        spec = task(words, vocab, seed)
                        seconds, queries = timed_run(spec, args.budget, Path(tmp))
                        chars = len(str(spec["description"]))
                        print(
                            f"{words:>6} {name:>6} {chars:>6} {seed:>5} {queries:>8} "
                            f"{seconds:>8.1f} {seconds / queries:>8.2f}",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
