"""The language server's memory under a typing user: many requests, most of them cancelled.

A real ``cctest-lsp`` process over stdio, driven by pygls's ``LanguageClient``, with the rule
backend (the model costs nothing, so what grows is the server's own). The documents are the
project's own source files; each request asks for an inline completion at a random cursor in
them, in windows of ``--window`` requests in flight at once, and ``--cancel`` of them (90% by
default) are cancelled with ``$/cancelRequest`` right after they are sent, as an editor does
while the user types on. Every request is preceded by an edit (``didChange``) of its document,
as typing does: a character typed at the top, then taken back, so the documents keep their size.

The server's RSS is read from ``/proc`` after a warm-up that fills the server's two bounded
tables with uncancelled requests (the result cache, 256 answers, at distinct cursors; the
answered-request table for acceptance reports, 4,096 request ids, with repeats the cache
answers), and then at every checkpoint; the figure is the change since the warm-up (target:
flat within 5%).

    python benchmarks/lsp_cancel_memory.py [--requests 10000,20000] [--cancel 0.9] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import random
from pathlib import Path
from typing import Any

from _lsp_session import start_session
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

import cctest

CACHE_SIZE = 256  # lsp_server's result cache
SERVED_SIZE = 4096  # lsp_server's table of answered requests


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def documents() -> dict[str, str]:
    files = sorted(Path(cctest.__file__).parent.rglob("*.py"))[:40]
    return {f.as_uri(): f.read_text(encoding="utf-8") for f in files}


def cursors(docs: dict[str, str], rng: random.Random, n: int) -> list[tuple[str, int, int]]:
    """``n`` random (uri, line, character) positions inside non-blank lines of the documents."""
    spots = [
        (uri, i, len(line))
        for uri, text in docs.items()
        for i, line in enumerate(text.split("\n"))
        if line.strip()
    ]
    picked = []
    for _ in range(n):
        uri, line, width = rng.choice(spots)
        picked.append((uri, line, rng.randint(0, width)))
    return picked


class Driver:
    """One client, one server; sends windows of requests and cancels most of them."""

    def __init__(self, client: LanguageClient, docs: dict[str, str], cancel: float, seed: int) -> None:
        self.client = client
        self.docs = docs
        self.cancel = cancel
        self.rng = random.Random(seed)
        self.versions = dict.fromkeys(docs, 1)
        self.answered = 0
        self.cancelled = 0

    def edit(self, uri: str) -> None:
        """Type one character at the top of ``uri``, or take the one typed before back."""
        self.versions[uri] += 1
        typed = self.versions[uri] % 2 == 0
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[
                    lsp.TextDocumentContentChangePartial(
                        range=lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(0, 0 if typed else 1)),
                        text="#" if typed else "",
                    )
                ],
            )
        )

    async def run(self, spots: list[tuple[str, int, int]], cancel: float, window: int) -> None:
        for start in range(0, len(spots), window):
            futures = []
            for i, (uri, line, character) in enumerate(spots[start : start + window]):
                self.edit(uri)
                params = lsp.InlineCompletionParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    position=lsp.Position(line=line, character=character),
                    context=lsp.InlineCompletionContext(
                        trigger_kind=lsp.InlineCompletionTriggerKind.Automatic
                    ),
                )
                msg_id = f"r{start + i}"
                future = self.client.protocol.send_request(
                    lsp.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=msg_id
                )
                futures.append(asyncio.wrap_future(future))
                if self.rng.random() < cancel:
                    self.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
            for outcome in await asyncio.gather(*futures, return_exceptions=True):
                if isinstance(outcome, BaseException):
                    self.cancelled += 1
                else:
                    self.answered += 1


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--requests", default="10000,20000", help="checkpoints, comma-separated (default 10000,20000)"
    )
    ap.add_argument("--cancel", type=float, default=0.9, help="fraction cancelled (default 0.9)")
    ap.add_argument("--window", type=int, default=20, help="requests in flight at once (default 20)")
    ap.add_argument("--mutants", type=int, default=4, help="k (default 4)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    checkpoints = sorted(int(n) for n in args.requests.split(","))

    docs = documents()
    options = {"backend": "rules", "mutants": args.mutants, "defectLog": "/tmp/cctest-bench-cancel.sqlite3"}
    client = LanguageClient("lsp-cancel-memory", "1")

    @client.feature("cctest/verdict")
    def _verdict(ls: LanguageClient, params: Any) -> None:
        pass

    pid = await start_session(client, options, docs, "error")
    driver = Driver(client, docs, args.cancel, args.seed)
    rss_start = rss_kib(pid)
    # warm-up: uncancelled requests at distinct cursors, more than the cache holds, then repeats
    # of some of them (the cache answers) until the table of answered requests is full too
    distinct = cursors(docs, driver.rng, 2 * CACHE_SIZE)
    await driver.run(distinct, 0.0, args.window)
    repeats = distinct[-CACHE_SIZE // 4 :]
    await driver.run([repeats[i % len(repeats)] for i in range(SERVED_SIZE)], 0.0, args.window)
    await driver.run(cursors(docs, driver.rng, 1000), args.cancel, args.window)
    rss_warm = rss_kib(pid)
    print(
        f"cctest-lsp memory, rule backend, k={args.mutants}, {len(docs)} documents, "
        f"{args.window} requests in flight, {args.cancel:.0%} cancelled, one run"
    )
    print(
        f"  RSS at start {rss_start / 1024:.1f} MiB;"
        f" after the warm-up (tables full) {rss_warm / 1024:.1f} MiB"
    )
    done = 0
    for n in checkpoints:
        await driver.run(cursors(docs, driver.rng, n - done), args.cancel, args.window)
        done = n
        rss = rss_kib(pid)
        print(
            f"  after {n:>6} more requests: {rss / 1024:6.1f} MiB, "
            f"{100 * (rss - rss_warm) / rss_warm:+5.1f}% since the warm-up   (target: within 5%)"
        )
    print(f"  answered {driver.answered}, cancelled {driver.cancelled}")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


if __name__ == "__main__":
    asyncio.run(main())
