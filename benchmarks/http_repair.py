"""A repair request over HTTP against ``cctest serve``, as a ratio to a plain completion over
HTTP, beside the same request in-process; and the tokens the server writes per repair request.

    python benchmarks/http_repair.py --positions 3 --seeds 20231116,1 --models bundled,llama135m

The positions and models are ``repair_latency.py``'s (seeded random stdlib cursors; the bundled
model and a random-weight model of SmolLM-135M's shape; boundary stops off, as there). The model
is served by ``cctest serve`` in this process (``start_server``); the http backend asks it. At
each position, in alternating order:

* plain over HTTP: one completion of the prompt (``HTTPBackend.complete``);
* repair over HTTP, streamed: ``Engine.run`` (k mutants, decide_after, the rows streamed, the
  unchosen ones closed after their first tokens);
* repair over HTTP, whole rows: the same with ``decide_after`` 0 (every row written to its end:
  what every repair request over HTTP cost before streaming);
* plain and repair in-process (the same model object, ``HFBackend``).

Every call starts cold (``reuse_prefix`` off, as in ``repair_latency.py``): kept from the call
before, the second of plain and repair at a position would reuse the first one's prompt.

It prints each position, then the median and p90 of repair / plain over HTTP (streamed and
whole) and in-process, and the new tokens the server wrote per repair request (``Batcher``'s
count: a closed row's up to where it stopped).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _busy import busy  # noqa: E402
from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import model_backends, percentile  # noqa: E402

from cctest.backends.base import GenerationOptions  # noqa: E402
from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.backends.http import HTTPBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.serve import BATCHER_KEY, start_server  # noqa: E402
from cctest.types import Prompt  # noqa: E402

KINDS = ("http streamed", "http whole", "in-process")


async def measure(
    model: HFBackend, settings: Settings, positions: Sequence[tuple[str, str, str]]
) -> tuple[dict[str, list[float]], list[int], list[int]]:
    """Per kind, the ratio repair / plain at each position; the server's tokens per streamed and
    per whole-row repair request."""
    runner, url = await start_server(model, "127.0.0.1", 0)
    batcher = runner.app[BATCHER_KEY]
    ratios: dict[str, list[float]] = {k: [] for k in KINDS}
    streamed_tokens: list[int] = []
    whole_tokens: list[int] = []
    try:
        http = HTTPBackend(
            url,
            options=GenerationOptions(max_new_tokens=settings.max_new_tokens),
            boundaries=False,
            timeout=600,
        )
        async with http:
            engines = {
                "http streamed": Engine(http, settings),
                "http whole": Engine(http, settings, decide_after=0),
                "in-process": Engine(model, settings),
            }
            for engine in engines.values():  # warm-up: first-call costs out of the figures
                await engine.run(Prompt(text="def f(x):\n    return x\n"))
            for n, (where, before, after) in enumerate(positions):
                prompt = Prompt(text=before, suffix=after)
                times: dict[str, float] = {}
                order = ["plain http", *KINDS, "plain in-process"]
                if n % 2:
                    order.reverse()
                for kind in order:
                    tokens = batcher.stats.tokens
                    t = time.perf_counter()
                    if kind == "plain http":
                        await http.complete([before], suffixes=[after])
                    elif kind == "plain in-process":
                        await model.complete([before], suffixes=[after])
                    else:
                        await engines[kind].run(prompt)
                    times[kind] = time.perf_counter() - t
                    while not batcher.idle:  # a streamed row is answered before its batch ends
                        await asyncio.sleep(0.005)
                    if kind == "http streamed":
                        streamed_tokens.append(batcher.stats.tokens - tokens)
                    elif kind == "http whole":
                        whole_tokens.append(batcher.stats.tokens - tokens)
                for kind in KINDS:
                    plain = times["plain in-process" if kind == "in-process" else "plain http"]
                    ratios[kind].append(times[kind] / plain)
                print(
                    f"  {where:<28} plain http {times['plain http'] * 1000:6.0f} ms"
                    + "".join(f"  {k} {ratios[k][-1]:5.2f}x" for k in KINDS)
                    + f"  server tokens streamed {streamed_tokens[-1]:4d} / whole {whole_tokens[-1]:4d}",
                    flush=True,
                )
    finally:
        await runner.cleanup()
    return ratios, streamed_tokens, whole_tokens


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=6, help="cursor positions per seed and model")
    ap.add_argument("--seeds", default="20231116,1", help="comma-separated seeds of the positions")
    ap.add_argument("--models", default="bundled,llama135m")
    ap.add_argument("-k", "--mutants", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0)  # the setting's: the idle cores, per call
    ap.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU beside the run")
    args = ap.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if min(args.positions, args.mutants, args.max_new_tokens) < 1 or args.threads < 0 or not seeds:
        print(
            "--positions, -k and --max-new-tokens must be at least 1, --threads at least 0, "
            "--seeds a comma-separated list of integers.",
            file=sys.stderr,
        )
        return 2
    positions = [p for seed in seeds for p in stdlib_positions(args.positions, random.Random(seed))]
    settings = Settings(mutants=args.mutants, max_new_tokens=args.max_new_tokens, threads=args.threads)
    print(
        f"{len(positions)} positions (seeds {args.seeds}), k = {args.mutants}, {args.max_new_tokens} "
        f"tokens, decide_after {settings.decide_after}, {args.threads} threads, beside {args.busy} "
        "busy processes"
    )
    with busy(args.busy):
        return _run(args, settings, positions)


def _run(args: argparse.Namespace, settings: Settings, positions: list[tuple[str, str, str]]) -> int:
    # every call cold (module docstring)
    for name, model in model_backends(args.models, args.max_new_tokens, args.threads, reuse_prefix=False):
        print(f"{name}:")
        ratios, streamed, whole = asyncio.run(measure(model, settings, positions))
        for kind in KINDS:
            r = ratios[kind]
            print(
                f"  {kind:<14} repair / plain  median {statistics.median(r):5.2f}x  "
                f"p90 {percentile(r, 90):5.2f}x"
            )
        print(
            f"  server tokens per repair request: whole rows median {statistics.median(whole):.0f}, "
            f"streamed median {statistics.median(streamed):.0f} "
            f"({statistics.median(s / w for s, w in zip(streamed, whole, strict=True)):.2f}x)"
        )
        print(f"  prompt tokens reused from an earlier call: {model.prefix_tokens[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
