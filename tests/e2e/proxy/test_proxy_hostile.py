"""``cctest proxy`` in hostile hands, in front of loopback aiohttp servers: lone surrogates in the
plugin's request and in the upstream's answer, a ``stream_options`` that is not an object, a
plugin that leaves a streamed repair, a chosen row whose upstream stream breaks after the
decision, and request paths that climb out of the upstream's base path."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from proxy_helpers import GOOD, Seen, openai_app, proxying, serving

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
        assert all("\\ud800" not in json.dumps(e) for e in events)
    else:
        answer = json.loads(payload)
        text = answer["choices"][0]["text"]
        assert "\ud800" not in answer["id"] and "\udfff" not in answer["model"]
    assert text == GOOD
    assert len(_records(s)) == 1
    assert "Traceback" not in caplog.text and "never retrieved" not in caplog.text
