"""A real aiohttp server that streams a fake model's tokens in vLLM's (OpenAI), Ollama's or
TGI's stream format, one event per token, and counts the tokens it generates per stream. Before
each token it checks the connection, and stops generating once the client has closed it, as
those servers abort a request whose client left."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

from aiohttp import web


def tokens_for(prompt: str, n: int) -> list[str]:
    """The fake model's greedy tokens: the prompt's last word, numbered (``w0 w1 ...``)."""
    word = prompt.split()[-1] if prompt.split() else "x"
    return [f" {word}{i}" for i in range(n)]


@dataclass
class Counts:
    written: list[int] = field(default_factory=list)  # per stream, in the order they came
    plain: int = 0  # requests answered whole (no stream)


COUNTS = web.AppKey("counts", Counts)


def make_app(
    fmt: str, *, step_s: float = 0.003, refuse: bool = False, whole: bool = False
) -> web.Application:
    counts = Counts()

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if fmt == "tgi":
            prompt, budget = body["inputs"], body["parameters"]["max_new_tokens"]
            stream = request.path.endswith("_stream")
        elif fmt == "ollama":
            prompt, budget, stream = body["prompt"], body["options"]["num_predict"], body.get("stream")
        else:
            prompt, budget, stream = body["prompt"], body["max_tokens"], body.get("stream")
        toks = tokens_for(prompt, budget)
        if stream and refuse:
            return web.json_response({"error": {"message": "streaming is not supported"}}, status=400)
        if not stream or whole:
            counts.plain += 1
            text = "".join(toks)
            if fmt == "tgi":
                return web.json_response({"generated_text": text})
            if fmt == "ollama":
                return web.json_response({"response": text, "done": True})
            return web.json_response({"choices": [{"index": 0, "text": text, "finish_reason": "length"}]})
        resp = web.StreamResponse()
        resp.content_type = "application/x-ndjson" if fmt == "ollama" else "text/event-stream"
        await resp.prepare(request)
        me = len(counts.written)
        counts.written.append(0)
        for i, tok in enumerate(toks):
            await asyncio.sleep(step_s)
            transport = request.transport
            if transport is None or transport.is_closing():
                break  # vLLM, Ollama and TGI abort a request whose client left
            counts.written[me] += 1
            last = i == len(toks) - 1
            if fmt == "tgi":
                event = {
                    "token": {"id": i, "text": tok, "logprob": -0.1, "special": False},
                    "generated_text": "".join(toks) if last else None,
                    "details": {"finish_reason": "length", "generated_tokens": len(toks)} if last else None,
                }
                line = f"data:{json.dumps(event)}\n\n"
            elif fmt == "ollama":
                event = {"model": "m", "response": tok, "done": False}
                line = json.dumps(event) + "\n"
            else:
                event = {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "choices": [
                        {
                            "index": 0,
                            "text": tok,
                            "logprobs": None,
                            "finish_reason": "length" if last else None,
                        }
                    ],
                }
                line = f"data: {json.dumps(event)}\n\n"
            try:
                await resp.write(line.encode())
            except ConnectionError:
                break
        else:
            if fmt == "ollama":
                last_line = {"model": "m", "response": "", "done": True, "done_reason": "length"}
                await resp.write(json.dumps(last_line).encode() + b"\n")
            elif fmt == "openai":
                await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app[COUNTS] = counts
    path = {"openai": "/v1/completions", "ollama": "/api/generate", "tgi": "/generate"}[fmt]
    app.router.add_post(path, handle)
    if fmt == "tgi":
        app.router.add_post("/generate_stream", handle)
    return app


async def start(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


def counts_of(app: web.Application) -> Counts:
    return app[COUNTS]
