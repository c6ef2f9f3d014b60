"""``cctest proxy`` in hostile hands, in front of loopback aiohttp servers: lone surrogates in the
plugin's request and in the upstream's answer, a ``stream_options`` that is not an object, a
plugin that leaves a streamed repair, a chosen row whose upstream stream breaks after the
decision, and request paths that climb out of the upstream's base path."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from proxy_helpers import GOOD, Seen, faulty_app, openai_app, proxying, serving

from cctest.config import Settings
from cctest.defects import DefectStore

BEFORE = "def count(items):\n    total = 0\n    for item in items:\n        "
AFTER = "\n    return total\n"
WAIT = 60.0  # the most a test waits for something that must happen; never a measure


def _settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(mutants=3, defect_log=str(tmp_path / "d.sqlite3"), log_all=True, **extra)


def _records(settings: Settings) -> list[Any]:
    with DefectStore(settings.defect_log_path(), create=False) as store:
        records, _ = store.list()
    return list(records)


def _sse_texts(payload: bytes) -> tuple[str, list[Any]]:
    """The text of an OpenAI stream and its events; fails unless it ends with ``[DONE]``."""
    lines = [x for x in payload.decode().split("\n\n") if x.strip()]
    assert lines and lines[-1] == "data: [DONE]", payload[-300:]
    events = [json.loads(x[5:]) for x in lines[:-1]]
    return "".join(c["text"] for e in events for c in e["choices"]), events


# -- F1: lone surrogates ----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("field", ["model", "suffix", "prompt"], ids=["in-model", "in-suffix", "in-prompt"])
async def test_a_lone_surrogate_in_the_request_is_made_safe_and_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, field: str, stream: bool
) -> None:
    caplog.set_level(logging.DEBUG)
    body: dict[str, Any] = {"model": "m", "prompt": BEFORE, "suffix": AFTER, "max_tokens": 16}
    body[field] += "\ud800"
    body["stream"] = stream
    raw = json.dumps(body).encode()  # the escape "\ud800" on the wire, as JSON allows
    assert b"\\ud800" in raw
    s = _settings(tmp_path)
    async with (
        serving(openai_app(Seen(), odd={BEFORE})) as up,
        proxying(up, settings=s) as (url, proxy),
        aiohttp.ClientSession() as session,
    ):
        headers = {"Content-Type": "application/json"}
        async with session.post(f"{url}/v1/completions", data=raw, headers=headers) as r:
            status, payload = r.status, await r.read()
        await proxy.drain()
    assert status == 200, payload[:500]
    text = _sse_texts(payload)[0] if stream else json.loads(payload)["choices"][0]["text"]
    assert text.strip()
    (record,) = _records(s)  # recorded, with the surrogate replaced where it entered
    if field == "model":
        assert record.settings["model_name"] == "m\ufffd"
    assert "Traceback" not in caplog.text and "never retrieved" not in caplog.text


def _odd_ids_app(seen: Seen) -> web.Application:
    """An OpenAI server whose answers carry lone surrogates in ``id`` and ``model``."""

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.requests.append((request.method, request.path, body, dict(request.headers)))
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        choices = [{"index": i, "text": GOOD, "finish_reason": "stop"} for i in range(len(prompts))]
        head = '{"id": "cmpl-\\ud800", "object": "text_completion", "created": 1, "model": "m\\udfff"'
        if body.get("stream"):
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            event = head + ', "choices": ' + json.dumps(choices) + "}"
            await resp.write(f"data: {event}\n\ndata: [DONE]\n\n".encode())
            await resp.write_eof()
            return resp
        text = head + ', "choices": ' + json.dumps(choices) + ', "usage": {"total_tokens": 2}}'
        return web.Response(text=text, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    return app


@pytest.mark.parametrize("decide_after", [0, Settings().decide_after])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_lone_surrogate_in_the_upstreams_answer_is_made_safe(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stream: bool, decide_after: int
) -> None:
    caplog.set_level(logging.DEBUG)
    s = _settings(tmp_path, decide_after=decide_after)
    body = {"model": "m", "prompt": BEFORE, "suffix": AFTER, "max_tokens": 16, "stream": stream}
    async with (
        serving(_odd_ids_app(Seen())) as up,
        proxying(up, settings=s) as (url, proxy),
        aiohttp.ClientSession() as session,
    ):
        async with session.post(f"{url}/v1/completions", json=body) as r:
            status, payload = r.status, await r.read()
        await proxy.drain()
    assert status == 200, payload[:500]
    if stream:
        text, events = _sse_texts(payload)
        assert not any("\\ud800" in json.dumps(e) or "\\udfff" in json.dumps(e) for e in events)
    else:
        answer = json.loads(payload)
        text = answer["choices"][0]["text"]
        assert "\ud800" not in answer["id"] and "\udfff" not in answer["model"]
    assert text == GOOD
    assert len(_records(s)) == 1
    assert "Traceback" not in caplog.text and "never retrieved" not in caplog.text


def _nested_app(depth: int, streamed: bool) -> web.Application:
    """An OpenAI server whose answers carry, beside the completion, a field nested ``depth`` deep
    (within what the JSON parser reads, beyond what a recursive walk of it may go): in each stream
    event, or in a whole answer to a streamed request."""
    extra = "[" * depth + "]" * depth

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        choices = json.dumps(
            [{"index": i, "text": GOOD, "finish_reason": "stop"} for i in range(len(prompts))]
        )
        answer = '{"id": "cmpl-1", "object": "text_completion", "model": "m", "choices": ' + choices
        if body.get("stream") and streamed:
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            await resp.write(f'data: {answer}, "x": {extra}}}\n\ndata: [DONE]\n\n'.encode())
            await resp.write_eof()
            return resp
        return web.Response(text=answer + ', "x": ' + extra + "}", content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    return app


@pytest.mark.parametrize("depth", [600, 100_000])
@pytest.mark.parametrize("streamed", [True, False], ids=["events", "whole"])
async def test_an_upstream_answer_nested_too_deeply_is_a_failed_row_not_a_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, streamed: bool, depth: int
) -> None:
    """Every row's answer holds a field nested deeply: made safe without recursion where the parser
    read it, or, beyond the parser, a row that failed as an answer without a completion does (the
    plugin then gets the upstream's own answer); never a traceback or a row left hanging until the
    deadline."""
    caplog.set_level(logging.DEBUG)
    body = {"model": "m", "prompt": BEFORE, "suffix": AFTER, "max_tokens": 16, "stream": True}
    async with (
        serving(_nested_app(depth, streamed)) as up,
        proxying(up, settings=_settings(tmp_path)) as (url, proxy),
        aiohttp.ClientSession() as session,
    ):
        async with session.post(f"{url}/v1/completions", json=body) as r:
            status, payload = r.status, await r.read()
        await proxy.drain()
    assert status == 200, payload[:300]  # the repair's, or the upstream's own passed through
    if depth < 1000:  # read, made safe and repaired
        assert _sse_texts(payload)[0] == GOOD
    else:  # the upstream's own answer to the plugin's request, passed through as it came
        assert json.dumps(GOOD)[1:-1].encode() in payload
    assert "RecursionError" not in caplog.text and "Traceback" not in caplog.text
    assert "never retrieved" not in caplog.text


# -- F2: stream_options ------------------------------------------------------------------------


@pytest.mark.parametrize("options", ["yes", [True], 5, True])
async def test_stream_options_that_is_not_an_object_is_a_400_in_openais_shape(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, options: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    seen = Seen()
    body = {"model": "m", "prompt": BEFORE, "suffix": AFTER, "max_tokens": 16, "stream": True,
            "stream_options": options}  # fmt: skip
    async with (
        serving(openai_app(seen, odd=set())) as up,
        proxying(up, settings=_settings(tmp_path)) as (url, _),
        aiohttp.ClientSession() as session,
    ):
        async with session.post(f"{url}/v1/completions", json=body) as r:
            status, data = r.status, await r.json()
    assert status == 400 and set(data["error"]) == {"message", "type", "param", "code"}, data
    assert "stream_options" in data["error"]["message"] and data["error"]["type"] == "invalid_request_error"
    assert not seen.requests  # refused before anything went upstream
    assert "Traceback" not in caplog.text


# -- a streaming upstream for F3 and F4 -------------------------------------------------------

LINE = ["v", "0", " = ", "1", "\n", "        "]  # every row the same code: no row is an outlier


class Lines:
    """An OpenAI server that streams every row as the same lines, one event per token, and counts
    the streams open; ``cut_after`` tokens into each, it ``reset`` s the connection, ends the
    stream cleanly but unfinished (``eof``: no finish_reason, no [DONE]) or ``stall`` s."""

    def __init__(self, budget: int, step_s: float, cut_after: int | None = None, how: str = "") -> None:
        self.budget, self.step_s, self.cut_after, self.how = budget, step_s, cut_after, how
        self.open = 0
        self.streams = 0
        self.written: list[int] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/completions", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):  # the plugin's own request, passed through: answered whole
            choice = {"index": 0, "text": "plain\n", "finish_reason": "stop"}
            return web.json_response({"id": "own", "object": "text_completion", "choices": [choice]})
        self.open += 1
        self.streams += 1
        me = len(self.written)
        self.written.append(0)
        try:
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for i in range(min(self.budget, body["max_tokens"])):
                if i == self.cut_after:
                    if self.how == "reset":
                        assert request.transport is not None
                        request.transport.close()  # no chunked terminator: a broken answer
                        return resp
                    if self.how == "eof":
                        await resp.write_eof()  # a clean end, without a finish or [DONE]
                        return resp
                    await asyncio.sleep(3600)  # stall
                await asyncio.sleep(self.step_s)
                transport = request.transport
                if transport is None or transport.is_closing():
                    break  # as vLLM, Ollama and TGI abort a request whose client left
                choice = {"index": 0, "text": LINE[i % len(LINE)], "finish_reason": None}
                event = {"id": "cmpl-1", "object": "text_completion", "model": "m", "choices": [choice]}
                try:
                    await resp.write(f"data: {json.dumps(event)}\n\n".encode())
                except ConnectionError:
                    break
                self.written[me] += 1
            return resp
        finally:
            self.open -= 1


async def _until(condition: Any, what: str) -> None:
    for _ in range(int(WAIT / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(what)


# -- F3: a plugin that leaves a streamed repair -----------------------------------------------


async def test_a_plugin_that_leaves_a_streamed_repair_closes_every_upstream_stream(tmp_path: Path) -> None:
    """The plugin reads the first line of the repaired stream, then goes: the chosen row's
    upstream stream (and every other) is closed, not read on to its (distant) end."""
    server = Lines(budget=100_000, step_s=0.01)
    body = {"model": "m", "prompt": BEFORE, "max_tokens": 100_000, "temperature": 0, "stream": True}
    s = _settings(tmp_path, timeout=3600)  # no deadline ends the rows before the test does
    async with serving(server.app()) as up, proxying(up, settings=s) as (url, _):
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{url}/v1/completions", json=body) as r:
                assert r.status == 200
                first = await asyncio.wait_for(r.content.readline(), WAIT)
                assert first.startswith(b"data: ")
            # leaving the block closes the plugin's connection
        await _until(lambda: server.open == 0, f"{server.open} upstream streams still open")
    assert server.streams == 4 and max(server.written) < 100_000, server.written


async def test_a_plugin_that_leaves_before_the_decision_cancels_every_row(tmp_path: Path) -> None:
    seen = Seen()

    body = {"model": "m", "prompt": BEFORE, "suffix": AFTER, "max_tokens": 16, "stream": True}
    async with (
        serving(faulty_app(seen, "stall")) as up,
        proxying(up, settings=_settings(tmp_path, timeout=600)) as (url, _),
        aiohttp.ClientSession() as session,
    ):
        request = asyncio.create_task(session.post(f"{url}/v1/completions", json=body))
        await asyncio.wait_for(seen.started.wait(), WAIT)
        await _until(lambda: len(seen.requests) == 4, "not every row went upstream")
        request.cancel()  # the plugin goes away (a newer keystroke)
        with pytest.raises(asyncio.CancelledError):
            await request
        await _until(lambda: seen.cancelled == 4, f"{seen.cancelled} of 4 rows cancelled")


# -- F4: the chosen row's upstream breaks after the decision ----------------------------------


@pytest.mark.parametrize("how", ["reset", "eof", "stall"])
async def test_a_chosen_row_cut_after_the_decision_ends_the_streamed_answer_unfinished(
    tmp_path: Path, how: str
) -> None:
    server = Lines(budget=200, step_s=0.005, cut_after=30, how=how)
    body = {"model": "m", "prompt": BEFORE, "max_tokens": 200, "temperature": 0, "stream": True}
    s = _settings(tmp_path, timeout=5 if how == "stall" else 60)
    received = b""
    async with serving(server.app()) as up, proxying(up, settings=s) as (url, _):
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{url}/v1/completions", json=body) as r:
                assert r.status == 200  # the stream began at the decision
                with pytest.raises(aiohttp.ClientPayloadError):
                    async for chunk in r.content.iter_any():
                        received += chunk
    assert b"[DONE]" not in received and b'"finish_reason": "stop"' not in received


@pytest.mark.parametrize("how", ["reset", "eof", "stall"])
async def test_a_chosen_row_cut_after_the_decision_gives_the_plain_answer_when_not_streamed(
    tmp_path: Path, how: str
) -> None:
    """Not streamed, the plugin gets the upstream's own answer to its request (passed through by
    the same deadline: a deadline spent is a 504), never the cut row's text as a whole answer."""
    server = Lines(budget=200, step_s=0.005, cut_after=30, how=how)
    body = {"model": "m", "prompt": BEFORE, "max_tokens": 200, "temperature": 0}
    s = _settings(tmp_path, timeout=5 if how == "stall" else 60)
    async with serving(server.app()) as up, proxying(up, settings=s) as (url, _):
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{url}/v1/completions", json=body) as r:
                status, data = r.status, await r.json()
    if how == "stall":
        assert status == 504 and set(data["error"]) == {"message", "type", "param", "code"}, data
    else:
        assert status == 200 and data["id"] == "own" and data["choices"][0]["text"] == "plain\n", data


