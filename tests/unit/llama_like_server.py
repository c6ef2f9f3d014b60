"""A real aiohttp server that answers as llama.cpp's ``llama-server`` does in the respects a repair
depends on, for faults a test cannot cause on the real one at will (its source,
``tools/server/server-context.cpp`` and ``server-task.cpp`` of the version the project pins, is
what is copied):

* ``/v1/completions`` takes a ``suffix`` field and ignores it (``usage.prompt_tokens`` is the
  prompt's alone); ``/infill`` fills in the middle (``input_prefix``, ``input_suffix``; answers
  ``content``, streamed as ``{"content", "stop"}`` events);
* ``slots`` rows run side by side, the others wait for a free slot; ``/props`` reports
  ``total_slots`` and each slot's ``n_ctx``;
* a prompt of ``n_ctx`` tokens or more is refused with 400 ``exceed_context_size_error``
  ("request (N tokens) exceeds the available context size (M tokens)"); with ``shared_ctx``, the
  slots share one context and a row that overflows it fails with "Context size has been exceeded."
  (an error event in a stream, a 500 whole), and so does every row running beside it (llama-server
  fails the whole batch whose decoding overflowed);
* streamed, text that may be the start of a stop sequence is held back, and at the token limit it
  is never sent (the whole answer keeps it);
* ``interrupt`` (llama-cpp-python's server's default ``interrupt_requests``; ``props`` False, it
  has no ``/props``): a request that has to wait ends the row that is streaming with ``[DONE]``
  and no finish reason.

A token is four characters (the last one shorter).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

OVERFLOW = {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}


def ntokens(text: str) -> int:
    return (len(text) + 3) // 4


def pieces(text: str) -> list[str]:
    """``text`` as the tokens the server writes: four characters each."""
    return [text[i : i + 4] for i in range(0, len(text), 4)]


@dataclass
class LlamaLike:
    answer: Callable[[str, str], str]  # (code before, code after) -> the model's text
    slots: int = 4
    n_ctx: int = 1024  # each slot's context
    shared_ctx: int | None = None  # one context the slots share (llama-server's default layout)
    interrupt: bool = False
    props: bool = True  # GET /props answered (llama-cpp-python's server has none)
    step_s: float = 0.002
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _ids: Any = field(default_factory=itertools.count)
    _gate: asyncio.Semaphore | None = None
    _streaming: set[asyncio.Event] = field(default_factory=set)  # a queued request sets them
    _in_use: int = 0  # tokens held in the shared context
    _active: set[asyncio.Event] = field(default_factory=set)  # the rows running, set when they fail
    most_at_once: int = 0  # rows generating side by side, at most
    props_asked: int = 0
    _running: int = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/infill", self._infill)
        if self.props:
            app.router.add_get("/props", self._props)
        return app

    async def _props(self, request: web.Request) -> web.Response:
        self.props_asked += 1
        return web.json_response(
            {
                "default_generation_settings": {"n_ctx": self.n_ctx, "params": {}},
                "total_slots": self.slots,
                "model_path": "model.gguf",
                "build_info": "b0-llama-like",
            }
        )

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((request.path, body))
        return await self._generate(request, body, body["prompt"], "", body.get("max_tokens", 16), oai=True)

    async def _infill(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((request.path, body))
        prompt = body.get("input_prefix", "") + body.get("input_suffix", "")
        return await self._generate(
            request, body, prompt, body.get("input_suffix", ""), body.get("n_predict", 16), oai=False,
            prefix=body.get("input_prefix", ""),
        )  # fmt: skip

    async def _generate(
        self,
        request: web.Request,
        body: dict[str, Any],
        prompt: str,
        suffix: str,
        limit: int,
        *,
        oai: bool,
        prefix: str | None = None,
    ) -> web.StreamResponse:
        n_prompt = ntokens(prompt)
        if n_prompt >= self.n_ctx:
            message = (
                f"request ({n_prompt} tokens) exceeds the available context size ({self.n_ctx} tokens), "
                "try increasing it"
            )
            error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
            return web.json_response({"error": error}, status=400)
        stream = bool(body.get("stream"))
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else stops
        text = self.answer(prompt if prefix is None else prefix, suffix)
        toks = pieces(text)[: max(1, limit)]
        finish = "length" if len(pieces(text)) > limit else "stop"
        ident = next(self._ids)
        head = {"id": f"cmpl-llama-{ident}", "object": "text_completion", "created": 1700000000 + ident,
                "model": "llama-like.gguf", "system_fingerprint": "b0-llama-like"}  # fmt: skip
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.slots)
        if self._gate.locked():
            for ev in list(self._streaming):
                if self.interrupt:
                    ev.set()
        async with self._gate:
            self._running += 1
            self.most_at_once = max(self.most_at_once, self._running)
            try:
                return await self._write(request, head, toks, finish, stops, stream, n_prompt, oai)
            finally:
                self._running -= 1

    async def _write(
        self,
        request: web.Request,
        head: dict[str, Any],
        toks: list[str],
        finish: str,
        stops: list[str],
        stream: bool,
        n_prompt: int,
        oai: bool,
    ) -> web.StreamResponse:
        held = 0  # tokens this row holds in the shared context
        failed = asyncio.Event()  # the shared context overflowed: every row running then fails
        self._active.add(failed)
        if self.shared_ctx is not None:
            if self._in_use + n_prompt > self.shared_ctx:
                self._overflow()
            else:
                self._in_use += n_prompt
                held = n_prompt
        try:
            if not stream:
                out = ""
                for tok in toks:
                    await asyncio.sleep(self.step_s)
                    out += tok
                    if self.shared_ctx is not None and not failed.is_set():
                        if self._in_use + 1 > self.shared_ctx:
                            self._overflow()
                        else:
                            self._in_use += 1
                            held += 1
                    if failed.is_set():
                        return web.json_response({"error": OVERFLOW}, status=500)
                reason = finish
                for s in stops:
                    if s in out:
                        out, reason = out[: out.index(s)], "stop"
                usage = {"prompt_tokens": n_prompt, "completion_tokens": len(toks),
                         "total_tokens": n_prompt + len(toks)}  # fmt: skip
                if oai:
                    choice = {"text": out, "index": 0, "logprobs": None, "finish_reason": reason}
                    return web.json_response({**head, "choices": [choice], "usage": usage, "timings": {}})
                return web.json_response(
                    {"content": out, "stop": True, "model": head["model"], "tokens_evaluated": n_prompt,
                     "tokens_predicted": len(toks), "stop_type": "limit" if reason == "length" else "eos",
                     "timings": {}}
                )  # fmt: skip
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            interrupted = asyncio.Event()
            self._streaming.add(interrupted)
            try:
                generated, sent = "", 0
                for i, tok in enumerate(toks):
                    await asyncio.sleep(self.step_s)
                    if request.transport is None or request.transport.is_closing():
                        return resp  # the client left: the row is cancelled
                    if interrupted.is_set():
                        await resp.write(b"data: [DONE]\n\n")
                        return resp
                    if self.shared_ctx is not None and not failed.is_set():
                        if self._in_use + 1 > self.shared_ctx:
                            self._overflow()
                        else:
                            self._in_use += 1
                            held += 1
                    if failed.is_set():
                        await resp.write(b"data: " + json.dumps({"error": OVERFLOW}).encode() + b"\n\n")
                        return resp
                    generated += tok
                    tail = generated[sent:]
                    hit = next((tail.index(s) for s in stops if s in tail), None)
                    last = i == len(toks) - 1
                    if hit is not None:
                        await self._event(resp, head, tail[:hit], None, oai)
                        await self._event(resp, head, "", "stop", oai, usage=(n_prompt, i + 1))
                        break
                    # text that may begin a stop sequence waits (and at the token limit is never sent)
                    if not any(_partial(tail, s) for s in stops):
                        await self._event(resp, head, tail, None, oai)
                        sent = len(generated)
                    if last:
                        await self._event(resp, head, "", finish, oai, usage=(n_prompt, i + 1))
                if oai:
                    await resp.write(b"data: [DONE]\n\n")
                return resp
            finally:
                self._streaming.discard(interrupted)
        finally:
            self._in_use -= held
            self._active.discard(failed)

    def _overflow(self) -> None:
        """llama-server fails every row of the batch whose decoding overflowed the context."""
        for row in self._active:
            row.set()

    async def _event(
        self,
        resp: web.StreamResponse,
        head: dict[str, Any],
        text: str,
        finish: str | None,
        oai: bool,
        usage: tuple[int, int] | None = None,
    ) -> None:
        if oai:
            event: dict[str, Any] = {
                **head,
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
            }
            if usage is not None:  # the last event: llama-server's carries usage and timings
                event["timings"] = {}
                event["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                                  "total_tokens": sum(usage)}  # fmt: skip
        else:
            event = {"content": text, "stop": finish is not None}
            if usage is not None:
                event.update(model=head["model"], tokens_evaluated=usage[0], tokens_predicted=usage[1],
                             stop_type="limit" if finish == "length" else "eos", timings={})  # fmt: skip
        await resp.write(b"data: " + json.dumps(event).encode() + b"\n\n")


def _partial(text: str, stop: str) -> bool:
    """Whether ``text`` ends with the start of ``stop`` (llama-server's partial stop match)."""
    return any(text.endswith(stop[:n]) for n in range(1, len(stop)))


@asynccontextmanager
async def llama_like(server: LlamaLike) -> AsyncIterator[str]:
    """``server`` on a free loopback port (handlers cancelled when their client goes away)."""
    runner = web.AppRunner(server.app(), handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
