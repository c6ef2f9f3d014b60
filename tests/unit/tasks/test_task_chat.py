"""Chat models: the HF backend applies a tokenizer's chat template (a small model whose tokenizer
is given one here, nothing downloaded) or the plain template; the HTTP backend speaks OpenAI
``/v1/chat/completions`` and Ollama ``/api/chat`` to real aiohttp servers on 127.0.0.1; and
``cctest bench tasks --chat`` runs a task file against a chat server end to end."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from local_server import server

from cctest.backends import create_backend
from cctest.backends.base import PLAIN_CHAT_STOP, GenerationOptions, plain_chat_template
from cctest.backends.hf import HFBackend
from cctest.backends.http import HTTPBackend
from cctest.backends.loaded import model_dir
from cctest.bench.store import load_run
from cctest.cli import main
from cctest.config import Settings
from cctest.errors import BackendResponseError
from cctest.tasks import chat_messages, load_tasks

DATA = Path(__file__).parents[2] / "data" / "tasks" / "small.jsonl"
TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Write add(a, b)."}]


@pytest.fixture(scope="module")
def chat_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled model with a chat template added to its tokenizer's config."""
    target = tmp_path_factory.mktemp("chat-model") / "model"
    shutil.copytree(model_dir(None), target)
    config_path = target / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["chat_template"] = TEMPLATE
    config_path.write_text(json.dumps(config))
    return target


@pytest.fixture(scope="module")
def chat_model(chat_model_dir: Path) -> HFBackend:
    return HFBackend(chat_model_dir, options=GenerationOptions(max_new_tokens=12), threads=1)


def test_hf_applies_the_tokenizers_chat_template(chat_model: HFBackend) -> None:
    assert chat_model.prefers_chat
    text = chat_model.chat_prompt(MESSAGES)
    assert text == "<|system|>\nBe brief.\n<|user|>\nWrite add(a, b).\n<|assistant|>\n"
    [answer] = asyncio.run(chat_model.chat([MESSAGES]))
    # the answer is the model's continuation of exactly that text, not cut at code boundaries
    plain = chat_model.with_options(boundaries=False, token_healing=False)
    assert answer == plain.generate([text])[0].text
    assert isinstance(answer, str) and answer != ""


def test_hf_without_a_chat_template_uses_the_plain_one() -> None:
    model = HFBackend(None, options=GenerationOptions(max_new_tokens=12), threads=1)
    assert not model.prefers_chat
    text = model.chat_prompt(MESSAGES)
    assert text == plain_chat_template(MESSAGES)
    assert text == "### System:\nBe brief.\n\n### User:\nWrite add(a, b).\n\n### Assistant:\n"
    [answer] = asyncio.run(model.chat([MESSAGES]))
    stop = GenerationOptions(max_new_tokens=12, stop=(PLAIN_CHAT_STOP,))
    assert answer == model.with_options(stop, boundaries=False, token_healing=False).generate([text])[0].text
    assert PLAIN_CHAT_STOP not in answer


