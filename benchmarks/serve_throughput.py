"""Throughput of ``cctest serve`` with 1 client and with 8 concurrent clients, in one run.

    python benchmarks/serve_throughput.py                     # the bundled model, 64 new tokens
    python benchmarks/serve_throughput.py --clients 8 --requests 6 --threads 1

Starts the real command (``python -m cctest serve --port 0``) as a subprocess, then sends
``/v1/completions`` requests (one prompt each, greedy, ``max_tokens`` new tokens) from 1 client,
one after another, and from N clients at once, each sending the same number of requests in a
row. Prompts are the openings of different standard-library modules (different files, as from
different editors). Prints completions per second for both and their ratio. The
server batches the concurrent requests into shared ``generate`` calls; that is the gain.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import sysconfig
import time
from pathlib import Path

import aiohttp
from _serve_command import serve_command

MODULES = [
    "textwrap",
    "shlex",
    "fnmatch",
    "glob",
    "string",
    "bisect",
    "colorsys",
    "keyword",
    "heapq",
    "queue",
]


def prompts(lines: int) -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for name in MODULES:
        path = root / f"{name}.py"
        if path.is_file():
            out.append("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]))
    return out


async def client(
    session: aiohttp.ClientSession, url: str, texts: list[str], n: int, offset: int, tokens: int
) -> int:
    done = 0
    for i in range(n):
        body = {"prompt": texts[(offset + i) % len(texts)], "max_tokens": tokens, "temperature": 0}
        async with session.post(f"{url}/v1/completions", json=body) as r:
            data = await r.json()
            if r.status != 200:
                raise RuntimeError(f"server answered {r.status}: {data}")
            done += 1
    return done


async def measure(url: str, texts: list[str], clients: int, requests: int, tokens: int) -> float:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        await client(session, url, texts, 1, 0, tokens)  # warm-up
        start = time.perf_counter()
        done = await asyncio.gather(
            *(client(session, url, texts, requests, c, tokens) for c in range(clients))
        )
        return sum(done) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--requests", type=int, default=6, help="requests per client")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--lines", type=int, default=40, help="lines of each module in its prompt")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)

    extra = ["--threads", str(args.threads)] + (["--model", args.model] if args.model else [])
    with serve_command(extra) as url:
        texts = prompts(args.lines)
        one = asyncio.run(measure(url, texts, 1, args.requests * 2, args.max_tokens))
        many = asyncio.run(measure(url, texts, args.clients, args.requests, args.max_tokens))
        print(f"{len(texts)} prompts ({args.lines} lines of stdlib modules), max_tokens {args.max_tokens}")
        print(f"1 client:  {one:6.2f} completions/s")
        print(f"{args.clients} clients: {many:6.2f} completions/s   ({many / one:.2f}x one client)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
