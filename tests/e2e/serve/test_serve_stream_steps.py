"""``cctest serve`` streams one event per decoding step that wrote text, even when its event loop
falls behind the model (the early decision of ``cctest complete --backend http`` and of
``cctest proxy`` counts a row's tokens by its events)."""

from __future__ import annotations

import json
import time

import aiohttp
from serve_helpers import running

from cctest.backends.hf import HFBackend

PROMPT = "import os\n\n\ndef list_files(path):\n    "


async def test_a_stream_that_fell_behind_still_sends_one_event_per_step(model: HFBackend) -> None:
    async with running(model) as (url, _), aiohttp.ClientSession() as session:
        body = {"prompt": PROMPT, "max_tokens": 20, "temperature": 0, "stream": True,
                "stream_options": {"include_usage": True}}  # fmt: skip
        pieces: list[str] = []
        usage = None
        async with session.post(f"{url}/v1/completions", json=body) as r:
            async for raw in r.content:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                data = json.loads(line[6:])
                if data["choices"]:
                    if not pieces:
                        time.sleep(1.0)  # the event loop (the server's too) blocked: the model runs on
                    pieces.append(data["choices"][0]["text"])
                else:
                    usage = data["usage"]
    assert usage is not None and usage["completion_tokens"] == 20
    assert "".join(pieces).isascii() and all(pieces)  # every token of this completion writes text
    assert len(pieces) == usage["completion_tokens"]
