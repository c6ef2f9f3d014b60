"""What a repair costs in front of a real llama.cpp server, measured side by side in one run.

For each model (the bundled one and the 135M Llama shape with random weights, both converted to
GGUF by ``cctest.models.gguf``) and each slot setting of ``llama-server`` (its default 4 slots with
a context sized for them, ``-np 4 -c 4096``; and a slot per row, ``-np k+1 -c (k+1)*1024``), at
seeded random stdlib cursors (the code around the cursor cut to fit the model's 1,024 tokens),
three requests at each cursor:

* **plain**: the completion a plugin asks the server directly (``POST /v1/completions`` with the
  code after the cursor as ``suffix``);
* **proxy**: the same request through ``cctest proxy`` in front of the server (a repair with k
  mutants, or, where fewer rows fit than a repair asks, the plain answer at once and the check
  afterwards: monitor mode; the check is waited for before the next request, and not timed);
* **http**: ``cctest complete --backend http``'s engine run against the server (in-process).

each **cold** (every slot's prompt cache erased first: ``POST /slots/N?action=erase``) and then
**warm** (the same request again, the next keystroke at the same cursor). Printed: each cursor's
times and ratios to the plain request, and per setting the median, p90 and max of each ratio, and
the answers lost (a request that did not get a 200 or an engine result).

    python benchmarks/real_server_repair.py                                  # 4 cursors x 2 seeds
    python benchmarks/real_server_repair.py --positions 8 --seeds 1 2 --models bundled

Needs ``make setup-e2e`` (``scripts/setup-llama.sh``: the server built once per version).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import percentile, random_llama  # noqa: E402

from cctest.backends.base import GenerationOptions  # noqa: E402
from cctest.backends.http import HTTPBackend, window  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.errors import BackendError, ConfigError  # noqa: E402
from cctest.models import bundled_model_path  # noqa: E402
from cctest.models.gguf import convert, setup_dir  # noqa: E402
from cctest.proxy import ProxyConfig, start_proxy  # noqa: E402
from cctest.proxy.server import PROXY_KEY  # noqa: E402
from cctest.types import Prompt  # noqa: E402

CONTEXT = 1024  # both models' training context
WINDOW_CHARS = 2400  # the code around a cursor: about 700 tokens of Python, well inside CONTEXT
KINDS = ("proxy", "http")


def binary() -> Path | None:
    base = setup_dir()
    path = base / "build" / "bin" / "llama-server" if base is not None else None
    return path if path is not None and os.access(path, os.X_OK) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def llama_server(exe: Path, gguf: Path, slots: int, ctx: int, threads: int) -> AsyncIterator[str]:
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
    args = [str(exe), "-m", str(gguf), "-np", str(slots), "-c", str(ctx), "-t", str(threads),
            "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as s:
            for _ in range(1200):
                if proc.poll() is not None:
                    raise RuntimeError(f"llama-server exited; its log: {log.name}")
                try:
                    async with s.get(f"{url}/health") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


async def erase(s: aiohttp.ClientSession, url: str, slots: int) -> None:
    for i in range(slots):
        async with s.post(f"{url}/slots/{i}?action=erase") as r:
            await r.read()


async def timed_post(s: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> float | None:
    t = time.perf_counter()
    async with s.post(f"{url}/v1/completions", json=body) as r:
        await r.read()
        ok = r.status == 200
    return time.perf_counter() - t if ok else None


async def setting(
    exe: Path,
    gguf: Path,
    name: str,
    slots: int,
    cursors: list[tuple[str, str, str]],
    args: argparse.Namespace,
) -> dict[str, list[float]]:
    ctx = slots * CONTEXT
    ratios: dict[str, list[float]] = {f"{k} {w}": [] for k in KINDS for w in ("cold", "warm")}
    lost = 0
    settings = Settings(mutants=args.mutants, timeout=args.timeout)
    opts = GenerationOptions(max_new_tokens=args.max_new_tokens)
    async with llama_server(exe, gguf, slots, ctx, args.threads) as url:
        proxy_runner, proxy_url = await start_proxy(ProxyConfig(url, settings=settings, record=False))
        proxy = proxy_runner.app[PROXY_KEY]
        backend = HTTPBackend(url, options=opts, timeout=args.timeout)
        engine = Engine(backend, settings)
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=args.timeout * 3)) as s:

                async def http(before: str, after: str) -> float | None:
                    t = time.perf_counter()
                    try:
                        await engine.run(Prompt(text=before, suffix=after))
                    except BackendError:
                        return None
                    return time.perf_counter() - t

                async def through_proxy(body: dict[str, Any]) -> float | None:
                    took = await timed_post(s, proxy_url, body)
                    await proxy.drain()  # a monitor-mode check runs after the answer: not timed
                    return took

                # the first calls of each path: the server's, the proxy's and the backend's learning
                warm_up = {
                    "prompt": "def f(x):\n    return ",
                    "suffix": "\n",
                    "max_tokens": 8,
                    "temperature": 0,
                }
                await timed_post(s, url, warm_up)
                await through_proxy(warm_up)
                await through_proxy(warm_up)
                await http("def f(x):\n    return ", "\n")
                print(
                    f"{name}, {slots} slots (-np {slots} -c {ctx}), k = {args.mutants}, "
                    f"{args.max_new_tokens} tokens"
                )
                for n, (where, before, after) in enumerate(cursors):
                    before, cut = window(before, after, WINDOW_CHARS)
                    after = cut or ""
                    body = {"model": "m", "prompt": before, "suffix": after,
                            "max_tokens": args.max_new_tokens, "temperature": 0}  # fmt: skip
                    times: dict[str, float | None] = {}
                    kinds = ["plain", *KINDS]
                    for kind in kinds[n % 3 :] + kinds[: n % 3]:  # each kind first in turn
                        await erase(s, url, slots)
                        for w in ("cold", "warm"):
                            if kind == "plain":
                                times[f"{kind} {w}"] = await timed_post(s, url, body)
                            elif kind == "proxy":
                                times[f"{kind} {w}"] = await through_proxy(body)
                            else:
                                times[f"{kind} {w}"] = await http(before, after)
                    lost += sum(1 for t in times.values() if t is None)
                    shown = []
                    for w in ("cold", "warm"):
                        plain = times[f"plain {w}"]
                        shown.append(f"{w}: plain {plain * 1000:5.0f} ms" if plain else f"{w}: plain lost")
                        for kind in KINDS:
                            took = times[f"{kind} {w}"]
                            if plain and took:
                                ratios[f"{kind} {w}"].append(took / plain)
                                shown.append(f"{kind} {took * 1000:5.0f} ms {took / plain:5.2f}x")
                    print(f"  {where:<26} " + "  ".join(shown))
        finally:
            await backend.aclose()
            await proxy_runner.cleanup()
    for key, xs in ratios.items():
        if xs:
            print(
                f"  {key:<11} / plain: median {statistics.median(xs):5.2f}x  p90 {percentile(xs, 90):5.2f}x  "
                f"max {max(xs):5.2f}x  ({len(xs)} cursors)"
            )
    print(f"  answers lost: {lost}; proxy counters: {dict(proxy.counters)}")
    return ratios


def models(names: list[str], out: Path) -> list[tuple[str, Path]]:
    got = []
    for name in names:
        if name == "bundled":
            got.append(("bundled model", convert(bundled_model_path(), out / "bundled.gguf")))
        else:
            with random_llama("llama135m") as folder:
                got.append(("135M Llama shape (random weights)", convert(folder, out / "llama135m.gguf")))
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--positions", type=int, default=4, help="stdlib cursors per seed")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", choices=["bundled", "135m"], default=["bundled", "135m"])
    ap.add_argument("--slots", nargs="+", choices=["4", "k+1"], default=["4", "k+1"])
    ap.add_argument("-k", "--mutants", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    if args.positions < 1 or args.mutants < 1 or args.max_new_tokens < 1 or args.threads < 1:
        print("--positions, -k, --max-new-tokens and --threads must be at least 1.", file=sys.stderr)
        return 2
    exe = binary()
    if exe is None:
        print("llama-server is not built: run 'make setup-e2e' (scripts/setup-llama.sh).", file=sys.stderr)
        return 2
    cursors = [c for seed in args.seeds for c in stdlib_positions(args.positions, random.Random(seed))]
    with tempfile.TemporaryDirectory(prefix="cctest-gguf-") as tmp:
        try:
            ggufs = models(args.models, Path(tmp))
        except ConfigError as exc:  # a model the converter cannot take: one sentence
            print(exc, file=sys.stderr)
            return 2
        for name, gguf in ggufs:
            for slots in args.slots:
                n = 4 if slots == "4" else args.mutants + 1
                asyncio.run(setting(exe, gguf, name, n, cursors, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
