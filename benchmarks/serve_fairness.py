"""How long one client waits on ``cctest serve`` while another client's large request runs.

    python benchmarks/serve_fairness.py                   # a 1,500-prompt request, 16 new tokens
    python benchmarks/serve_fairness.py --big 500 --max-tokens 8

Starts the real command (``python -m cctest serve --port 0``, the bundled model by default) as a
subprocess. A small client sends one-prompt requests one after another (a cursor in a different
file each time, as an editor would), first on the idle server, then while a large client's
single request with ``--big`` prompts runs. Prints the small client's latency in both phases
(median and worst), their ratio, and the large request's own wall time. Before the batch was
shared, the small client's first request during the large one waited for the whole large
request; now it waits for about one batch.

The server is started with ``--max-prompts`` large enough for the ``--big`` request when the
command has that option (older versions have no bound at all).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import aiohttp
from _serve_command import serve_command


def prompts(count: int, lines: int) -> list[str]:
    """``count`` prompts: the first lines of standard-library modules, cut at varying depths."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(root.glob("*.py"))[:200]
    texts = []
    for path in files:
        source = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        if len(source) > lines:
            texts.append(source)
    out = []
    for i in range(count):
        source = texts[i % len(texts)]
        cut = lines + (i // len(texts)) % max(1, len(source) - lines)
        out.append("".join(source[cut - lines : cut]))
    return out


async def ask(session: aiohttp.ClientSession, url: str, batch: list[str], tokens: int) -> float:
    body = {"prompt": batch, "max_tokens": tokens, "temperature": 0}
    started = time.perf_counter()
    async with session.post(f"{url}/v1/completions", json=body) as r:
        data = await r.json()
        if r.status != 200:
            raise RuntimeError(f"server answered {r.status}: {data}")
    return time.perf_counter() - started


async def measure(url: str, args: argparse.Namespace) -> None:
    small = prompts(args.small_requests * 2 + 50, args.lines)[-(args.small_requests * 2) :]
    big = prompts(args.big, args.lines)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as session:
        await ask(session, url, small[:1], args.max_tokens)  # warm-up
        idle = [await ask(session, url, [p], args.max_tokens) for p in small[: args.small_requests]]
        big_task = asyncio.create_task(ask(session, url, big, args.max_tokens))
        await asyncio.sleep(args.start_after)
        during = []
        for p in small[args.small_requests :]:
            if big_task.done():
                break
            during.append(await ask(session, url, [p], args.max_tokens))
        big_wall = await big_task
    print(
        f"small client: 1 prompt per request; large client: 1 request of {args.big} prompts; "
        f"max_tokens {args.max_tokens}, {args.lines}-line prompts"
    )
    print(
        f"idle server:        median {statistics.median(idle):7.3f} s, worst {max(idle):7.3f} s "
        f"({len(idle)} requests)"
    )
    if during:
        print(
            f"during the large:   median {statistics.median(during):7.3f} s, worst {max(during):7.3f} s "
            f"({len(during)} requests)"
        )
        print(
            f"ratio during/idle:  median {statistics.median(during) / statistics.median(idle):.2f}x, "
            f"worst {max(during) / statistics.median(idle):.2f}x"
        )
    print(f"the large request:  {big_wall:.2f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None)
    p.add_argument("--big", type=int, default=1500, help="prompts in the large request")
    p.add_argument("--small-requests", type=int, default=8, help="requests of the small client per phase")
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--lines", type=int, default=20, help="lines per prompt")
    p.add_argument(
        "--start-after", type=float, default=0.5, help="seconds between the large request and the small ones"
    )
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)

    extra = ["--threads", str(args.threads)] + (["--model", args.model] if args.model else [])
    help_text = subprocess.run(
        [sys.executable, "-m", "cctest", "serve", "--help"], capture_output=True, text=True
    ).stdout
    if "--max-prompts" in help_text:
        extra += ["--max-prompts", str(max(args.big, 1))]
    with serve_command(extra) as url:
        asyncio.run(measure(url, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
