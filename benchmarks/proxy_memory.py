"""What ``cctest proxy`` holds under concurrent large prompts, with its bounds and without them.

A ``cctest proxy --log-all`` process in front of a loopback upstream that answers every row at
once gets ``--clients`` concurrent repair requests of ``--mib`` MiB of Python before the cursor
each, twice: once with the bounds lifted (``--max-prompt-chars`` and ``--max-repairs`` far above
the load: as the proxy was before it had them) and once at their defaults. Printed for each: the
proxy's peak resident memory (VmHWM), its resident memory once the requests are answered (VmRSS),
the defect log's size, and the time the requests took; then the ratios.

    python benchmarks/proxy_memory.py                      # 14 clients, 7.6 MiB bodies each
    python benchmarks/proxy_memory.py --clients 4 --mib 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]


def upstream_app() -> web.Application:
    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        n = len(body["prompt"]) if isinstance(body["prompt"], list) else 1
        choices = [{"index": i, "text": "total += 1\n", "finish_reason": "stop"} for i in range(n)]
        return web.json_response({"id": "c", "object": "text_completion", "model": "m", "choices": choices})

    app = web.Application(client_max_size=1 << 30)
    app.router.add_post("/v1/completions", completions)
    return app


def memory(pid: int) -> dict[str, int]:
    """The process's peak and current resident memory, in MiB."""
    text = Path(f"/proc/{pid}/status").read_text()
    return {k: int(re.search(rf"{k}:\s+(\d+) kB", text).group(1)) // 1024 for k in ("VmHWM", "VmRSS")}  # type: ignore[union-attr]


async def one_run(upstream: str, bounds: list[str], clients: int, prompt: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "defects.sqlite3"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cctest", "proxy", "--upstream", upstream, "--port", "0",
            "--log-all", "--defect-log", str(log), "--timeout", "3600", "--request-timeout", "3600",
            *bounds,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, cwd=ROOT,
        )  # fmt: skip
        assert proc.stdout is not None
        line = (await proc.stdout.readline()).decode()
        url = re.search(r"(http://\S+) ->", line).group(1)  # type: ignore[union-attr]
        body = {"model": "m", "prompt": prompt, "suffix": "\n    return total\n", "max_tokens": 16}
        start = time.perf_counter()
        timeout = aiohttp.ClientTimeout(total=None)
        async with aiohttp.ClientSession(timeout=timeout) as session:

            async def ask() -> int:
                async with session.post(f"{url}/v1/completions", json=body) as r:
                    await r.read()
                    return r.status

            statuses = await asyncio.gather(*(ask() for _ in range(clients)))
        took = time.perf_counter() - start
        await asyncio.sleep(2)  # the defect log's writes
        mem = memory(proc.pid)
        size = log.stat().st_size if log.exists() else 0
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
    assert all(s == 200 for s in statuses), statuses
    return {"peak": mem["VmHWM"], "after": mem["VmRSS"], "log": size / 2**20, "took": took}


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=14)
    p.add_argument(
        "--mib", type=float, default=6.5, help="MiB of code before the cursor (the body: a sixth more)"
    )
    args = p.parse_args()
    head = "def count(items):\n    total = 0\n    for item in items:\n        "
    filler = "x = 1\n" * int(args.mib * 2**20 / 6)
    prompt = filler + head
    runner = web.AppRunner(upstream_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    upstream = f"http://127.0.0.1:{runner.addresses[0][1]}"
    lifted = ["--max-prompt-chars", str(10 * len(prompt)), "--max-repairs", str(10 * args.clients)]
    size = len(json.dumps({"prompt": prompt}).encode()) / 2**20
    print(
        f"{args.clients} concurrent repair requests, {len(prompt) / 2**20:.1f} MiB before the cursor "
        f"({size:.1f} MiB bodies)"
    )
    got = {}
    for name, bounds in (("bounds lifted", lifted), ("default bounds", [])):
        got[name] = r = await one_run(upstream, bounds, args.clients, prompt)
        print(
            f"  {name:15} peak {r['peak']:6.0f} MiB  after {r['after']:6.0f} MiB  "
            f"defect log {r['log']:7.1f} MiB  {r['took']:6.1f} s"
        )
    a, b = got["bounds lifted"], got["default bounds"]
    print(
        f"peak {a['peak'] / b['peak']:.1f}x lower, after {a['after'] / b['after']:.1f}x lower with the bounds"
    )
    await runner.cleanup()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(main())
