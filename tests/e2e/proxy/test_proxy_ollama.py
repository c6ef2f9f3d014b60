"""``cctest proxy --provider ollama`` with the real ``ollama`` client, in front of a server that
speaks Ollama's API: a suffix field and raw FIM-laid-out prompts repaired (streamed, as Ollama
does by default, and not), the other endpoints passed through, the defect log, monitor mode."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import ollama
import pytest
from proxy_helpers import GOOD, ODD, Seen, ollama_app, proxying, serving

from cctest.backends.fim import FAMILIES
from cctest.cli import main as cctest_main
from cctest.config import Settings
from cctest.defects import DefectStore

BEFORE = "def count(items):\n    total = 0\n    for item in items:\n        "
AFTER = "\n    return total\n"
MODEL = "qwen2.5-coder:1.5b"


def settings(tmp_path: Path, **extra: object) -> Settings:
    return Settings(mutants=4, defect_log=str(tmp_path / "defects.sqlite3"), **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("decide_after", [Settings().decide_after, 0])
async def test_a_suffix_request_is_repaired_and_every_row_keeps_the_options(
    tmp_path: Path, decide_after: int
) -> None:
    seen = Seen()
    config = settings(tmp_path, decide_after=decide_after)
    async with (
        serving(ollama_app(seen, odd={BEFORE})) as up,
        proxying(up, provider="ollama", settings=config) as (url, proxy),
    ):
        client = ollama.AsyncClient(host=url)
        options = {"temperature": 0.2, "num_ctx": 2048, "num_predict": 40}
        answer = await client.generate(
            model=MODEL, prompt=BEFORE, suffix=AFTER, stream=False, options=options
        )
        await proxy.drain()
    # the original row completed oddly, every mutant alike: the repaired completion is theirs
    assert answer.response == GOOD.rstrip("\n") + "\n" or answer.response == GOOD
    assert answer.done is True
    rows = seen.bodies("/api/generate")
    assert len(rows) == 5 and rows[0]["prompt"] == BEFORE and rows[0]["suffix"] == AFTER
    # deciding early (the default) each row is a stream of its own; with decide_after 0, whole
    streamed = decide_after > 0
    assert all(r["stream"] is streamed and r["options"] == options and r["model"] == MODEL for r in rows)
    assert len({r["prompt"] for r in rows}) == 5


async def test_streamed_by_default_as_ndjson_ending_in_done(tmp_path: Path) -> None:
    seen = Seen()
    async with (
        serving(ollama_app(seen, odd={BEFORE})) as up,
        proxying(up, provider="ollama", settings=settings(tmp_path)) as (url, _),
    ):
        parts = [
            p
            async for p in await ollama.AsyncClient(host=url).generate(
                model=MODEL, prompt=BEFORE, suffix=AFTER, stream=True
            )
        ]
    assert parts[-1].done is True and parts[-1].done_reason == "stop"
    assert all(p.done is False for p in parts[:-1]) and len(parts) > 2
    assert "".join(p.response or "" for p in parts) == GOOD
    # upstream, every row was asked as a stream of its own (the early decision, by default)
    rows = seen.bodies("/api/generate")
    assert len(rows) == 5 and all(r["stream"] is True for r in rows)


@pytest.mark.parametrize(
    "template", ["starcoder", "starcoder-spm", "qwen", "codellama", "deepseek", "qwen-spm"]
)
async def test_a_raw_fim_prompt_is_split_and_every_mutant_laid_out_the_same(
    tmp_path: Path, template: str
) -> None:
    fim = FAMILIES[template]
    prompt = "<|file_sep|>src/count.py\n" * (template == "qwen") + fim.prompt(BEFORE, AFTER)
    seen = Seen()
    async with (
        serving(ollama_app(seen, odd={prompt})) as up,
        proxying(up, provider="ollama", settings=settings(tmp_path)) as (url, _),
    ):
        answer = await ollama.AsyncClient(host=url).generate(
            model=MODEL, prompt=prompt, raw=True, stream=False
        )
    assert answer.response == GOOD
    rows = [r["prompt"] for r in seen.bodies("/api/generate")]
    assert rows[0] == prompt  # the original row is the plugin's own prompt, byte for byte
    head = prompt[: prompt.index(fim.layout[:4])] if template == "qwen" else ""
    for row in rows[1:]:
        assert row.startswith(head)
        body = row[len(head) :]
        assert body != prompt[len(head) :]
        # laid out in the same template: its tokens where the plugin's are
        rebuilt = fim.layout.replace("{prefix}", "\0").replace("{suffix}", "\0").split("\0")
        assert all(tok in body for tok in rebuilt if tok)


async def test_other_endpoints_pass_through_streaming_included(tmp_path: Path) -> None:
    seen = Seen()
    async with (
        serving(ollama_app(seen, odd=set())) as up,
        proxying(up, provider="ollama", settings=settings(tmp_path)) as (url, _),
    ):
        direct, proxied = ollama.AsyncClient(host=up), ollama.AsyncClient(host=url)
        assert (await proxied.list()).models == (await direct.list()).models
        assert (await proxied.show(MODEL)).template == "{{ .Prompt }}"
        chat = [
            c
            async for c in await proxied.chat(
                model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
            )
        ]
    assert "".join(c.message.content or "" for c in chat) == "Hello there" and chat[-1].done
    # a chat prompt for the model's own template is no completion: passed through as sent
    async with (
        serving(ollama_app(seen := Seen(), odd=set())) as up,
        proxying(up, provider="ollama") as (url, _),
    ):
        await ollama.AsyncClient(host=url).generate(model=MODEL, prompt="Why is the sky blue?", stream=False)
    assert len(seen.bodies("/api/generate")) == 1


async def test_code_that_is_not_python_passes_through_unchanged(tmp_path: Path) -> None:
    js = "function count(items) {\n  let total = 0;\n  for (const item of items) {\n    "
    seen = Seen()
    async with (
        serving(ollama_app(seen, odd={js})) as up,
        proxying(up, provider="ollama", settings=settings(tmp_path)) as (url, _),
    ):
        parts = [
            p
            async for p in await ollama.AsyncClient(host=url).generate(
                model=MODEL, prompt=js, suffix="\n}\n", stream=True
            )
        ]
    assert "".join(p.response or "" for p in parts) == ODD  # the upstream's own answer
    direct = Seen()
    async with serving(ollama_app(direct, odd={js})) as up:
        [
            p
            async for p in await ollama.AsyncClient(host=up).generate(
                model=MODEL, prompt=js, suffix="\n}\n", stream=True
            )
        ]
    # exactly what the client sent, headers as well (but the Host and the connection's own)
    (body,) = seen.bodies("/api/generate")
    assert body == direct.bodies("/api/generate")[0]
    hop = {"host", "content-length", "connection"}
    assert {k: v for k, v in seen.requests[0][3].items() if k.lower() not in hop} == {
        k: v for k, v in direct.requests[0][3].items() if k.lower() not in hop
    }


async def test_a_suspected_defect_is_recorded_with_the_proxy_upstream_and_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    seen = Seen()
    caplog.set_level(logging.DEBUG)
    s = settings(tmp_path)
    async with (
        serving(ollama_app(seen, odd={BEFORE})) as up,
        proxying(up, provider="ollama", settings=s) as (url, proxy),
    ):
        client = ollama.AsyncClient(host=url, headers={"Authorization": "Bearer sk-secret-123"})
        await client.generate(model=MODEL, prompt=BEFORE, suffix=AFTER, stream=False)
        await proxy.drain()
    # the key went upstream with every row
    assert all(h.get("Authorization") == "Bearer sk-secret-123" for _, _, _, h in seen.requests)
    with DefectStore(s.defect_log_path(), create=False) as store:
        (record,), _ = store.list()
    assert record.suspect and record.mode == "repair"
    assert record.uri == f"proxy:{up}" and record.model == f"proxy ollama {up} model {MODEL}"
    assert record.settings["via"] == "proxy" and record.settings["model_name"] == MODEL
    assert record.original_completion == ODD and record.chosen_completion == GOOD
    assert cctest_main(["defects", "--db", str(s.defect_log_path()), "list", "--json"]) == 0
    listed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["uri"] for r in listed] == [f"proxy:{up}"]
    exported = s.defect_log_path().read_bytes()
    assert b"sk-secret-123" not in exported and "sk-secret-123" not in caplog.text


async def test_monitor_mode_answers_with_the_upstreams_own_completion_and_records_afterwards(
    tmp_path: Path,
) -> None:
    seen = Seen()
    s = settings(tmp_path)
    async with (
        serving(ollama_app(seen, odd={BEFORE})) as up,
        proxying(up, provider="ollama", mode="monitor", settings=s) as (url, proxy),
    ):
        parts = [
            p
            async for p in await ollama.AsyncClient(host=url).generate(
                model=MODEL, prompt=BEFORE, suffix=AFTER, stream=True
            )
        ]
        assert "".join(p.response or "" for p in parts) == ODD  # as the upstream streamed it
        await proxy.drain()
    bodies = seen.bodies("/api/generate")
    assert bodies[0]["stream"] is True and bodies[0]["prompt"] == BEFORE  # the plugin's own request
    assert len(bodies) == 5 and all(b["stream"] is False for b in bodies[1:])  # then the mutants alone
    with DefectStore(s.defect_log_path(), create=False) as store:
        (record,), _ = store.list()
    assert record.mode == "monitor" and record.suspect and record.original_completion == ODD
