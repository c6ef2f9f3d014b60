"""Request bodies in the shapes editor plugins send, each written from the plugin's own source (the
file is named beside each; docs/proxy.md shows the settings that produce them), replayed against
``cctest proxy``: each is repaired, and answered in the shape that plugin reads, streamed where it
asked for a stream (Ollama: unless ``stream`` is false)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from proxy_helpers import GOOD, Seen, ollama_app, openai_app, proxying, serving, tgi_app

from cctest.backends.fim import FAMILIES
from cctest.config import Settings

BEFORE = "def count(items):\n    total = 0\n    for item in items:\n        "
AFTER = "\n    return total\n"


def _sse(payload: bytes) -> list[Any]:
    events = [x[5:].strip() for x in payload.decode().splitlines() if x.startswith("data:")]
    return [e if e == "[DONE]" else json.loads(e) for e in events]


PLUGINS = [
    # Continue, provider "ollama", a model whose Ollama template fills in the middle (".Suffix" in
    # /api/show's template): streamFim in continuedev/continue core/llm/llms/Ollama.ts, the body of
    # _getGenerateOptions (no "raw" and no "stream" on this path: Ollama streams by default)
    (
        "continue-ollama",
        ollama_app,
        "/api/generate",
        {"model": "qwen2.5-coder:1.5b-base", "prompt": BEFORE, "suffix": AFTER, "keep_alive": 1800,
         "options": {"temperature": 0.01, "num_predict": 256, "num_ctx": 8096,
                     "stop": ["<|endoftext|>", "<|fim_pad|>", "\n\n\n"]}},
        BEFORE,
    ),
    # Continue, provider "ollama", a model Ollama does not fill in the middle: the prompt laid out
    # in Continue's FIM template for the model, streamComplete with raw: true (same file)
    (
        "continue-ollama-template",
        ollama_app,
        "/api/generate",
        {"model": "starcoder2:3b", "prompt": FAMILIES["starcoder"].prompt(BEFORE, AFTER), "raw": True,
         "keep_alive": 1800, "options": {"temperature": 0.01, "num_predict": 256,
                                         "stop": ["<fim_prefix>", "<file_sep>", "\n\n\n"]}},
        FAMILIES["starcoder"].prompt(BEFORE, AFTER),
    ),
    # Continue, provider "openai" (any OpenAI-compatible server): no FIM endpoint of its own
    # (supportsFim false), so the prompt is laid out in the model's FIM template and sent raw to
    # the legacy completions endpoint, streamed, without a suffix field: _legacystreamComplete in
    # continuedev/continue core/llm/llms/OpenAI.ts (frequency and presence penalties left out
    # when unset)
    (
        "continue-openai",
        openai_app,
        "/v1/completions",
        {"model": "qwen2.5-coder-1.5b", "prompt": FAMILIES["qwen"].prompt(BEFORE, AFTER), "max_tokens": 256,
         "temperature": 0.01, "stop": ["<|endoftext|>", "\n\n\n"], "stream": True},
        FAMILIES["qwen"].prompt(BEFORE, AFTER),
    ),
    # Twinny, Ollama FIM provider: CodeLlama's FIM layout in the prompt, streamed (twinnydotdev/twinny
    # src/extension/completion/request-body.ts, createStreamRequestBodyFim)
    (
        "twinny-ollama",
        ollama_app,
        "/api/generate",
        {"model": "codellama:7b-code", "prompt": FAMILIES["codellama"].prompt(BEFORE, AFTER), "stream": True,
         "keep_alive": "5m", "options": {"temperature": 0.2, "num_predict": 512, "stop": ["<EOT>"]}},
        FAMILIES["codellama"].prompt(BEFORE, AFTER),
    ),
    # llm.nvim / llm-vscode (llm-ls), backend "ollama": StarCoder's FIM layout, the plugin's
    # request_body with prompt, model and stream: false added (huggingface/llm-ls
    # crates/llm-ls/src/backend.rs, build_body)
    (
        "llm-ls-ollama",
        ollama_app,
        "/api/generate",
        {"model": "starcoder2:3b", "prompt": FAMILIES["starcoder"].prompt(BEFORE, AFTER), "stream": False,
         "options": {"num_predict": 60, "temperature": 0.2, "top_p": 0.95}},
        FAMILIES["starcoder"].prompt(BEFORE, AFTER),
    ),
    # llm-ls, backend "openai": the FIM layout in the prompt, no suffix field, stream: false
    (
        "llm-ls-openai",
        openai_app,
        "/v1/completions",
        {"model": "deepseek-coder", "prompt": FAMILIES["deepseek"].prompt(BEFORE, AFTER), "max_tokens": 60,
         "temperature": 0.2, "top_p": 0.95, "stream": False},
        FAMILIES["deepseek"].prompt(BEFORE, AFTER),
    ),
    # llm-ls, backend "tgi" (or "huggingface"): /generate with the plugin's parameters and
    # return_full_text: false, which build_body always adds
    (
        "llm-ls-tgi",
        tgi_app,
        "/generate",
        {"inputs": FAMILIES["starcoder"].prompt(BEFORE, AFTER),
         "parameters": {"max_new_tokens": 60, "temperature": 0.2, "top_p": 0.95, "do_sample": True,
                        "return_full_text": False}},
        FAMILIES["starcoder"].prompt(BEFORE, AFTER),
    ),
    # a TGI client streaming: /generate_stream
    (
        "tgi-stream",
        tgi_app,
        "/generate_stream",
        {"inputs": FAMILIES["starcoder-spm"].prompt(BEFORE, AFTER),
         "parameters": {"max_new_tokens": 60, "details": True}},
        FAMILIES["starcoder-spm"].prompt(BEFORE, AFTER),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("plugin", "app", "path", "body", "original"), PLUGINS, ids=[p[0] for p in PLUGINS])
async def test_a_plugins_request_is_repaired_in_its_own_shape(
    tmp_path: Path, plugin: str, app: Any, path: str, body: dict[str, Any], original: str
) -> None:
    seen = Seen()
    provider = {"ollama_app": "ollama", "openai_app": "openai", "tgi_app": "tgi"}[app.__name__]
    settings = Settings(mutants=3, defect_log=str(tmp_path / "d.sqlite3"))
    async with (
        serving(app(seen, odd={original})) as up,
        proxying(up, provider=provider, settings=settings) as (
            url,
            _,
        ),
    ):
        async with aiohttp.ClientSession() as s, s.post(url + path, json=body) as r:
            assert r.status == 200
            content_type, payload = r.headers["Content-Type"], await r.read()
    if provider == "ollama" and body.get("stream", True):
        assert content_type.startswith("application/x-ndjson")
        lines = [json.loads(x) for x in payload.splitlines()]
        assert lines[-1]["done"] is True and not any(x["done"] for x in lines[:-1])
        text = "".join(x["response"] for x in lines)
    elif provider == "ollama":
        text = json.loads(payload)["response"]
    elif provider == "openai" and body.get("stream"):
        events = _sse(payload)
        assert events[-1] == "[DONE]" and events[-2]["choices"][0]["finish_reason"] == "stop"
        text = "".join(e["choices"][0]["text"] for e in events[:-1])
    elif provider == "openai":
        text = json.loads(payload)["choices"][0]["text"]
    elif path == "/generate_stream":
        events = _sse(payload)
        assert events[-1]["generated_text"] == GOOD and events[-1]["details"]["finish_reason"]
        assert all(e["generated_text"] is None for e in events[:-1])
        text = "".join(e["token"]["text"] for e in events)
    else:
        text = json.loads(payload)["generated_text"]
    assert text == GOOD
    prompts: list[str] = []
    for _, _, row, _ in seen.requests:
        asked = row["inputs"] if "inputs" in row else row["prompt"]
        prompts += asked if isinstance(asked, list) else [asked]
    assert original in prompts and len(prompts) == 4  # the plugin's own prompt, and 3 mutants
