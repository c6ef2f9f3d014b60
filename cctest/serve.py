"""An OpenAI-compatible completion server over a local model (``cctest serve``).

It lets several editors share one loaded model, and it is the real server the HTTP backend is
tested against. Endpoints:

* ``POST /v1/completions``: ``prompt`` (a string or a list of strings), ``max_tokens`` (16 by
  default, as OpenAI), ``temperature``, ``top_p``, ``stop`` (a string or a list), ``model``
  (accepted, not checked), ``n`` (1 only), ``stream`` (false only); answers OpenAI's
  ``text_completion`` object with one choice per prompt and token usage;
* ``GET /v1/models``: the one model served; ``GET /health``: ``{"status": "ok"}``.

Concurrent requests share ``generate`` calls: a collector takes the first waiting request, waits a
few milliseconds for more (and whatever queued while the model was busy), groups them by
generation options and runs each group as ONE batched ``generate`` in a worker thread, so the
event loop keeps accepting requests. The server completes like an OpenAI endpoint: it stops at
EOS, a ``stop`` sequence or ``max_tokens``, not at cctest's code boundaries (clients trim).
Bad requests get a 400 with an OpenAI-style error object; a failing model a 500/503; the server
keeps running either way.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .backends.base import GenerationOptions
from .backends.hf import Generation, HFBackend
from .errors import BackendError, BackendOutOfMemory

log = logging.getLogger(__name__)


class BadRequest(ValueError):
    """A request the server cannot serve; its message goes back to the client."""


@dataclass
class _Item:
    prompts: list[str]
    options: GenerationOptions
    future: asyncio.Future[list[Generation | BackendError]]


@dataclass
class BatchStats:
    batches: int = 0  # generate calls
    rows: int = 0  # prompts completed
    largest: int = 0  # most prompts in one generate call
    sizes: list[int] = field(default_factory=list)


class Batcher:
    """Collects concurrent requests into shared batched ``generate`` calls."""

    def __init__(self, backend: HFBackend, *, max_batch: int = 32, wait_ms: float = 5.0) -> None:
        self.backend = backend.with_options(boundaries=False)  # an OpenAI server does not trim code
        self.max_batch = max(1, max_batch)
        self.wait = max(0.0, wait_ms) / 1000
        self.stats = BatchStats()
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="cctest-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def submit(
        self, prompts: Sequence[str], options: GenerationOptions
    ) -> list[Generation | BackendError]:
        future: asyncio.Future[list[Generation | BackendError]] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Item(list(prompts), options, future))
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            items = [await self._queue.get()]
            rows = len(items[0].prompts)
            deadline = loop.time() + self.wait
            while rows < self.max_batch:
                try:
                    item = self._queue.get_nowait()  # whatever queued while the model was busy
                except asyncio.QueueEmpty:
                    left = deadline - loop.time()
                    if left <= 0:
                        break
                    try:
                        item = await asyncio.wait_for(self._queue.get(), left)
                    except asyncio.TimeoutError:
                        break
                items.append(item)
                rows += len(item.prompts)
            groups: dict[GenerationOptions, list[_Item]] = {}
            for item in items:
                if not item.future.done():  # a client that went away is not served
                    groups.setdefault(item.options, []).append(item)
            for options, group in groups.items():
                await self._generate(options, group)

    async def _generate(self, options: GenerationOptions, group: list[_Item]) -> None:
        prompts = [p for item in group for p in item.prompts]
        try:
            results = await asyncio.to_thread(self.backend.generate_safe, prompts, options)
        except Exception as exc:  # a bug or a broken model: fail these requests, keep serving
            log.exception("generate failed on a batch of %d prompts", len(prompts))
            for item in group:
                if not item.future.done():
                    item.future.set_exception(exc)
            return
        self.stats.batches += 1
        self.stats.rows += len(prompts)
        self.stats.largest = max(self.stats.largest, len(prompts))
        self.stats.sizes.append(len(prompts))
        start = 0
        for item in group:
            part = results[start : start + len(item.prompts)]
            start += len(item.prompts)
            if not item.future.done():
                item.future.set_result(part)


BATCHER_KEY = web.AppKey("batcher", Batcher)
MODEL_KEY = web.AppKey("model_id", str)


def parse_request(body: Any) -> tuple[list[str], GenerationOptions]:
    """Prompts and options of a /v1/completions body, or BadRequest saying what is wrong."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object.")
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        prompts = [prompt]
    elif isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        prompts = list(prompt)
    else:
        raise BadRequest("'prompt' must be a string or a non-empty list of strings.")
    max_tokens = body.get("max_tokens", 16)
    if max_tokens is None:
        max_tokens = 16
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise BadRequest("'max_tokens' must be a positive integer.")
    temperature = body.get("temperature")
    if temperature is None:
        temperature = 1.0  # OpenAI's default; cctest's HTTP backend always sends its own
    if not isinstance(temperature, int | float) or isinstance(temperature, bool) or not 0 <= temperature <= 2:
        raise BadRequest("'temperature' must be a number from 0 to 2.")
    top_p = body.get("top_p", 1.0)
    if top_p is None:
        top_p = 1.0
    if not isinstance(top_p, int | float) or isinstance(top_p, bool) or not 0 < top_p <= 1:
        raise BadRequest("'top_p' must be a number above 0 and at most 1.")
    stop = body.get("stop")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, str):
        stops = (stop,)
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = tuple(stop)
    else:
        raise BadRequest("'stop' must be a string or a list of strings.")
    if body.get("n", 1) not in (1, None):
        raise BadRequest("only n = 1 is supported.")
    if body.get("stream"):
        raise BadRequest("streaming is not supported; send stream: false.")
    if body.get("echo"):
        raise BadRequest("echo is not supported.")
    options = GenerationOptions(
        max_new_tokens=max_tokens, temperature=float(temperature), top_p=float(top_p), stop=stops
    )
    return prompts, options


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": kind, "code": status}}, status=status)