# -- F8: paths that climb out of the upstream's base path --------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/..%2fpt/echo",
        "/../pt/echo",
        "/%2e%2e/pt/echo",
        "/v1/%2E%2E/%2e%2e/%2e%2e/pt/echo",
        "/%2e%2e%2f%2e%2e%2fpt/echo?a=1",
        "/v1/./../../pt/echo",
    ],  # fmt: skip
)
async def test_a_path_that_climbs_stays_under_the_upstreams_base_path(path: str) -> None:
    seen: list[str] = []

    async def anything(request: web.Request) -> web.Response:
        seen.append(request.raw_path)
        return web.json_response({"path": request.raw_path})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", anything)
    async with serving(app) as up, proxying(f"{up}/base/") as (url, _):
        port = int(url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # a client that sends it as it is
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), WAIT)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    (arrived,) = seen
    assert arrived.startswith("/base/pt/echo"), arrived


# -- F7: what repairs may hold -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["repair", "monitor"])
async def test_a_prompt_over_the_size_bound_passes_through_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    """Neither repaired nor, in monitor mode, checked afterwards."""
    caplog.set_level(logging.INFO)
    seen = Seen()
    s = _settings(tmp_path)
    long_before = "x = 1\n" * 400 + BEFORE  # 2,463 characters before the cursor
    body = {"model": "m", "prompt": long_before, "suffix": AFTER, "max_tokens": 16}
    async with (
        serving(openai_app(seen, odd={long_before})) as up,
        proxying(up, settings=s, mode=mode, max_prompt_chars=2000) as (url, proxy),
        aiohttp.ClientSession() as session,
    ):
        async with session.post(f"{url}/v1/completions", json=body) as r:
            status, answer = r.status, await r.json()
        await proxy.drain()
    assert status == 200 and answer["choices"][0]["text"] != GOOD  # the upstream's own answer
    assert seen.bodies("/v1/completions") == [body]  # the plugin's request, alone, as it came
    lines = [r for r in caplog.records if "--max-prompt-chars" in r.getMessage()]
    assert len(lines) == 1
    assert not s.defect_log_path().exists() and proxy.counters["too_long"] == 1


