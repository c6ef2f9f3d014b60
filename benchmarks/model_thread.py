"""What a second thread holding PyTorch CPU threads costs the model's calls, as ratios, in one run.

    python benchmarks/model_thread.py                       # 6 positions, the bundled model
    python benchmarks/model_thread.py --models bundled,llama135m --positions 4

Every call of a local model runs on one thread (``cctest/backends/_worker.py``). At seeded random
cursor positions inside stdlib function bodies (``mutant_supply.stdlib_positions``) a repair
request (``Engine.run``, k = 10, boundary stops off, every call cold) is timed, interleaved:

* alone: the model's thread is the only one in the process that has run torch work;
* beside a team: another thread has run one parallel torch operation and is still alive, so its
  OpenMP (libgomp) team lives on: the state in which a request ran when each call went to
  whichever thread of asyncio's pool was free, or beside torch work on the main thread.

The helper thread ends after each measurement, and its team with it, so the two states alternate.
Printed: per position the median of ``--repeats`` requests in each state and their ratio, then the
median and p90 of the ratio. Wall time (the CPU time of idle OpenMP threads is the point).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import below_one, model_backends, percentile  # noqa: E402

from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.types import Prompt  # noqa: E402


class TorchTeam:
    """A live thread that has run a parallel torch operation (its OpenMP team stays while it lives)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import torch

        torch.ones(2_000_000).add_(1)  # large enough to run on every intra-op thread
        self._ready.set()
        self._done.wait()

    def __enter__(self) -> TorchTeam:
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def timed(engine: Engine, prompt: Prompt, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        asyncio.run(engine.run(prompt))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=6)
    ap.add_argument("--models", default="bundled", help="bundled, llama135m, llama1b or model directories")
    ap.add_argument("--seed", type=int, default=20231116)
    ap.add_argument("--repeats", type=int, default=3, help="requests per state and position (median)")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    args = ap.parse_args(argv)
    if below_one(args, "--positions", "--repeats", "--max-new-tokens"):
        return 2
    positions = stdlib_positions(args.positions, random.Random(args.seed))
    settings = Settings(mutants=10, max_new_tokens=args.max_new_tokens, threads=args.threads)
    for name, backend in model_backends(args.models, args.max_new_tokens, args.threads, reuse_prefix=False):
        engine = Engine(backend, settings)
        asyncio.run(engine.run(Prompt(text="def f(x):\n    return x\n")))  # warm-up
        print(
            f"\n{name}: {backend.describe()}, {args.threads} thread(s), {args.repeats} request(s) per state"
        )
        ratios = []
        for where, before, after in positions:
            prompt = Prompt(text=before, suffix=after)
            alone = timed(engine, prompt, args.repeats)
            with TorchTeam():
                beside = timed(engine, prompt, args.repeats)
            ratios.append(beside / alone)
            print(
                f"  {where:<26} alone {alone * 1000:7.0f} ms  beside a team {beside * 1000:7.0f} ms"
                f"  {ratios[-1]:5.2f}x"
            )
        print(
            f"ratio beside / alone ({name}): median {statistics.median(ratios):.2f}x "
            f"p90 {percentile(ratios, 90):.2f}x over {len(ratios)} positions"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
