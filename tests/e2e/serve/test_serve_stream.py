"""``cctest serve`` streaming: ``stream: true`` answered with OpenAI's server-sent events, rows
still batched, and a client that disconnects stopping its rows at the next decoding step."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from serve_helpers import running

from cctest.backends.hf import HFBackend

PROMPTS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return ",
    "class Point:\n    def __init__(self, x, y):\n",
    "import os\n\n\ndef list_files(path):\n    ",
]


def events(raw: bytes) -> list[Any]:
    """The ``data:`` payloads of a server-sent event stream, ``[DONE]`` as the string."""
    out: list[Any] = []
    for block in raw.decode().split("\n\n"):
        if block.startswith("data: "):
            data = block[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
        else:
            assert not block.strip(), block
    return out


def joined(evs: list[Any], chat: bool = False) -> tuple[list[str], list[str | None]]:
    """Each row's text and finish reason, from a stream's events."""
    texts: dict[int, str] = {}
    finish: dict[int, str | None] = {}
    for e in evs:
        if e == "[DONE]":
            continue
        for c in e["choices"]:
            piece = c["delta"].get("content", "") if chat else c["text"]
            texts[c["index"]] = texts.get(c["index"], "") + piece
            if c["finish_reason"] is not None:
                assert c["index"] not in finish, "one last event per row"
                finish[c["index"]] = c["finish_reason"]
    n = max(texts) + 1
    return [texts[i] for i in range(n)], [finish.get(i) for i in range(n)]


async def test_a_stream_adds_up_to_the_plain_answer_row_by_row(model: HFBackend) -> None:
    async with running(model) as (url, batcher):
        async with aiohttp.ClientSession() as session:
            body = {"prompt": PROMPTS, "max_tokens": 20, "temperature": 0}
            async with session.post(f"{url}/v1/completions", json=body) as r:
                plain = (await r.json())["choices"]
            streamed = body | {"stream": True, "stream_options": {"include_usage": True}}
            async with session.post(f"{url}/v1/completions", json=streamed) as r:
                assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
                evs = events(await r.read())
    assert evs[-1] == "[DONE]"
    assert evs[-2]["choices"] == [] and evs[-2]["usage"]["completion_tokens"] > 0
    assert all(len(e["choices"]) == 1 and e["object"] == "text_completion" for e in evs[:-2])
    texts, finish = joined(evs)
    assert texts == [c["text"] for c in plain]
    assert finish == [c["finish_reason"] for c in plain]
    assert len(evs) > len(PROMPTS) + 2  # piece by piece, not one event per row
    assert batcher.stats.sizes == [3, 3]  # the streamed rows in one batch, as the plain ones


async def test_a_stop_sequence_split_across_tokens_is_never_streamed(model: HFBackend) -> None:
    async with running(model) as (url, _):
        async with aiohttp.ClientSession() as session:
            body = {"prompt": PROMPTS[0], "max_tokens": 20, "temperature": 0}
            async with session.post(f"{url}/v1/completions", json=body) as r:
                whole = (await r.json())["choices"][0]["text"]
            stop = whole[4:9]  # a few characters that several tokens write
            async with session.post(f"{url}/v1/completions", json=body | {"stop": stop}) as r:
                cut = (await r.json())["choices"][0]
            async with session.post(f"{url}/v1/completions", json=body | {"stop": stop, "stream": True}) as r:
                evs = events(await r.read())
    texts, finish = joined(evs)
    assert texts == [cut["text"]] and finish == ["stop"] and stop not in texts[0]


async def test_chat_streams_deltas_after_the_assistant_role(model: HFBackend) -> None:
    messages = [{"role": "user", "content": "Write a function that adds two numbers."}]
    async with running(model) as (url, _):
        async with aiohttp.ClientSession() as session:
            body = {"messages": messages, "max_tokens": 24, "temperature": 0}
            async with session.post(f"{url}/v1/chat/completions", json=body) as r:
                plain = (await r.json())["choices"][0]
            async with session.post(f"{url}/v1/chat/completions", json=body | {"stream": True}) as r:
                evs = events(await r.read())
    assert evs[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(e["object"] == "chat.completion.chunk" for e in evs[:-1])
    texts, finish = joined(evs, chat=True)
    assert texts == [plain["message"]["content"]] and finish == [plain["finish_reason"]]


async def test_a_client_that_disconnects_stops_its_rows_and_not_the_others(model: HFBackend) -> None:
    """Two requests share a batch; the streamed one is closed after its first events: its rows
    stop at the next step (the server counts the tokens they wrote: far fewer than the same rows
    write when nobody leaves), the other is answered whole and as it is alone."""
    budget = 160
    async with running(model, wait_ms=50) as (url, batcher):
        async with aiohttp.ClientSession() as session:
            other = {"prompt": PROMPTS[2], "max_tokens": budget, "temperature": 0}
            streamed = {"prompt": PROMPTS[:2], "max_tokens": budget, "temperature": 0}

            async def ask(body: dict[str, Any]) -> dict[str, Any]:
                async with session.post(f"{url}/v1/completions", json=body) as r:
                    return dict(await r.json())

            full = (await ask(streamed))["usage"]["completion_tokens"]  # nobody leaves

            async def closed_early() -> int:
                seen = 0
                async with session.post(f"{url}/v1/completions", json=streamed | {"stream": True}) as r:
                    async for line in r.content:
                        seen += line.startswith(b"data: ")
                        if seen == 4:
                            break
                    r.close()  # the connection is dropped, not read to its end
                return seen

            before = batcher.stats.tokens
            answer, seen = await asyncio.gather(ask(other), closed_early())
            while not batcher.idle:  # the shared batch has ended, its tokens counted
                await asyncio.sleep(0.02)
            cut = batcher.stats.tokens - before - answer["usage"]["completion_tokens"]
            alone = await ask(other)
    assert seen == 4 and answer["choices"] == alone["choices"]
    assert batcher.stats.sizes[:2] == [2, 3]  # the three rows shared one batch
    assert batcher.stats.cancelled == 2
    assert full > 100 and 0 < cut < full / 2


PROMPT = (
    "def mean_and_spread(values):\n"
    "    total = 0.0\n"
    "    count = 0\n"
    "    for value in values:\n"
    "        total += value\n"
    "        "
)


async def test_a_repair_request_over_http_decides_early_and_settles_as_in_process(model: HFBackend) -> None:
    """The engine over the http backend against ``cctest serve``: it streams every row, decides
    on their first tokens, and the server writes fewer tokens than for whole rows; the chosen
    completion is the one an undecided request gives that row, and the settled verdict is the
    undecided one."""
    from cctest.backends import create_backend
    from cctest.config import Settings
    from cctest.engine import Engine

    async with running(model) as (url, batcher):
        settings = Settings(
            backend="http", model=url, max_new_tokens=48, mutants=6, decide_after=4, temperature=0
        )
        async with create_backend(settings) as backend:
            undecided = await Engine(backend, settings, decide_after=0).run(PROMPT)
            whole_tokens = batcher.stats.tokens
            result, settling = await Engine(backend, settings).run_settling(PROMPT)
            while not batcher.idle:  # the chosen row is answered before its batch ends
                await asyncio.sleep(0.01)
            decided_tokens = batcher.stats.tokens - whole_tokens
            assert settling is not None
            settled = await settling.result()
    assert result.decided_after == 4 and any(c.cut for c in result.completions)
    assert result.chosen is not None
    assert result.completions[result.chosen].text == undecided.completions[result.chosen].text
    assert decided_tokens < whole_tokens
    assert batcher.stats.cancelled > 0
    assert settled is not None and settled.settled
    assert settled.verdict.outliers == undecided.verdict.outliers
    assert [c.text for c in settled.completions] == [c.text for c in undecided.completions]


async def test_rows_whose_clients_went_away_leave_the_batch(model: HFBackend) -> None:
    """Eleven streamed rows in one batch, ten of them closed after their first event (as the
    http backend's early decision closes the rows it does not choose): they leave the batch, so
    the steps after theirs generate one row (the server counts its steps by their rows), and the
    surviving row's text is the one it writes alone."""
    budget = 64
    prompts = [PROMPT] + [f"def scale_{i}(values, factor):\n    " for i in range(10)]
    async with running(model, wait_ms=200) as (url, batcher):
        async with aiohttp.ClientSession() as session:
            body = {"max_tokens": budget, "temperature": 0, "stream": True}

            async def closed_early(prompt: str) -> None:
                async with session.post(f"{url}/v1/completions", json=body | {"prompt": prompt}) as r:
                    async for line in r.content:
                        if line.startswith(b"data: "):
                            break
                    r.close()  # the connection is dropped, not read to its end

            async def read_on() -> list[Any]:
                async with session.post(f"{url}/v1/completions", json=body | {"prompt": PROMPT}) as r:
                    return events(await r.read())

            evs, *_ = await asyncio.gather(read_on(), *(closed_early(p) for p in prompts[1:]))
            while not batcher.idle:
                await asyncio.sleep(0.02)
            together = dict(batcher.stats.steps)
            async with session.post(
                f"{url}/v1/completions", json={"prompt": PROMPT, "max_tokens": budget, "temperature": 0}
            ) as r:
                alone = (await r.json())["choices"][0]
    texts, finish = joined(evs)
    assert batcher.stats.sizes[0] == 11 and batcher.stats.cancelled == 10
    assert texts == [alone["text"]] and finish == [alone["finish_reason"]]
    assert alone["finish_reason"] == "length"  # the survivor ran to the budget: steps after the others'
    assert set(together) <= set(range(1, 12)) and together.get(1, 0) > 0
    assert sum(together.values()) >= budget - 1  # every step counted
    assert together.get(11, 0) < budget / 2  # most steps ran without the closed rows


async def test_a_row_that_ended_and_whose_client_then_left_does_not_stop_the_batch(model: HFBackend) -> None:
    """A streamed row that writes EOS after a few steps, whose client reads its last event and
    closes the connection (as the http backend's early decision does with a row that ended):
    the row is over, so the batch goes on as it was, every step generating both rows, and nothing
    counts as cancelled. Taking the ended row out would rebuild the batch's cache, which cost
    ~0.4 s (some 20 decoding steps) at json/encoder.py:278 in benchmarks/http_repair.py."""
    short = "if __name__ == '__main__':\n"  # the bundled model writes a line and EOS
    budget = 48
    async with running(model, wait_ms=200) as (url, batcher):
        async with aiohttp.ClientSession() as session:
            body = {"max_tokens": budget, "temperature": 0, "stream": True}

            async def left_after_its_end() -> str | None:
                async with session.post(f"{url}/v1/completions", json=body | {"prompt": short}) as r:
                    async for line in r.content:
                        if line.startswith(b"data: {"):
                            finish = json.loads(line[6:])["choices"][0]["finish_reason"]
                            if finish is not None:
                                r.close()  # gone before the batch ends
                                return str(finish)
                return None

            async def read_on() -> list[Any]:
                async with session.post(f"{url}/v1/completions", json=body | {"prompt": PROMPTS[2]}) as r:
                    return events(await r.read())

            evs, finish = await asyncio.gather(read_on(), left_after_its_end())
            while not batcher.idle:
                await asyncio.sleep(0.02)
    texts, finishes = joined(evs)
    assert finish == "stop" and finishes == ["length"]  # one ended early, the other ran on
    assert batcher.stats.sizes == [2] and batcher.stats.cancelled == 0
    assert set(batcher.stats.steps) == {2}, batcher.stats.steps  # never rebuilt without it


async def test_a_burst_of_requests_that_comes_over_longer_than_the_wait_shares_one_batch(
    model: HFBackend,
) -> None:
    """Requests that keep coming, each within the wait of the one before, are collected into one
    batch even though the burst lasts longer than the wait (a repair's rows, streamed requests
    each, on a loaded machine): a row left for the next batch would wait until this one ended,
    and the client's early decision with it. The wait is 300 ms, the requests 100 ms apart."""
    async with running(model, wait_ms=300) as (url, batcher):
        async with aiohttp.ClientSession() as session:

            async def ask(i: int) -> None:
                await asyncio.sleep(0.1 * i)
                body = {"prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": 4, "temperature": 0}
                async with session.post(f"{url}/v1/completions", json=body | {"stream": True}) as r:
                    assert r.status == 200
                    await r.read()

            await asyncio.gather(*(ask(i) for i in range(5)))  # over 400 ms
    assert batcher.stats.sizes == [5]
