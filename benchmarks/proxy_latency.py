"""What ``cctest proxy`` costs, measured side by side in one run.

1. Pass-through: requests the proxy passes on unchanged (``GET /v1/models``; a completion whose
   code is not Python, which the proxy reads before passing it on), to a loopback upstream that
   answers at once, sent alternately direct and through the proxy. Printed: median and p95 of each,
   and the latency the proxy adds (proxied - direct, median and p95 over the pairs).
2. Repair: at seeded random stdlib cursors, a plain completion direct from ``cctest serve``
   (the bundled model, one request with the code after the cursor as ``suffix``) vs the repaired
   completion through the proxy in front of the same server (k mutants). Printed per position and
   as the median and p90 of the ratio. Every call starts cold (``reuse_prefix`` off): the repair,
   asked right after the plain completion at the same position, would otherwise reuse its prompt's
   key/value cache.

    python benchmarks/proxy_latency.py                          # both parts
    python benchmarks/proxy_latency.py --requests 500 --positions 0
    python benchmarks/proxy_latency.py --requests 0 --positions 12 --threads 1
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _busy import busy  # noqa: E402
from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import percentile  # noqa: E402

from cctest.backends.base import GenerationOptions  # noqa: E402
from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.proxy import ProxyConfig, start_proxy  # noqa: E402
from cctest.serve import start_server  # noqa: E402

JS = {"model": "m", "prompt": "function f(a) {\n  return ", "suffix": "\n}\n", "max_tokens": 8}


def upstream_app() -> web.Application:
    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})

    async def completions(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response(
            {"id": "c", "object": "text_completion", "choices": [{"index": 0, "text": "a;"}]}
        )

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)
    return app


async def pass_through(n: int) -> None:
    runner = web.AppRunner(upstream_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    up = f"http://127.0.0.1:{runner.addresses[0][1]}"
    proxy, url = await start_proxy(ProxyConfig(up, settings=Settings(mutants=10), record=False))
    try:
        async with aiohttp.ClientSession() as s:
            for what, method, path, body in (
                ("GET /v1/models", "GET", "/v1/models", None),
                ("POST /v1/completions (not Python)", "POST", "/v1/completions", JS),
            ):
                times: dict[str, list[float]] = {"direct": [], "proxy": []}

                async def once(base: str, method: str, path: str, body: object) -> float:
                    t = time.perf_counter()
                    async with s.request(method, base + path, json=body) as r:
                        await r.read()
                        assert r.status == 200
                    return (time.perf_counter() - t) * 1000

                for _ in range(20):  # warm both connection pools
                    await once(up, method, path, body)
                    await once(url, method, path, body)
                for i in range(n):  # alternate, so a slow moment of the machine hits both
                    order = (("direct", up), ("proxy", url)) if i % 2 else (("proxy", url), ("direct", up))
                    for name, base in order:
                        times[name].append(await once(base, method, path, body))
                added = [p - d for p, d in zip(times["proxy"], times["direct"], strict=True)]
                print(f"{what}: {n} requests each")
                for name, xs in times.items():
                    med, p95 = statistics.median(xs), percentile(xs, 95)
                    print(f"  {name:<7} median {med:6.2f} ms  p95 {p95:6.2f} ms")
                print(
                    f"  added   median {statistics.median(added):6.2f} ms  "
                    f"p95 {percentile(added, 95):6.2f} ms"
                    f"  (median of proxy - median of direct: "
                    f"{statistics.median(times['proxy']) - statistics.median(times['direct']):.2f} ms)"
                )
    finally:
        await proxy.cleanup()
        await runner.cleanup()


async def repair(positions: int, seeds: list[int], k: int, tokens: int, threads: int) -> None:
    # every call cold (module docstring)
    model = HFBackend(
        None, options=GenerationOptions(max_new_tokens=tokens), threads=threads, reuse_prefix=False
    )
    serve, serve_url = await start_server(model, "127.0.0.1", 0)
    proxy, url = await start_proxy(ProxyConfig(serve_url, settings=Settings(mutants=k), record=False))
    ratios = []
    try:
        async with aiohttp.ClientSession() as s:

            async def ask(base: str, before: str, after: str) -> tuple[float, str]:
                body = {"prompt": before, "suffix": after, "max_tokens": tokens, "temperature": 0}
                t = time.perf_counter()
                async with s.post(base + "/v1/completions", json=body) as r:
                    data = await r.json()
                    assert r.status == 200, data
                return time.perf_counter() - t, data["choices"][0]["text"]

            await ask(serve_url, "def f(x):\n    return ", "\n")  # the model's first call (warm-up)
            for where, before, after in [
                p for seed in seeds for p in stdlib_positions(positions, random.Random(seed))
            ]:
                plain, _ = await ask(serve_url, before, after)
                repaired, _ = await ask(url, before, after)
                ratios.append(repaired / plain)
                print(
                    f"  {where:<28} plain {plain * 1000:8.0f} ms  "
                    f"proxy repair {repaired * 1000:8.0f} ms  {ratios[-1]:5.2f}x"
                )
    finally:
        await proxy.cleanup()
        await serve.cleanup()
    print(
        f"repair through the proxy / plain from cctest serve, {len(ratios)} positions, k = {k}, "
        f"{tokens} tokens: median {statistics.median(ratios):.2f}x  p90 {percentile(ratios, 90):.2f}x  "
        f"max {max(ratios):.2f}x"
    )
    if len(seeds) > 1:
        for i, seed in enumerate(seeds):
            mine = ratios[i * positions : (i + 1) * positions]
            print(f"  seed {seed}: median {statistics.median(mine):.2f}x  p90 {percentile(mine, 90):.2f}x")
    print(f"prompt tokens reused from an earlier call: {model.prefix_tokens[0]}")  # none: cold calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=300, help="pass-through requests of each kind (0: skip)")
    ap.add_argument("--positions", type=int, default=12, help="stdlib cursors for the repair part (0: skip)")
    ap.add_argument("--seed", type=int, default=20231116)
    ap.add_argument("--seeds", default="", help="several seeds, comma-separated (in place of --seed)")
    ap.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU beside the run")
    ap.add_argument("-k", "--mutants", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0)  # the setting's: the idle cores, per call
    args = ap.parse_args()
    if min(args.requests, args.positions) < 0 or args.mutants < 1 or args.max_new_tokens < 1:
        print(
            "--requests and --positions must be at least 0, -k and --max-new-tokens at least 1.",
            file=sys.stderr,
        )
        return 2
    seeds = [int(v) for v in args.seeds.split(",") if v.strip()] or [args.seed]
    print(f"beside {args.busy} busy processes")
    with busy(args.busy):
        if args.requests:
            asyncio.run(pass_through(args.requests))
        if args.positions:
            asyncio.run(repair(args.positions, seeds, args.mutants, args.max_new_tokens, args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
