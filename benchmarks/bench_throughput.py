"""Figure: ``cctest bench`` throughput on HumanEval, bundled model, batched vs one call per variant.

For each prompt the same engine runs twice, in alternating order (so a background load that
changes during the run hits both alike):

* **batched**: cctest's engine as shipped: the prompt and its k mutants go to the model in ONE
  ``complete`` call (one batched ``generate`` with a shared-prefix cache in the hf backend);
* **plain loop**: the same engine over a backend that forwards each variant in its own call, the
  way a tool without batching would call the model: k + 1 calls per prompt.

Mutants, de-mutation, detection and repair are identical in both; only the model calls differ.
Test execution is left out (it does not depend on the engine). Prints prompts per minute for
both and their ratio.

    .venv/bin/python benchmarks/bench_throughput.py               # all 164 prompts, k = 10
    .venv/bin/python benchmarks/bench_throughput.py --limit 20    # a quicker sample
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cctest.backends import create_backend  # noqa: E402
from cctest.backends.base import Backend, Outcome  # noqa: E402
from cctest.bench.datasets import load_dataset  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402


class OneCallPerVariant(Backend):
    """Forwards every prompt of a batch in a call of its own, one after the other."""

    name = "one-call-per-variant"

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    async def complete(self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None) -> list[Outcome]:
        out: list[Outcome] = []
        for i, p in enumerate(prompts):
            out += await self.inner.complete([p], suffixes=None if suffixes is None else [suffixes[i]])
        return out


async def measure(
    dataset: str, limit: int | None, k: int, backend_name: str, model: str | None, max_new_tokens: int
) -> dict[str, object]:
    tasks = load_dataset(dataset).tasks[:limit]
    settings = Settings(backend=backend_name, model=model, mutants=k, max_new_tokens=max_new_tokens)
    seconds = {"batched": 0.0, "plain": 0.0}
    variants = 0
    async with create_backend(settings) as backend:
        batched = Engine(backend, settings)
        plain = Engine(OneCallPerVariant(backend), settings)
        await batched.run(tasks[0].prompt)  # load the model and warm up outside the clock
        for i, task in enumerate(tasks):
            order = [("batched", batched), ("plain", plain)]
            if i % 2:
                order.reverse()
            for name, engine in order:
                t0 = time.perf_counter()
                result = await engine.run(task.prompt)
                seconds[name] += time.perf_counter() - t0
            variants += len(result.completions)
            print(
                f"{i + 1}/{len(tasks)} {task.task_id}: batched {seconds['batched']:.1f} s, "
                f"plain {seconds['plain']:.1f} s so far",
                file=sys.stderr,
                flush=True,
            )
    n = len(tasks)
    ppm = {name: 60.0 * n / s for name, s in seconds.items()}
    return {
        "dataset": dataset,
        "prompts": n,
        "k": k,
        "variants_per_prompt": round(variants / n, 2),
        "backend": backend.describe(),
        "max_new_tokens": max_new_tokens,
        "seconds": {k_: round(v, 1) for k_, v in seconds.items()},
        "prompts_per_minute": {k_: round(v, 2) for k_, v in ppm.items()},
        "speedup": round(ppm["batched"] / ppm["plain"], 2),
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
    args = p.parse_args()
    r = asyncio.run(measure(args.dataset, args.limit, args.k, args.backend, args.model, args.max_new_tokens))
    print(
        f"{r['dataset']}, {r['prompts']} prompts, k = {r['k']} "
        f"({r['variants_per_prompt']} variants per prompt on average), {r['backend']}"
    )
    ppm, secs = r["prompts_per_minute"], r["seconds"]
    print(f"  batched engine  : {ppm['batched']:8.2f} prompts/min ({secs['batched']} s)")
    print(
        f"  one call/variant: {r['prompts_per_minute']['plain']:8.2f} prompts/min ({r['seconds']['plain']} s)"
    )
    print(f"  speed-up        : {r['speedup']:.2f}x")
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
