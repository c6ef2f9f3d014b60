"""``cctest proxy`` in front of a real ``cctest serve`` (the bundled model), with the real ``openai``
client: the repaired completion is the one ``cctest complete --backend http`` gives for the same
code and settings, streamed or not; the other endpoints pass through."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, cast

import aiohttp
import openai
import pytest
from proxy_helpers import GOOD, Seen, openai_app, proxying, serving

from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.backends.http import HTTPBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.serve import start_server
from cctest.types import Prompt

ROOT = Path(__file__).resolve().parents[3]
SOURCE = (
    "import os\n\n\ndef list_python_files(directory):\n    result = []\n"
    "    for name in os.listdir(directory):\n        \n    return result\n"
)
CURSOR = SOURCE.index("        \n") + 8  # line 7, column 9
BEFORE, AFTER = SOURCE[:CURSOR], SOURCE[CURSOR:]
K = 3
TOKENS = 24


@pytest.fixture(scope="module")
def model() -> HFBackend:
    return HFBackend(None, options=GenerationOptions(max_new_tokens=TOKENS), threads=1)


async def _cctest_complete(tmp_path: Path, serve_url: str, *extra: str) -> dict[str, Any]:
    """``cctest complete --backend http --json``, as a user runs it, against ``serve_url``."""
    path = tmp_path / "files.py"
    path.write_text(SOURCE)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cctest", "complete", f"{path}:7:9", "--backend", "http",
        "--model", serve_url, "--max-new-tokens", str(TOKENS), "-k", str(K), *extra, "--json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return cast(dict[str, Any], json.loads(out))


async def _ask_proxy(serve_url: str, settings: Settings) -> tuple[str, str | None, list[Any]]:
    """The proxy's answer (text, finish reason) and its streamed chunks, asked with the openai SDK."""
    async with proxying(serve_url, settings=settings) as (url, proxy):
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0)
        answer = await client.completions.create(
            model="bundled", prompt=BEFORE, suffix=AFTER, max_tokens=TOKENS, temperature=0
        )
        stream = await client.completions.create(
            model="bundled", prompt=BEFORE, suffix=AFTER, max_tokens=TOKENS, temperature=0, stream=True
        )
        chunks = [c async for c in stream]
        await proxy.drain()
    return answer.choices[0].text, answer.choices[0].finish_reason, chunks


@pytest.mark.parametrize("decide_after", [Settings().decide_after, 0])
async def test_the_repaired_completion_is_cctest_completes_streamed_or_not(
    model: HFBackend, tmp_path: Path, decide_after: int
) -> None:
    """The same ``decide_after`` on both sides gives the same answer: by default both decide on
    every row's first 16 streamed tokens (this prompt's early choice differs from the choice on
    whole rows), with 0 both choose on whole rows (docs/proxy.md, "The same answer as cctest
    complete")."""
    runner, serve_url = await start_server(model, "127.0.0.1", 0)
    try:
        settings = Settings(mutants=K, decide_after=decide_after, defect_log=str(tmp_path / "d.sqlite3"))
        text, finish, chunks = await _ask_proxy(serve_url, settings)
        extra = () if decide_after == Settings().decide_after else ("--decide-after", str(decide_after))
        expected = await _cctest_complete(tmp_path, serve_url, *extra)
        # and in-process, the engine with the http backend
        async with HTTPBackend(serve_url, options=GenerationOptions(max_new_tokens=TOKENS)) as http:
            direct = await Engine(http, Settings(mutants=K, decide_after=decide_after)).run(
                Prompt(BEFORE, AFTER)
            )
    finally:
        await runner.cleanup()
    assert text == expected["completion"] == direct.completion
    assert expected["completion"].strip()  # a real completion, not an empty one
    assert [m["text"] for m in expected["mutants"]] == [m.text for m in direct.mutants]
    assert direct.decided_after == (decide_after or None)
    assert "".join(c.choices[0].text for c in chunks) == text
    # the last event ends the stream with the upstream's own finish reason, as the whole answer has it
    assert chunks[-1].choices[0].finish_reason == finish and len(chunks) > 2
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


@pytest.mark.parametrize("decide_after", [Settings().decide_after, 0])
async def test_the_rows_go_upstream_with_the_requests_options(tmp_path: Path, decide_after: int) -> None:
    """Deciding early (the default), the prompt and each mutant are a streamed request of their
    own; with ``decide_after`` 0, all 5 go in ONE request, completed whole."""
    seen = Seen()
    settings = Settings(mutants=4, decide_after=decide_after, defect_log=str(tmp_path / "d.sqlite3"))
    async with serving(openai_app(seen, odd={BEFORE})) as up, proxying(up, settings=settings) as (url, _):
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0)
        answer = await client.completions.create(
            model="m", prompt=BEFORE, max_tokens=40, temperature=0.3, top_p=0.9, stop=["\n\n"],
            presence_penalty=0.5, seed=7, user="u1",
        )  # fmt: skip
    assert answer.choices[0].text == GOOD and answer.model == "m" and answer.usage is not None
    bodies = seen.bodies("/v1/completions")
    if decide_after:
        assert len(bodies) == 5 and all(b["stream"] is True for b in bodies)
        prompts = [b["prompt"] for b in bodies]
        assert all(isinstance(p, str) for p in prompts) and BEFORE in prompts and len(set(prompts)) == 5
    else:
        (body,) = bodies
        assert body["prompt"][0] == BEFORE and len(body["prompt"]) == 5 and body["stream"] is False
    kept = {
        "max_tokens": 40, "temperature": 0.3, "top_p": 0.9, "presence_penalty": 0.5, "seed": 7, "user": "u1",
    }  # fmt: skip
    assert all({k: b[k] for k in kept} == kept for b in bodies)
    # streamed rows go without the stop sequences, which the proxy cuts at itself (a server may hold
    # back a stop's possible start and never send it at max_tokens: docs/proxy.md); whole rows keep them
    assert all(("stop" in b) == (not decide_after) for b in bodies)
    assert all(b["stop"] == ["\n\n"] for b in bodies if "stop" in b)


async def test_other_paths_return_the_upstreams_bytes_and_status_unchanged(tmp_path: Path) -> None:
    seen = Seen()
    async with serving(openai_app(seen, odd=set())) as up, proxying(up) as (url, _):
        async with aiohttp.ClientSession() as s:
            for path in ("/v1/models", "/v1/models?x=1", "/v1/embeddings", "/nowhere"):
                async with s.get(up + path) as d, s.get(url + path) as p:
                    assert (p.status, await p.read()) == (d.status, await d.read())
                    assert p.headers.get("X-Upstream") == d.headers.get("X-Upstream")
            # several prompts in one request: not a completion the proxy repairs, passed as sent
            body = {"prompt": [BEFORE, "def f(x):\n    return "], "max_tokens": 4}
            async with s.post(url + "/v1/completions", json=body) as p:
                assert len((await p.json())["choices"]) == 2
    assert seen.bodies("/v1/completions") == [body]