async def test_repairs_past_the_bound_in_flight_pass_through(tmp_path: Path) -> None:
    """One repair in flight (its rows' streams stall upstream): the next completion request passes
    through, answered by the upstream at once, until the first is over."""
    seen = Seen()
    stalled = asyncio.Event()

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.requests.append((request.method, request.path, body, dict(request.headers)))
        if body.get("stream"):  # a row of the repair in flight: it never comes
            stalled.set()
            await asyncio.sleep(3600)
        return web.json_response({"id": "own", "choices": [{"index": 0, "text": "passed\n"}]})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    body = {"model": "m", "prompt": BEFORE, "suffix": AFTER, "max_tokens": 16}
    s = _settings(tmp_path, timeout=3600)
    async with (
        serving(app) as up,
        proxying(up, settings=s, max_repairs=1) as (url, proxy),
        aiohttp.ClientSession() as session,
    ):
        first = asyncio.create_task(session.post(f"{url}/v1/completions", json={**body, "stream": True}))
        await asyncio.wait_for(stalled.wait(), WAIT)
        async with asyncio.timeout(WAIT), session.post(f"{url}/v1/completions", json=body) as r:
            assert r.status == 200
            answer = await r.json()
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
    assert answer["id"] == "own" and answer["choices"][0]["text"] == "passed\n"
    assert proxy.counters["busy"] == 1
    assert seen.bodies("/v1/completions")[-1] == body  # the plugin's request as it came
