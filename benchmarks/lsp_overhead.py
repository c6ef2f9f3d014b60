"""What the language server adds on top of the engine, and whether its memory stays flat.

One run, one machine, the rule backend (so the model costs nothing and the figure is the
server's own: stdio round trip, JSON (de)serialisation, document lookup, cache, bookkeeping):

1. paired latency: for each of ``--paired`` distinct prompts, the engine is timed directly in
   this process, then the same prompt is requested from a real ``cctest-lsp`` process over stdio
   (``textDocument/inlineCompletion``); overhead = round trip - direct engine time. Prompts are
   distinct, so the server's cache never answers; median and p95 of the overhead are printed
   (target: <= 2 ms), and the round trip of a cache hit (no engine at all) as a floor.
2. memory: ``--requests`` more requests cycling over more distinct prompts than the cache holds
   (every one runs the engine, the cache keeps evicting); the server's RSS after start, after
   a warm-up (cache full) and at the end (target: flat within 5% after warm-up).

    python benchmarks/lsp_overhead.py [--paired 500] [--requests 10000] [--mutants 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from _lsp_session import start_session
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import Engine

FUNCS_PER_DOC = 20


def source(doc: int) -> str:
    return "".join(
        f"def f{doc}_{i}(a{i}, b, c{doc}):\n    x{i} = a{i} + b\n    \n\n" for i in range(FUNCS_PER_DOC)
    )


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paired", type=int, default=500, help="distinct prompts timed both ways (default 500)")
    ap.add_argument(
        "--requests", type=int, default=10_000, help="requests for the memory figure (default 10,000)"
    )
    ap.add_argument("--mutants", type=int, default=10, help="k (default 10)")
    args = ap.parse_args()

    options = {"backend": "rules", "mutants": args.mutants, "defectLog": "/tmp/cctest-bench-defects.sqlite3"}
    settings, errors = Settings.from_mapping(options)
    assert not errors, errors
    engine = Engine(RuleBackend(), settings)

    n_docs = max(1, -(-max(args.paired + 20, 300) // FUNCS_PER_DOC))  # + 20 for the warm-up
    docs = {f"file:///bench/d{d}.py": source(d) for d in range(n_docs)}
    cursors = [(uri, 2 + 4 * i) for uri in docs for i in range(FUNCS_PER_DOC)]  # the blank body line

    client = LanguageClient("lsp-overhead", "1")

    engine_ms: dict[str, float] = {}  # request id -> the engine time the server measured for it
    cached: set[str] = set()  # request ids answered from the cache (no engine time)

    @client.feature("cctest/verdict")
    def _verdict(ls: LanguageClient, params: Any) -> None:
        p = params._asdict() if hasattr(params, "_asdict") else params
        if isinstance(p, dict) and "engineMs" in p:
            engine_ms[p["requestId"]] = p["engineMs"]
        elif isinstance(p, dict):
            cached.add(p["requestId"])

    pid = await start_session(client, options, docs, "warning")

    async def ask(uri: str, line: int) -> tuple[float, float | None]:
        t = time.perf_counter()
        res = await client.text_document_inline_completion_async(
            lsp.InlineCompletionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                position=lsp.Position(line=line, character=4),
                context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Automatic),
            )
        )
        dt = (time.perf_counter() - t) * 1000
        assert isinstance(res, lsp.InlineCompletionList) and res.items, "the server gave no completion"
        command = res.items[0].command
        assert command is not None and command.arguments, "the completion has no acceptance command"
        request_id = str(command.arguments[0])
        for _ in range(100):  # the verdict notification follows the answer (not timed)
            if request_id in engine_ms or request_id in cached:
                break
            await asyncio.sleep(0.001)
        cached.discard(request_id)
        return dt, engine_ms.pop(request_id, None)

    def prompt_of(uri: str, line: int) -> str:
        lines = docs[uri].split("\n")
        return "\n".join(lines[:line]) + "\n" + lines[line][:4]

    rss_start = rss_kib(pid)
    # warm both sides (imports, libcst caches) on prompts not used below
    for uri, line in cursors[-20:]:
        await ask(uri, line)
        await engine.run(prompt_of(uri, line))

    overhead, server_ms, direct_ms, exact = [], [], [], []
    for uri, line in cursors[: args.paired]:
        prompt = prompt_of(uri, line)
        t = time.perf_counter()
        await engine.run(prompt)
        d = (time.perf_counter() - t) * 1000
        s, inside = await ask(uri, line)
        assert inside is not None, "a distinct prompt was answered from the cache"
        direct_ms.append(d)
        server_ms.append(s)
        overhead.append(s - d)
        exact.append(s - inside)
    hit_ms = [(await ask(*cursors[0]))[0] for _ in range(200)]  # cached: round trip + bookkeeping only
    # the floor: the same request in mode "off" (answered empty at once) is pygls on both ends + stdio
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"cctest": {"mode": "off"}})
    )
    floor_ms = []
    for _ in range(200):
        t = time.perf_counter()
        await client.text_document_inline_completion_async(
            lsp.InlineCompletionParams(
                text_document=lsp.TextDocumentIdentifier(uri=cursors[0][0]),
                position=lsp.Position(line=cursors[0][1], character=4),
                context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Automatic),
            )
        )
        floor_ms.append((time.perf_counter() - t) * 1000)
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"cctest": {"mode": "repair"}})
    )

    rss_warm = rss_kib(pid)
    for i in range(args.requests):
        uri, line = cursors[i % len(cursors)]
        await ask(uri, line)
    rss_end = rss_kib(pid)
    raw = await client.protocol.send_request_async("cctest/stats", {})
    stats = raw._asdict() if hasattr(raw, "_asdict") else raw
    timings = stats["meanTimingsMs"]
    timings = timings._asdict() if hasattr(timings, "_asdict") else timings
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()

    def row(name: str, values: list[float]) -> str:
        return f"  {name:<46} median {statistics.median(values):7.2f} ms   p95 {pct(values, 0.95):7.2f} ms"

    print(f"cctest-lsp overhead, rule backend, k={args.mutants}, {len(overhead)} distinct prompts, one run")
    print(row("engine, called directly in this process", direct_ms))
    print(row("the same prompts through the server", server_ms))
    print(row("difference (paired, two processes' noise)", overhead))
    print(row("round trip - the server's own engine time", exact) + "   (target <= 2 ms)")
    print(row("cache hit: round trip, no engine", hit_ms))
    print(row('floor: mode "off" (pygls client+server, stdio)', floor_ms))
    print(f"memory: server RSS over {args.requests} requests cycling {len(cursors)} prompts (cache: 256)")
    print(
        f"  at start {rss_start / 1024:.1f} MiB, after the paired run (cache full) {rss_warm / 1024:.1f} MiB,"
    )
    change = 100 * (rss_end - rss_warm) / rss_warm
    print(f"  after {args.requests} more {rss_end / 1024:.1f} MiB: {change:+.1f}%   (target: within 5%)")
    print(
        f"  engine runs in the server: {stats['engineRuns']}; its mean bookkeeping around each"
        f" (JSON and stdio excluded): {timings['serverOverhead']:.3f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main())