def test_bench_tasks_asks_a_model_with_a_chat_template_in_chat(chat_model_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    argv = ["bench", "tasks", "--tasks", str(DATA), "--backend", "hf", "--model", str(chat_model_dir)]
    argv += ["--limit", "1", "--max-new-tokens", "8", "--inputs", "5", "--no-progress", "--threads", "1"]
    assert main([*argv, "--out", str(run)]) == 0
    config, [record] = load_run(run)
    assert config["mode"] == "auto" and record["mode"] == "chat"
    assert record["prompt"] == chat_messages(load_tasks(DATA)[0])
    assert record["rounds"][0]["category"] is not None  # the answer (whatever it is) was judged
    # --completion overrides the template: the stub is completed instead
    assert main([*argv, "--completion", "--out", str(tmp_path / "c")]) == 0
    assert load_run(tmp_path / "c")[1][0]["mode"] == "completion"


# -- HTTP ------------------------------------------------------------------------------------------


def test_openai_chat_against_a_chat_server_over_the_real_model(chat_model: HFBackend) -> None:
    bodies: list[dict[str, Any]] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        bodies.append(body)
        [text] = await chat_model.chat([body["messages"]])
        assert isinstance(text, str)
        message = {"role": "assistant", "content": text}
        return web.json_response({"choices": [{"index": 0, "message": message, "finish_reason": "length"}]})

    async def go() -> list[Any]:
        async with server({"/v1/chat/completions": chat}) as url:
            settings = Settings(backend="http", model=url, model_name="m", max_new_tokens=12, temperature=0.0)
            async with create_backend(settings) as backend:
                return await backend.chat([MESSAGES, MESSAGES[1:]])

    answers = asyncio.run(go())
    assert [b["messages"] for b in bodies] in ([MESSAGES, MESSAGES[1:]], [MESSAGES[1:], MESSAGES])
    assert all(b["model"] == "m" and b["max_tokens"] == 12 and b["stream"] is False for b in bodies)
    assert answers[0] == asyncio.run(chat_model.chat([MESSAGES]))[0]  # what the model said, unchanged


def test_ollama_chat_and_a_chat_endpoint_given_as_the_url() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def ollama(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((request.path, body))
        reply = "```python\ndef add(a, b):\n    return a + b\n```"
        return web.json_response({"model": body["model"], "message": {"role": "assistant", "content": reply}})

    async def broken(request: web.Request) -> web.Response:
        return web.json_response({"choices": [{"message": {}}]})

    async def go() -> tuple[list[Any], list[Any]]:
        async with server({"/api/chat": ollama, "/v1/chat/completions": broken}) as url:
            ol = HTTPBackend(url + "/api/chat", provider="ollama", model_name="coder")
            oa = HTTPBackend(url + "/v1/chat/completions")
            async with ol, oa:
                return await ol.chat([MESSAGES]), await oa.chat([MESSAGES])

    (answer,), (error,) = asyncio.run(go())
    assert answer.startswith("```python\ndef add")
    path, body = seen[0]
    assert path == "/api/chat" and body["messages"] == MESSAGES and body["stream"] is False
    assert body["model"] == "coder" and "raw" not in body and "prompt" not in body
    assert isinstance(error, BackendResponseError) and "choices[0].message.content" in str(error)


ANSWERS = {
    # what instruction models answer: prose, fences, helpers, usage examples
    "add": "Here it is:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\nExample: `add(1, 2)`.",
    "mean": "```\ndef mean(xs):\n    total = sum(xs)\n    return total / len(xs)\n\nprint(mean([1, 2]))\n```",
    "slice": "```python\ndef middle(xs):\n    return xs[2:5]\n```\nThis returns indices 2 to 5.",
}


def test_bench_tasks_chat_over_http_end_to_end(tmp_path: Path) -> None:
    asked: list[list[dict[str, str]]] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        asked.append(body["messages"])
        content = body["messages"][-1]["content"]
        name = next(
            k for k, v in {"add": "`add(", "mean": "`mean`", "slice": "`middle("}.items() if v in content
        )
        message = {"role": "assistant", "content": ANSWERS[name]}
        return web.json_response({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

    async def go(url_box: list[str], ready: asyncio.Event, stop: asyncio.Event) -> None:
        async with server({"/v1/chat/completions": chat}) as url:
            url_box.append(url)
            ready.set()
            await stop.wait()

    import threading

    loop = asyncio.new_event_loop()
    url_box: list[str] = []
    ready, stop = asyncio.Event(), asyncio.Event()
    thread = threading.Thread(target=loop.run_until_complete, args=(go(url_box, ready, stop),), daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(ready.wait(), loop).result(timeout=30)
        run = tmp_path / "run"
        argv = ["bench", "tasks", "--tasks", str(DATA), "--chat", "--backend", "http", "--model", url_box[0]]
        argv += ["--abs-tol", "0.02", "--inputs", "50", "--no-progress", "--system", "You write Python."]
        assert main([*argv, "--out", str(run)]) == 0
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
    _, records = load_run(run)
    cats = {r["task_id"]: r["rounds"][0]["category"] for r in records}
    assert cats == {"add": "passed", "mean": "passed", "slice": "fuzzing_failure"}
    assert all(m[0] == {"role": "system", "content": "You write Python."} for m in asked)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["categories"]["passed"] == 2 and summary["counts"]["backend_errors"] == 0
