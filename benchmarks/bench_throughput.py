"""Figure: ``cctest bench`` throughput on HumanEval, bundled model, batched vs one call per variant.

The same engine over the same prompts, three ways, interleaved batch by batch (the order rotates,
so a background load that changes during the run hits all alike):

* **bench**: what ``cctest bench`` does: ``--batch-prompts`` prompts (default 8, shortest first)
  and all their variants in ONE ``complete`` call (``Engine.run_many``; one batched ``generate``);
* **per prompt**: one prompt at a time, its original and k mutants in one call (``Engine.run``,
  what the editor does for a completion request);
* **plain loop**: one prompt at a time, through a backend that forwards each variant in its own
  call, the way a tool without batching would call the model: k + 1 calls per prompt.

Mutants, de-mutation, detection and repair are identical; only the model calls differ. Test
execution is left out (it does not depend on the engine). Prints prompts per minute for each and
the ratios to the plain loop.

    .venv/bin/python benchmarks/bench_throughput.py               # all 164 prompts, k = 10
    .venv/bin/python benchmarks/bench_throughput.py --limit 40    # a quicker sample
    .venv/bin/python benchmarks/bench_throughput.py --dataset cctest --limit 10  # k+1 variants
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cctest.backends import create_backend  # noqa: E402
from cctest.backends.base import Backend, Outcome  # noqa: E402
from cctest.bench.datasets import load_dataset  # noqa: E402
from cctest.bench.runner import batches  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402


class OneCallPerVariant(Backend):
    """Forwards every prompt of a batch in a call of its own, one after the other."""

    name = "one-call-per-variant"

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    async def complete(
        self,
        prompts: Sequence[str],
        *,
        suffixes: Sequence[str] | None = None,
        groups: Sequence[int] | None = None,  # each prompt alone is cut on its own anyway
    ) -> list[Outcome]:
        out: list[Outcome] = []
        for i, p in enumerate(prompts):
            out += await self.inner.complete([p], suffixes=None if suffixes is None else [suffixes[i]])
        return out


async def measure(
    dataset: str,
    limit: int | None,
    k: int,
    backend_name: str,
    model: str | None,
    max_new_tokens: int,
    batch_prompts: int,
    threads: int,
) -> dict[str, Any]:
    tasks = load_dataset(dataset).tasks[:limit]
    settings = Settings(
        backend=backend_name, model=model, mutants=k, max_new_tokens=max_new_tokens, threads=threads
    )
    seconds = {"bench": 0.0, "per_prompt": 0.0, "plain": 0.0}
    variants = 0
    groups = batches(list(enumerate(tasks)), batch_prompts)
    async with create_backend(settings) as backend:
        engine = Engine(backend, settings)
        plain = Engine(OneCallPerVariant(backend), settings)
        await engine.run(tasks[0].prompt)  # load the model and warm up outside the clock

        async def bench(prompts: list[str]) -> None:
            nonlocal variants
            for r in await engine.run_many(prompts):
                if isinstance(r, Exception):
                    raise r
                variants += len(r.completions)

        async def per_prompt(prompts: list[str]) -> None:
            for p in prompts:
                await engine.run(p)

        async def plain_loop(prompts: list[str]) -> None:
            for p in prompts:
                await plain.run(p)

        ways = [("bench", bench), ("per_prompt", per_prompt), ("plain", plain_loop)]
        done = 0
        for g, group in enumerate(groups):
            prompts = [t.prompt for _, t in group]
            for name, way in ways[g % 3 :] + ways[: g % 3]:
                t0 = time.perf_counter()
                await way(prompts)
                seconds[name] += time.perf_counter() - t0
            done += len(group)
            print(
                f"{done}/{len(tasks)}: bench {seconds['bench']:.1f} s, "
                f"per prompt {seconds['per_prompt']:.1f} s, plain {seconds['plain']:.1f} s so far",
                file=sys.stderr,
                flush=True,
            )
    n = len(tasks)
    ppm = {name: 60.0 * n / s_ for name, s_ in seconds.items()}
    return {
        "dataset": dataset,
        "prompts": n,
        "k": k,
        "batch_prompts": batch_prompts,
        "variants_per_prompt": round(variants / n, 2),
        "backend": backend.describe(),
        "threads": threads,
        "max_new_tokens": max_new_tokens,
        "seconds": {k_: round(v, 1) for k_, v in seconds.items()},
        "prompts_per_minute": {k_: round(v, 2) for k_, v in ppm.items()},
        "speedup": round(ppm["bench"] / ppm["plain"], 2),
        "speedup_per_prompt": round(ppm["per_prompt"] / ppm["plain"], 2),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--dataset", default="humaneval", help="humaneval (default), a .jsonl file or a source directory"
    )
    p.add_argument(
        "--limit", type=int, default=None, help="first N prompts (default: all; HumanEval has 164)"
    )
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--backend", default="hf", help="hf (default, the bundled model) or rules")
    p.add_argument("--model", default=None)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--batch-prompts", type=int, default=8, help="as cctest bench's option (default 8)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = p.parse_args()
    r = asyncio.run(
        measure(
            args.dataset,
            args.limit,
            args.k,
            args.backend,
            args.model,
            args.max_new_tokens,
            args.batch_prompts,
            args.threads,
        )
    )
    print(
        f"{r['dataset']}, {r['prompts']} prompts, k = {r['k']} "
        f"({r['variants_per_prompt']} variants per prompt on average), {r['backend']}"
    )
    ppm, secs = r["prompts_per_minute"], r["seconds"]
    print(
        f"  bench ({r['batch_prompts']} prompts/call): {ppm['bench']:8.2f} prompts/min ({secs['bench']} s)"
        f"  {r['speedup']:.2f}x the plain loop"
    )
    print(
        f"  one prompt/call    : {ppm['per_prompt']:8.2f} prompts/min ({secs['per_prompt']} s)"
        f"  {r['speedup_per_prompt']:.2f}x"
    )
    print(f"  one call/variant   : {ppm['plain']:8.2f} prompts/min ({secs['plain']} s)")
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
