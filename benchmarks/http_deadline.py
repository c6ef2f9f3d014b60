"""Worst wall time of one k = 10 request to a server that never answers, as a multiple of --timeout.

    python benchmarks/http_deadline.py                    # timeout 1 s, k = 10, 5 rounds
    python benchmarks/http_deadline.py --timeout 2 --rounds 10

The HTTP backend sends the original prompt and its k mutants (k + 1 prompts) in one ``complete``
call, at most ``max_concurrency`` requests in flight. The server here (aiohttp on 127.0.0.1)
accepts every request and never answers. The figure is the slowest ``complete`` call over the
rounds divided by ``--timeout``, for several ``max_concurrency`` values measured side by side:
1 (every prompt but one waits for a slot), 2, the default 8, and k + 1 (no waiting). The user's
deadline holds when the multiple stays near 1 whatever the concurrency; a deadline that started
only when a prompt got its slot would give about ceil((k + 1) / max_concurrency) instead.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time

from aiohttp import web

from cctest.backends.http import HTTPBackend
from cctest.commands._common import add_deprecated_alias
from cctest.errors import BackendTimeout


async def _never_answer(stop: asyncio.Event) -> tuple[web.AppRunner, str]:
    async def hang(request: web.Request) -> web.Response:
        await stop.wait()
        return web.Response(status=503)

    app = web.Application()
    app.router.add_post("/v1/completions", hang)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def main(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    runner, url = await _never_answer(stop)
    prompts = [f"x{i} = " for i in range(args.k + 1)]
    concurrencies = sorted({1, 2, 8, args.k + 1})
    worst = dict.fromkeys(concurrencies, 0.0)
    try:
        for _ in range(args.rounds):
            for conc in concurrencies:  # interleaved, so load on the machine hits every setting alike
                async with HTTPBackend(url, timeout=args.timeout, max_concurrency=conc) as backend:
                    started = time.perf_counter()
                    out = await backend.complete(prompts)
                    elapsed = time.perf_counter() - started
                assert all(isinstance(o, BackendTimeout) for o in out), out
                worst[conc] = max(worst[conc], elapsed)
    finally:
        stop.set()
        await runner.cleanup()
    print(
        f"k = {args.k} ({args.k + 1} prompts), --timeout {args.timeout:g} s, {args.rounds} rounds, "
        "a server that never answers"
    )
    print(
        f"{'max_concurrency':>16} {'worst wall':>11} {'× timeout':>10} "
        f"{'if the deadline started at admission':>38}"
    )
    for conc in concurrencies:
        admission = math.ceil((args.k + 1) / conc)
        print(f"{conc:>16} {worst[conc]:>10.3f}s {worst[conc] / args.timeout:>9.3f}× {admission:>37}×")
    print(f"worst over all: {max(worst.values()) / args.timeout:.3f}× --timeout (goal ≤ 1.1×)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=1.0, help="the backend's --timeout in seconds")
    parser.add_argument(
        "-k", "--mutants", dest="k", type=int, default=10, help="mutants per request (k + 1 prompts)"
    )
    add_deprecated_alias(parser, "--k", "--mutants", dest="k", type=int)
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the worst round counts")
    asyncio.run(main(parser.parse_args()))
