"""``cctest proxy`` in front of a server that answers as llama.cpp's ``llama-server`` and
llama-cpp-python's server do (``tests/unit/llama_like_server.py``), for faults a test cannot cause
on the real ones at will: rows that overflow the server's shared context, a stream the server
interrupts. A repair that fails answers the plain row, as the server answers it directly; where
fewer rows fit than a repair asks, later requests are answered in monitor mode; the answer is built
on the upstream's own (its id, model and usage)."""

from __future__ import annotations

import json
import logging
from typing import Any

import aiohttp
import pytest
from llama_like_server import LlamaLike, llama_like
from proxy_helpers import proxying

from cctest.config import Settings

BEFORE = "def count(items):\n    total = 0\n    for item in items:\n        "
BODY = {"model": "m", "prompt": BEFORE, "max_tokens": 16, "temperature": 0}


def adds(prefix: str, suffix: str) -> str:
    return "total += 1\n"


async def post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as s, s.post(f"{url}/v1/completions", json=body) as r:
        return r.status, await r.json()


async def test_rows_that_overflow_the_servers_context_answer_the_plain_row_then_monitor_mode(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """llama-server's default slots share one context: a repair's rows side by side overflow it
    and every running row fails, where the request sent directly is answered. The proxy answers
    the plain row (200, never a 502), and later requests, knowing how many rows fit, are answered
    at once and checked afterwards, with one line saying how to give the server more slots."""
    server = LlamaLike(adds, slots=4, shared_ctx=70)  # one row fits (15 + 3 tokens), four do not
    async with llama_like(server) as up:
        direct = await post(up, BODY)
        assert direct[0] == 200
        with caplog.at_level(logging.INFO):
            async with proxying(up, settings=Settings(mutants=3)) as (url, proxy):
                first = await post(url, BODY)
                second = await post(url, BODY)
                await proxy.drain()
    assert first[0] == second[0] == 200
    assert (
        first[1]["choices"][0]["text"] == second[1]["choices"][0]["text"] == direct[1]["choices"][0]["text"]
    )
    assert proxy.counters["unrepaired"] == 1 and proxy.counters["monitored_for_slots"] == 1
    assert proxy.counters["monitor_checks"] == 1  # the check ran afterwards, one row at a time
    lines = [r.getMessage() for r in caplog.records if "rows side by side" in r.getMessage()]
    assert len(lines) == 1 and "llama-server -np" in lines[0]
    assert server.props_asked == 1


async def test_an_interrupted_original_row_answers_the_plain_row() -> None:
    """llama-cpp-python's server ends the streaming row with [DONE] and no finish reason when the
    next row queues: the original row is interrupted, not finished, so the repair answers the
    plain request as the server answers it directly."""
    server = LlamaLike(adds, slots=1, interrupt=True, props=False, step_s=0.01)
    async with llama_like(server) as up, proxying(up, settings=Settings(mutants=3)) as (url, proxy):
        status, data = await post(url, BODY)
    assert status == 200 and data["choices"][0]["text"] == "total += 1\n"
    assert proxy.counters["unrepaired"] == 1
    assert server.requests[-1] == ("/v1/completions", BODY)  # the plugin's own request, as sent


@pytest.mark.parametrize("stream", [False, True])
async def test_the_answer_carries_the_upstreams_id_model_and_usage(stream: bool) -> None:
    server = LlamaLike(adds, slots=8)
    body = {**BODY, "stream": stream, "stream_options": {"include_usage": True}} if stream else BODY
    async with llama_like(server) as up, proxying(up, settings=Settings(mutants=3)) as (url, _):
        async with aiohttp.ClientSession() as s, s.post(f"{url}/v1/completions", json=body) as r:
            assert r.status == 200
            if stream:
                events = [
                    json.loads(line[5:])
                    for line in (await r.text()).splitlines()
                    if line.startswith("data:") and line != "data: [DONE]"
                ]
            else:
                events = [await r.json()]
    ids = {e["id"] for e in events}
    assert len(ids) == 1 and next(iter(ids)).startswith("cmpl-llama-")
    assert {e["model"] for e in events} == {"llama-like.gguf"}
    usage = [e["usage"] for e in events if e.get("usage")]
    assert usage and usage[-1]["prompt_tokens"] > 0
    text = "".join(c["text"] for e in events for c in e.get("choices", []))
    assert text == "total += 1\n"


def fills(prefix: str, suffix: str) -> str:
    """The model: fills in the middle when it is shown the code after the cursor."""
    return "total += item\n" if suffix else "pass\n"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_suffix_field_the_server_ignores_goes_to_its_infill(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """llama-server's /v1/completions ignores the suffix field: once the proxy knows the server
    (its answers carry llama.cpp's timings, its /props answers), a request with a suffix is
    repaired over rows asked at /infill, and the answer's usage counts the suffix's tokens."""
    server = LlamaLike(fills, slots=8)
    with_suffix = {**BODY, "suffix": "\n    return total\n", "stream": stream}
    async with llama_like(server) as up, proxying(up, settings=Settings(mutants=3)) as (url, _):
        with caplog.at_level(logging.INFO):
            status, plain = await post(url, BODY)  # the proxy learns whose server it is
            async with aiohttp.ClientSession() as s, s.post(f"{url}/v1/completions", json=with_suffix) as r:
                assert r.status == 200 and status == 200
                raw = await r.text()
    events = [json.loads(x[5:]) for x in raw.splitlines() if x.startswith("data:") and x != "data: [DONE]"]
    answers = events if stream else [json.loads(raw)]
    assert "".join(c["text"] for e in answers for c in e.get("choices", [])) == "total += item\n"
    assert plain["choices"][0]["text"] == "pass\n"
    infilled = [b for path, b in server.requests if path == "/infill" and b.get("n_predict") == 16]
    assert len(infilled) == 4  # the prompt and its three mutants
    assert all(b["input_suffix"] and "prompt" not in b for b in infilled)
    assert len([r for r in caplog.records if "ignores the suffix field" in r.getMessage()]) == 1
    if not stream:
        assert answers[0]["usage"]["prompt_tokens"] > plain["usage"]["prompt_tokens"]


@pytest.mark.parametrize("stream", [False, True])
async def test_llama_vims_infill_requests_are_repaired_in_infills_shape(stream: bool) -> None:
    """llama.vim and llama.vscode ask llama.cpp's /infill (``input_prefix``, the cursor's line up
    to the cursor in ``prompt``, ``input_suffix``): the proxy repairs it over rows asked there,
    each laid out as the plugin laid out its own, and answers in /infill's shape."""
    server = LlamaLike(fills, slots=8)
    lines = BEFORE.split("\n")
    body = {"input_prefix": "\n".join(lines[:-1]) + "\n", "prompt": lines[-1], "n_predict": 16,
            "input_suffix": "\n    return total\n", "temperature": 0, "stream": stream}  # fmt: skip
    async with llama_like(server) as up, proxying(up, settings=Settings(mutants=3)) as (url, proxy):
        async with aiohttp.ClientSession() as s, s.post(f"{up}/infill", json={**body, "stream": False}) as r:
            direct = await r.json()
        async with aiohttp.ClientSession() as s, s.post(f"{url}/infill", json=body) as r:
            assert r.status == 200
            raw = await r.text()
    if stream:
        events = [json.loads(x[5:]) for x in raw.splitlines() if x.startswith("data:")]
        assert events[-1]["stop"] is True and not any(e["stop"] for e in events[:-1])
        text = "".join(e["content"] for e in events)
    else:
        answer = json.loads(raw)
        assert set(direct) <= set(answer) and answer["stop"] is True
        text = answer["content"]
    assert text == direct["content"] == "total += item\n"
    assert proxy.counters["repaired"] == 1
    rows = [b for path, b in server.requests if path == "/infill"][1:]
    assert len(rows) == 4 and all(b["prompt"] == lines[-1] and b["input_prefix"].endswith("\n") for b in rows)
