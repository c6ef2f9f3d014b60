"""What reusing the previous request's prefix cache saves while typing, in one run.

    python benchmarks/keystroke_reuse.py                          # 3 positions, both models
    python benchmarks/keystroke_reuse.py --positions 1 --models bundled --keystrokes 3

Seeded random cursor positions inside function bodies of standard-library modules (the sample of
``benchmarks/mutant_supply.py``). At each position the next ``--keystrokes`` characters of the
real file are typed one at a time: the prompt grows by a character per keystroke, and the code
after what is typed stays the suffix (typing inserts before it). A first request at the position
itself fills the cache (another file's prefix was there before); then, for every keystroke,
interleaved and in alternating order:

* reuse: one ``Engine.run`` (k mutants, detection, repair, as the editor's repair mode waits for
  it) with the backend keeping the previous request's shared-prefix cache;
* no reuse: the same request, every prefix prefilled from scratch;
* plain: one ``generate`` of the prompt alone (the same model, token budget and threads, filled
  in before the suffix where the model has a FIM template), without reuse;
* plain+reuse: the same with reuse (monitor mode's first call, which reuses too).

Only the reuse requests and plain+reuse read or write the kept cache; both keep the prompt's
tokens but its last, so each finds the previous keystroke's prefix. Boundary stops are off (every
row writes ``--max-new-tokens`` unless the model ends it). Printed: per position the wall times
and ratios of each keystroke, then the median and p90 over every keystroke of reuse / no reuse,
reuse / plain, reuse / plain+reuse and plain+reuse / plain (wall clock and this process's CPU
time), the prefix tokens the reuse requests took from the cache, and how many keystrokes gave
reuse the same repaired completion as no reuse.

Models: ``bundled``, ``llama135m`` (a random-weight model of SmolLM-135M's shape, see
``repair_latency.py``) or a model directory.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import model_backends, percentile  # noqa: E402

from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine, EngineResult  # noqa: E402
from cctest.types import Prompt  # noqa: E402

T = TypeVar("T")


@dataclass
class Keystroke:
    reuse: tuple[float, float]  # wall, CPU seconds
    fresh: tuple[float, float]
    plain: tuple[float, float]  # a plain completion without reuse
    plain_reuse: tuple[float, float]  # and with it (monitor mode's first call)
    same: bool  # reuse and no reuse repaired to the same completion
    reused: int  # the reuse request's prefix tokens taken from the previous request's cache
    run: int  # and those it ran through the model

    def ratio(self, side: str, over: str, clock: int) -> float:
        return float(getattr(self, side)[clock] / getattr(self, over)[clock])


def _timed(run: Callable[..., T], *args: object, **kwargs: object) -> tuple[tuple[float, float], T]:
    """Wall and CPU seconds of ``run(*args, **kwargs)``, and what it returned."""
    t, cpu = time.perf_counter(), time.process_time()
    got = run(*args, **kwargs)
    return (time.perf_counter() - t, time.process_time() - cpu), got


def _request(engine: Engine, prompt: Prompt) -> EngineResult:
    return asyncio.run(engine.run(prompt))


def measure(
    backend: HFBackend, settings: Settings, positions: Sequence[tuple[str, str, str]], keystrokes: int
) -> list[Keystroke]:
    reuse_backend = backend.with_options(reuse_prefix=True)
    reuse = Engine(reuse_backend, settings)
    fresh_backend = backend.with_options(reuse_prefix=False)
    fresh = Engine(fresh_backend, settings)
    warm = Prompt(text="def f(x):\n    return x\n")
    for engine in (reuse, fresh):
        asyncio.run(engine.run(warm))  # warm-up: first-call costs out of the figures
    out: list[Keystroke] = []
    for where, before, after in positions:
        typed, rest = after[:keystrokes], after[keystrokes:]
        first, _ = _timed(_request, reuse, Prompt(text=before, suffix=rest))
        print(f"  {where:<26} first request (cache from elsewhere) {first[0] * 1000:6.0f} ms")
        for i in range(1, len(typed) + 1):
            prompt = Prompt(text=before + typed[:i], suffix=rest)
            # the plain completion with reuse last or first: it keeps the prefix the request keeps
            # (the prompt's tokens but its last), so the next request finds the same
            order = ["reuse", "fresh", "plain", "plain_reuse"]
            if i % 2:
                order.reverse()
            got: dict[str, tuple[float, float]] = {}
            texts: dict[str, str] = {}
            counts = (0, 0)
            for side in order:
                if side.startswith("plain"):
                    view = reuse_backend if side == "plain_reuse" else fresh_backend
                    got[side], _ = _timed(view.generate, [prompt.text], None, suffixes=[rest])
                else:
                    engine = reuse if side == "reuse" else fresh
                    before_counts = backend.prefix_tokens
                    got[side], result = _timed(_request, engine, prompt)
                    texts[side] = result.completion
                    if side == "reuse":
                        counts = (
                            backend.prefix_tokens[0] - before_counts[0],
                            backend.prefix_tokens[1] - before_counts[1],
                        )
            same = texts["reuse"] == texts["fresh"]
            k = Keystroke(got["reuse"], got["fresh"], got["plain"], got["plain_reuse"], same, *counts)
            out.append(k)
            print(
                f"    key {i} {typed[i - 1]!r:<6} reuse {k.reuse[0] * 1000:6.0f} ms  "
                f"no reuse {k.fresh[0] * 1000:6.0f} ms  plain {k.plain[0] * 1000:6.0f} ms  "
                f"plain+reuse {k.plain_reuse[0] * 1000:6.0f} ms  "
                f"reuse/no reuse {k.ratio('reuse', 'fresh', 0):5.2f}x  "
                f"reuse/plain {k.ratio('reuse', 'plain', 0):5.2f}x  "
                f"reuse/plain+reuse {k.ratio('reuse', 'plain_reuse', 0):5.2f}x  "
                f"prefix tokens reused {k.reused:5d} run {k.run:4d}"
                f"{'' if k.same else '  (repaired completion differs)'}"
            )
    return out


def report(name: str, keys: Sequence[Keystroke]) -> None:
    if not keys:
        print(f"{name}: no keystrokes")
        return
    pairs = (
        ("reuse", "fresh", "reuse / no reuse"),
        ("reuse", "plain", "reuse / plain"),
        ("reuse", "plain_reuse", "reuse / plain+reuse"),
        ("plain_reuse", "plain", "plain+reuse / plain"),
    )
    for side, over, label in pairs:
        figures = []
        for clock, clock_name in ((0, "wall"), (1, "CPU")):
            r = [k.ratio(side, over, clock) for k in keys]
            figures.append(f"{clock_name}: median {statistics.median(r):5.2f}x p90 {percentile(r, 90):5.2f}x")
        print(f"  {label:<19} {len(keys):3d} keystrokes  " + "   ".join(figures))
    reused, run = sum(k.reused for k in keys), sum(k.run for k in keys)
    print(f"  prefix tokens: {reused} taken from the previous request's cache, {run} run through the model")
    same = sum(k.same for k in keys)
    print(f"  the same repaired completion with and without reuse at {same}/{len(keys)} keystrokes")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=3, help="cursor positions per model (default 3)")
    ap.add_argument("--keystrokes", type=int, default=5, help="characters typed at each (default 5)")
    ap.add_argument("--models", default="bundled,llama135m", help="bundled, llama135m or model directories")
    ap.add_argument("--seed", type=int, default=20231116)
    ap.add_argument("-k", "--mutants", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    args = ap.parse_args(argv)
    if min(args.positions, args.keystrokes, args.mutants, args.max_new_tokens) < 1 or args.threads < 0:
        print(
            "--positions, --keystrokes, -k and --max-new-tokens must be at least 1, --threads at least 0.",
            file=sys.stderr,
        )
        return 2
    import torch

    positions = stdlib_positions(args.positions, random.Random(args.seed))
    settings = Settings(mutants=args.mutants, max_new_tokens=args.max_new_tokens, threads=args.threads)
    print(
        f"{args.positions} stdlib positions (seed {args.seed}), {args.keystrokes} keystrokes each; "
        f"k = {args.mutants}, decide_after {settings.decide_after}; {args.max_new_tokens} new tokens, "
        f"boundary stops off; torch {torch.__version__}"
    )
    for name, backend in model_backends(args.models, args.max_new_tokens, args.threads):
        print(f"\n{name}: {backend.describe()}, {torch.get_num_threads()} thread(s)")
        keys = measure(backend, settings, positions, args.keystrokes)
        print(f"request time per keystroke ({name}):")
        report(name, keys)
    return 0


if __name__ == "__main__":
    sys.exit(main())