async def completions(request: web.Request) -> web.Response:
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "the request body is not JSON.", "invalid_request_error")
    try:
        prompts, options = parse_request(body)
    except BadRequest as exc:
        return _error(400, str(exc), "invalid_request_error")
    try:
        results = await request.app[BATCHER_KEY].submit(prompts, options)
    except Exception:  # logged by the batcher
        return _error(500, "the model failed on this request; see the server log.", "server_error")
    failed = [r for r in results if isinstance(r, BackendError)]
    if failed:
        status = 503 if isinstance(failed[0], BackendOutOfMemory) else 500
        return _error(status, str(failed[0]), "server_error")
    gens = [r for r in results if isinstance(r, Generation)]
    prompt_tokens = sum(g.prompt_tokens for g in gens)
    completion_tokens = sum(g.completion_tokens for g in gens)
    return web.json_response(
        {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": request.app[MODEL_KEY],
            "choices": [
                {"index": i, "text": g.text, "finish_reason": g.finish_reason, "logprobs": None}
                for i, g in enumerate(gens)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


async def models(request: web.Request) -> web.Response:
    model_id = request.app[MODEL_KEY]
    return web.json_response(
        {"object": "list", "data": [{"id": model_id, "object": "model", "created": 0, "owned_by": "cctest"}]}
    )


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "model": request.app[MODEL_KEY]})


def create_app(backend: HFBackend, *, max_batch: int = 32, wait_ms: float = 5.0) -> web.Application:
    """The aiohttp application serving ``backend`` (already loaded)."""
    app = web.Application(client_max_size=8 * 1024 * 1024)
    batcher = Batcher(backend, max_batch=max_batch, wait_ms=wait_ms)
    app[BATCHER_KEY] = batcher
    app[MODEL_KEY] = backend.path.name

    async def lifecycle(app: web.Application) -> Any:
        batcher.start()
        yield
        await batcher.stop()

    app.cleanup_ctx.append(lifecycle)
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", health)
    return app


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def start_server(
    backend: HFBackend, host: str = "127.0.0.1", port: int = 0, **app_options: Any
) -> tuple[web.AppRunner, str]:
    """Start serving in the running event loop; returns the runner (``await runner.cleanup()``
    stops it) and the base URL, with the real port when ``port`` is 0."""
    runner = web.AppRunner(create_app(backend, **app_options), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0]
    return runner, _url(host, int(bound[1]))


def run(backend: HFBackend, host: str = "127.0.0.1", port: int = 8000, **app_options: Any) -> None:
    """Serve until SIGINT or SIGTERM, then stop cleanly (the command's main loop)."""

    async def main() -> None:
        runner, url = await start_server(backend, host, port, **app_options)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):  # not on this platform / thread
                pass
        print(f"cctest serve: {backend.describe()} listening on {url}/v1/completions", flush=True)
        if host not in ("127.0.0.1", "localhost", "::1"):
            print(
                f"cctest serve: listening on {host}: anyone who can reach this machine can use the model.",
                file=sys.stderr,
                flush=True,
            )
        try:
            await stop.wait()
        finally:
            await runner.cleanup()
        print("cctest serve: stopped.", flush=True)

    asyncio.run(main())


__all__ = ["BadRequest", "Batcher", "create_app", "parse_request", "run", "start_server"]
