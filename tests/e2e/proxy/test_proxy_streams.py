"""``cctest proxy`` deciding early over a streaming upstream that counts the tokens it writes per
stream and stops a stream its client closed (tests/unit/backends/stream_server.py): the rows not
chosen stop soon after ``decide_after`` tokens, and a streamed answer begins while the chosen row's
upstream stream still runs."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import aiohttp
import pytest
from proxy_helpers import proxying

from cctest.config import Settings

BEFORE = "def count(items):\n    total = 0\n    for item in items:\n        "
BUDGET = 60  # max_tokens: 10 lines of 6 tokens
AFTER_TOKENS = Settings().decide_after


def _stream_server() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "unit" / "backends" / "stream_server.py"
    spec = importlib.util.spec_from_file_location("proxy_stream_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def lines_of_tokens(prompt: str, n: int) -> list[str]:
    """Every row the same code, a line per 6 tokens, so no row is an outlier."""
    line = ["v", "0", " = ", "1", "\n", "        "]
    return [line[i % len(line)] for i in range(n)]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = _stream_server()
    monkeypatch.setattr(module, "tokens_for", lines_of_tokens)
    return module


async def test_the_rows_not_chosen_stop_and_the_answer_streams_before_the_chosen_row_ends(
    server: ModuleType,
) -> None:
    app = server.make_app("openai", step_s=0.02)
    counts = app[server.COUNTS]
    runner, up = await server.start(app)
    try:
        async with proxying(up, settings=Settings(mutants=3)) as (url, proxy):
            body = {"model": "m", "prompt": BEFORE, "max_tokens": BUDGET, "temperature": 0, "stream": True}
            pieces: list[str] = []
            written_at_first_piece: list[int] = []
            async with aiohttp.ClientSession() as s, s.post(f"{url}/v1/completions", json=body) as r:
                assert r.status == 200
                async for raw in r.content:
                    line = raw.decode().strip()
                    if not line.startswith("data:") or line == "data: [DONE]":
                        continue
                    text = json.loads(line[5:])["choices"][0]["text"]
                    if text and not pieces:
                        written_at_first_piece = list(counts.written)
                    pieces.append(text)
            await proxy.drain()
    finally:
        await runner.cleanup()
    rows = 4  # the prompt and its 3 mutants, each a stream of its own
    assert len(counts.written) == rows and counts.plain == 0
    # the chosen row was written whole, the others stopped soon after the decision
    assert sorted(counts.written)[-1] == BUDGET
    assert all(n < AFTER_TOKENS + 10 for n in sorted(counts.written)[:-1])
    assert sum(counts.written) < rows * BUDGET
    # the plugin's stream began while the chosen row's upstream stream still ran, line by line
    assert written_at_first_piece and max(written_at_first_piece) < BUDGET
    assert pieces[0].endswith("\n") and len([p for p in pieces if p]) > 2
    assert "".join(pieces).startswith("v0 = 1\n")
