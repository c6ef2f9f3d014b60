"""``cctest serve`` streams one event per decoding step, even when its event loop falls behind the
model, and even for a step that shows no new text (the early decision of ``cctest complete
--backend http`` and of ``cctest proxy`` counts a row's tokens by its events)."""

from __future__ import annotations

import json
import time

import aiohttp
from serve_helpers import running

from cctest.backends.hf import HFBackend
from cctest.serve import Batcher

PROMPT = "import os\n\n\ndef list_files(path):\n    "
# the cursor after a run of spaces, as at tokenize.py:523 in benchmarks/http_repair.py: the
# healed tail is regenerated in several tokens that show no text of the completion
WHITESPACE_TAIL = (
    "def count(items):\n    total = 0\n    for item in items:\n        total += item\n    return total\n\n\n"
    "def mean(xs):                 "
)


# ``batcher.stats.steps``: the streamed request's decoding steps (the healed tail's included), the
# plain request's counted out; a row's finish may come in an event of its own after its last
# step's (one more event, no token)


async def stream_pieces(
    url: str, prompt: str, batcher: Batcher, *, fall_behind: bool
) -> tuple[list[str], dict, str]:
    """Each event's text, the usage event, and the plain (not streamed) answer's text."""
    body = {"prompt": prompt, "max_tokens": 20, "temperature": 0}
    pieces: list[str] = []
    usage: dict = {}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{url}/v1/completions", json=body) as r:
            plain = (await r.json())["choices"][0]["text"]
        batcher.stats.steps.clear()  # a plain request's steps are counted too (it can be cancelled)
        streamed = body | {"stream": True, "stream_options": {"include_usage": True}}
        async with session.post(f"{url}/v1/completions", json=streamed) as r:
            async for raw in r.content:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                data = json.loads(line[6:])
                if data["choices"]:
                    if not pieces and fall_behind:
                        time.sleep(1.0)  # the event loop (the server's too) blocked: the model runs on
                    pieces.append(data["choices"][0]["text"])
                else:
                    usage = data["usage"]
    return pieces, usage, plain


async def test_a_stream_that_fell_behind_still_sends_one_event_per_step(model: HFBackend) -> None:
    async with running(model) as (url, batcher):
        pieces, usage, plain = await stream_pieces(url, PROMPT, batcher, fall_behind=True)
    assert usage["completion_tokens"] == 20
    assert sum(batcher.stats.steps.values()) <= len(pieces) <= sum(batcher.stats.steps.values()) + 1
    assert "".join(pieces) == plain


async def test_steps_that_show_no_text_are_events_too(model: HFBackend) -> None:
    async with running(model) as (url, batcher):
        pieces, usage, plain = await stream_pieces(url, WHITESPACE_TAIL, batcher, fall_behind=False)
    assert sum(batcher.stats.steps.values()) <= len(pieces) <= sum(batcher.stats.steps.values()) + 1
    assert "".join(pieces) == plain
    assert pieces[0] == "" and any(pieces)  # the healed tail's first token showed nothing
