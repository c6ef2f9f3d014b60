"""``cctest serve`` end to end: the OpenAI-compatible server over the bundled model, the HTTP
backend against it, request batching, bad requests, and the command's start-up and shutdown."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

import aiohttp
import pytest
from serve_helpers import running

from cctest.backends import create_backend
from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.backends.http import HTTPBackend
from cctest.config import Settings

MODULE = '"""Helpers."""\n\nimport os\n\n\ndef is_hidden(name):\n    return name.startswith(".")\n\n\n'
PROMPTS = [
    MODULE + "def visible_files(directory):\n    return [",
    MODULE + "def visible_files(folder):\n    return [",
    MODULE + "def visible_files(path):\n    names = os.listdir(path)\n    return [",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return ",
    "class Point:\n    def __init__(self, x, y):\n",
]


async def test_http_backend_through_cctest_serve_matches_the_local_backend(model: HFBackend) -> None:
    """The same greedy completions, trimmed by the same rules, whether the model runs in-process
    or behind ``cctest serve`` (where the variants' requests are batched together)."""
    async with running(model) as (url, batcher):
        settings = Settings(backend="http", model=url, max_new_tokens=24, model_name="anything")
        async with create_backend(settings) as backend:
            remote = await backend.complete(PROMPTS)
    local = await model.complete(PROMPTS)
    assert remote == local
    assert batcher.stats.rows == len(PROMPTS)


async def test_concurrent_requests_share_generate_calls(model: HFBackend) -> None:
    async with running(model, wait_ms=20) as (url, batcher):
        async with aiohttp.ClientSession() as session:

            async def ask(prompt: str) -> dict[str, Any]:
                body = {"prompt": prompt, "max_tokens": 8, "temperature": 0}
                async with session.post(f"{url}/v1/completions", json=body) as r:
                    assert r.status == 200
                    return dict(await r.json())

            answers = await asyncio.gather(*(ask(p) for p in PROMPTS * 2))
    assert [a["choices"][0]["text"] for a in answers[:5]] == [a["choices"][0]["text"] for a in answers[5:]]
    assert batcher.stats.rows == 10
    assert batcher.stats.batches < 10 and batcher.stats.largest > 1


async def test_openai_wire_format(model: HFBackend) -> None:
    async with running(model) as (url, _):
        async with aiohttp.ClientSession() as session:
            body = {"model": "whatever", "prompt": PROMPTS[3:], "max_tokens": 6, "temperature": 0}
            async with session.post(f"{url}/v1/completions", json=body) as r:
                assert r.status == 200
                data = await r.json()
            assert data["object"] == "text_completion" and data["model"] == "cctest-code-small"
            assert [c["index"] for c in data["choices"]] == [0, 1]
            assert all(c["finish_reason"] in ("length", "stop") for c in data["choices"])
            assert 0 < data["usage"]["completion_tokens"] <= 12
            assert (
                data["usage"]["total_tokens"]
                == data["usage"]["prompt_tokens"] + data["usage"]["completion_tokens"]
            )
            # the same prompt alone gives the same text (batching does not change greedy output)
            single = {"prompt": PROMPTS[3], "max_tokens": 6, "temperature": 0}
            async with session.post(f"{url}/v1/completions", json=single) as r:
                assert (await r.json())["choices"][0]["text"] == data["choices"][0]["text"]
            # a stop sequence cuts the text where it starts, as OpenAI's API does
            first = data["choices"][0]["text"]
            if len(first) >= 2:
                stop = first[1:3]
                async with session.post(f"{url}/v1/completions", json=single | {"stop": stop}) as r:
                    cut = (await r.json())["choices"][0]
                assert cut["text"] == first[: first.index(stop)] and cut["finish_reason"] == "stop"
            async with session.get(f"{url}/v1/models") as r:
                assert (await r.json())["data"][0]["id"] == "cctest-code-small"
            async with session.get(f"{url}/health") as r:
                assert (await r.json())["status"] == "ok"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "not JSON"),
        (b'{"prompt": 3}', "'prompt'"),
        (b'{"prompt": []}', "'prompt'"),
        (b'{"prompt": "x", "max_tokens": 0}', "'max_tokens'"),
        (b'{"prompt": "x", "temperature": -1}', "'temperature'"),
        (b'{"prompt": "x", "top_p": 0}', "'top_p'"),
        (b'{"prompt": "x", "stop": [1]}', "'stop'"),
        (b'{"prompt": "x", "n": 2}', "n = 1"),
        (b'{"prompt": "x", "stream": "yes"}', "'stream'"),
        (b"[1, 2]", "JSON object"),
    ],
)
async def test_bad_requests_get_a_400_and_the_server_keeps_serving(
    model: HFBackend, body: bytes, message: str
) -> None:
    async with running(model) as (url, _):
        async with aiohttp.ClientSession() as session:
            headers = {"Content-Type": "application/json"}
            async with session.post(f"{url}/v1/completions", data=body, headers=headers) as r:
                assert r.status == 400
                error = (await r.json())["error"]
            assert message in error["message"] and error["type"] == "invalid_request_error"
            ok = {"prompt": "x = ", "max_tokens": 2, "temperature": 0}
            async with session.post(f"{url}/v1/completions", json=ok) as r:
                assert r.status == 200


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cctest", "serve", "--port", "0", "--threads", "1", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the model loads first; the line comes when it listens
    match = re.search(r"(http://127\.0\.0\.1:\d+)/v1/completions", line)
    if not match:
        proc.kill()
        raise AssertionError(f"no URL in {line!r}; stderr: {proc.communicate()[1][-2000:]}")
    return proc, match.group(1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_the_command_serves_and_stops_cleanly(sig: signal.Signals) -> None:
    proc, url = await asyncio.to_thread(_start)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/health") as r:
                assert r.status == 200
            async with HTTPBackend(url, options=GenerationOptions(max_new_tokens=8)) as backend:
                (text,) = await backend.complete(["def add(a, b):\n    return "])
            assert isinstance(text, str)
        proc.send_signal(sig)
        out, err = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in out and "Traceback" not in err


def test_the_command_rejects_a_directory_that_is_not_a_model(tmp_path: Any) -> None:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "cctest", "serve", "--model", str(tmp_path / "nope"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not exist" in lines[0], proc.stderr
    assert time.monotonic() - started < 300


async def test_cctest_complete_over_http_against_cctest_serve(model: HFBackend, tmp_path: Any) -> None:
    """The whole chain: the CLI's engine sends the prompt and its mutants through the HTTP
    backend to the server, which batches them over the bundled model."""
    source = tmp_path / "walk.py"
    source.write_text(
        "import os\n\n\ndef list_python_files(directory):\n    result = []\n"
        "    for name in os.listdir(directory):\n        if name.endswith('.py'):\n            \n"
    )
    async with running(model) as (url, batcher):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cctest", "complete", f"{source}:8:13", "--json",
            "--backend", "http", "--model", url, "--max-new-tokens", "16", "-k", "4",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode == 0, err.decode()
    result = json.loads(out)
    assert len(result["completions"]) >= 2  # the original and its mutants
    assert batcher.stats.rows == len(result["completions"])
    assert batcher.stats.largest > 1  # the variants met in one generate
