"""Upstreams for ``cctest proxy``'s tests, each a real aiohttp server on a loopback port: one that
speaks Ollama's API, one that speaks TGI's, one OpenAI-shaped, and ones that fail, stall or drop
the connection. Each records what it was asked (bodies and headers), so a test can check what
the proxy sent upstream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from cctest.proxy import ProxyConfig, start_proxy

GOOD = "total = total + 1\n"  # what every row but the odd one completes
ODD = "import antigravity  # unlike the others\n"


@dataclass
class Seen:
    """What an upstream was asked."""

    requests: list[tuple[str, str, Any, dict[str, str]]] = field(
        default_factory=list
    )  # method, path, body, headers
    cancelled: int = 0
    started: asyncio.Event = field(default_factory=asyncio.Event)

    def bodies(self, path: str) -> list[Any]:
        return [b for _, p, b, _ in self.requests if p == path]


def _completion(prompt: str, odd: set[str]) -> str:
    return ODD if prompt in odd else GOOD


async def _note(request: web.Request, seen: Seen) -> Any:
    raw = await request.read()
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = raw
    seen.requests.append((request.method, request.path, body, dict(request.headers)))
    return body


def ollama_app(seen: Seen, odd: set[str]) -> web.Application:
    """Ollama's /api/generate (streamed NDJSON by default), /api/chat, /api/tags, /api/show."""

    async def generate(request: web.Request) -> web.StreamResponse:
        body = await _note(request, seen)
        if not isinstance(body, dict) or "model" not in body:
            return web.json_response({"error": "model is required"}, status=400)
        text = _completion(body.get("prompt", ""), odd)
        done = {
            "model": body["model"],
            "created_at": "2025-01-01T00:00:00Z",
            "response": "",
            "done": True,
            "done_reason": "stop",
            "context": [1, 2, 3],
            "total_duration": 1,
            "eval_count": 3,
        }
        if body.get("stream") is False:
            return web.json_response({**done, "response": text})
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        for piece in (text[:5], text[5:]):
            line = {
                "model": body["model"],
                "created_at": "2025-01-01T00:00:00Z",
                "response": piece,
                "done": False,
            }
            await resp.write(json.dumps(line).encode() + b"\n")
        await resp.write(json.dumps(done).encode() + b"\n")
        await resp.write_eof()
        return resp

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await _note(request, seen)
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        for i, word in enumerate(["Hello", " there"]):
            line = {
                "model": body["model"],
                "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": word},
                "done": False,
            }
            await resp.write(json.dumps(line).encode() + b"\n")
            await asyncio.sleep(0.01 * i)
        last = {
            "model": body["model"],
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
        }
        await resp.write(json.dumps(last).encode() + b"\n")
        await resp.write_eof()
        return resp

    async def tags(request: web.Request) -> web.Response:
        await _note(request, seen)
        return web.json_response(
            {
                "models": [
                    {
                        "name": "qwen2.5-coder:1.5b",
                        "model": "qwen2.5-coder:1.5b",
                        "modified_at": "2025-01-01T00:00:00Z",
                        "size": 1,
                        "digest": "abc",
                        "details": {"format": "gguf", "family": "qwen2"},
                    }
                ]
            }
        )

    async def show(request: web.Request) -> web.Response:
        await _note(request, seen)
        return web.json_response(
            {
                "modelfile": "FROM x",
                "template": "{{ .Prompt }}",
                "details": {"family": "qwen2"},
                "model_info": {},
            }
        )

    app = web.Application()
    app.router.add_post("/api/generate", generate)
    app.router.add_post("/api/chat", chat)
    app.router.add_get("/api/tags", tags)
    app.router.add_post("/api/show", show)
    return app


def tgi_app(seen: Seen, odd: set[str]) -> web.Application:
    """TGI's /generate, /generate_stream (server-sent events) and /info; errors as TGI sends them."""

    async def generate(request: web.Request) -> web.Response:
        body = await _note(request, seen)
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), str):
            return web.json_response(
                {"error": "Input validation error: `inputs` missing", "error_type": "validation"}, status=422
            )
        text = _completion(body["inputs"], odd)
        out: dict[str, Any] = {"generated_text": text}
        if (body.get("parameters") or {}).get("details"):
            out["details"] = {"finish_reason": "eos_token", "generated_tokens": 3, "seed": None}
        return web.json_response(out)

    async def generate_stream(request: web.Request) -> web.StreamResponse:
        body = await _note(request, seen)
        text = _completion(body["inputs"], odd)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        tokens = [text[:6], text[6:]]
        for i, t in enumerate(tokens, start=1):
            last = i == len(tokens)
            event = {
                "index": i,
                "token": {"id": i, "text": t, "logprob": -0.1, "special": False},
                "generated_text": text if last else None,
                "details": {"finish_reason": "eos_token", "generated_tokens": 2, "seed": None}
                if last
                else None,
            }
            await resp.write(b"data:" + json.dumps(event).encode() + b"\n\n")
        await resp.write_eof()
        return resp

    async def info(request: web.Request) -> web.Response:
        await _note(request, seen)
        return web.json_response({"model_id": "bigcode/starcoder2-3b", "max_input_tokens": 4096})

    app = web.Application()
    app.router.add_post("/generate", generate)
    app.router.add_post("/generate_stream", generate_stream)
    app.router.add_get("/info", info)
    return app


def openai_app(seen: Seen, odd: set[str]) -> web.Application:
    """OpenAI's /v1/completions (a list of prompts answered with one choice each) and /v1/models."""

    async def completions(request: web.Request) -> web.Response:
        body = await _note(request, seen)
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        choices = [
            {"index": i, "text": _completion(p, odd), "finish_reason": "stop", "logprobs": None}
            for i, p in enumerate(prompts)
        ]
        return web.json_response(
            {
                "id": "cmpl-1",
                "object": "text_completion",
                "created": 1,
                "model": body.get("model", "m"),
                "choices": choices,
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    async def models(request: web.Request) -> web.Response:
        await _note(request, seen)
        return web.Response(
            body=b'{"object": "list", "data": [{"id": "m", "object": "model"}]}',
            headers={"Content-Type": "application/json", "X-Upstream": "yes"},
        )

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/v1/models", models)
    return app


def faulty_app(seen: Seen, how: str) -> web.Application:
    """Every request: ``fail`` (a 500 in OpenAI's error shape), ``stall`` (never answers; counts
    the requests cancelled when the proxy gives them up) or ``drop`` (closes the connection)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await _note(request, seen)
        if how == "fail":
            return web.json_response(
                {
                    "error": {
                        "message": "the model crashed",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                },
                status=500,
            )
        if how == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        seen.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen.cancelled += 1
            raise
        return web.Response()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    return app


@asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """``app`` on a free loopback port (handlers cancelled when their client goes away)."""
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def proxying(upstream: str, **config: Any) -> AsyncIterator[tuple[str, Any]]:
    """``cctest proxy`` in front of ``upstream``; yields its URL and its ``Proxy``."""
    from cctest.config import Settings
    from cctest.proxy.server import PROXY_KEY

    config.setdefault("settings", Settings())  # the default ``decide_after``: rows streamed, decided early
    runner, url = await start_proxy(ProxyConfig(upstream, **config))
    try:
        yield url, runner.app[PROXY_KEY]
    finally:
        await runner.cleanup()
