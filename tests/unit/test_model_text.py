"""Text from a model that no file or terminal can take as it is: a lone surrogate (which JSON allows)
is replaced where the text enters, in the backends, and control characters never reach a terminal
raw. Real aiohttp servers on 127.0.0.1 play the model; ``cctest`` runs as a subprocess, under a
pseudo-terminal where a terminal is the point."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from local_server import server

from cctest.backends.http import HTTPBackend
from cctest.errors import BackendResponseError

ROOT = Path(__file__).resolve().parents[2]
CCTEST = Path(sys.executable).parent / "cctest"
TASKS = ROOT / "tests" / "data" / "tasks" / "small.jsonl"

# what the model writes: a lone surrogate, a pair split and reversed, a high one at the end, and
# valid non-ASCII text (an accent, a character beyond the BMP) that must be kept as it is
HOSTILE = "return a + b  # \ud800 é \U0001f600 \ude00\ud83d end\ud83d"
SAFE = "return a + b  # \ufffd é \U0001f600 \ufffd\ufffd end\ufffd"
# a screen clear, a window-title change and a hyperlink
ESCAPES = "return a + b  # \x1b[2J\x1b]0;owned\x07\x1b]8;;http://evil.example/\x1b\\here\x1b]8;;\x1b\\"
SOURCE = "def add(a, b):\n    \n"


def _routes(text: str) -> dict[str, Any]:
    """Every provider's completion and chat endpoints, each answering ``text`` (JSON escapes a
    lone surrogate as ``\\ud800``, as a server would send it)."""

    async def answer(request: web.Request) -> web.Response:
        path = request.path
        if path == "/v1/completions":
            data: Any = {"choices": [{"index": 0, "text": text}]}
        elif path == "/v1/chat/completions":
            data = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
        elif path == "/api/generate":
            data = {"response": text, "done": True}
        elif path == "/api/chat":
            data = {"message": {"role": "assistant", "content": text}, "done": True}
        else:  # TGI's /generate
            data = [{"generated_text": text}]
        return web.json_response(data)

    return {
        p: answer
        for p in ("/v1/completions", "/v1/chat/completions", "/api/generate", "/api/chat", "/generate")
    }


@pytest.mark.parametrize("provider", ["openai", "ollama", "tgi"])
async def test_every_provider_answer_is_made_safe_where_it_enters(provider: str) -> None:
    async with server(_routes(HOSTILE)) as url:
        backend = HTTPBackend(url, provider=provider, model_name="m", boundaries=False)
        async with backend:
            [completion] = await backend.complete(["def add(a, b):\n    "])
            [chat] = await backend.chat([[{"role": "user", "content": "add a and b"}]])
    assert completion == SAFE and chat == SAFE
    SAFE.encode("utf-8")  # what every file, database and terminal needs


async def test_a_servers_error_detail_is_made_safe_too() -> None:
    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "bad \ud800 input"}}, status=400)

    async with server({"/v1/completions": refuse}) as url, HTTPBackend(url) as backend:
        [error] = await backend.complete(["x = "])
    assert isinstance(error, BackendResponseError) and "bad \ufffd input" in str(error)


async def _cctest(*args: str, cwd: Path, stdout: int = asyncio.subprocess.PIPE) -> tuple[int, bytes, bytes]:
    """``cctest ARGS`` as a user runs it; the test's own server keeps answering meanwhile."""
    proc = await asyncio.create_subprocess_exec(
        str(CCTEST), *args, cwd=cwd, stdout=stdout, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 240)
    assert proc.returncode is not None
    return proc.returncode, out or b"", err


@pytest.mark.slow
async def test_complete_prints_a_surrogate_answer_replaced_with_and_without_json(tmp_path: Path) -> None:
    (tmp_path / "add.py").write_text(SOURCE)
    async with server(_routes(HOSTILE)) as url:
        where = ["complete", "add.py:2:5", "--backend", "http", "--model", url, "-k", "2"]
        code, out, err = await _cctest(*where, cwd=tmp_path)
        assert code == 0, err.decode()
        assert out.decode("utf-8").splitlines()[0] == SAFE
        code, out, err = await _cctest(*where, "--json", cwd=tmp_path)
    assert code == 0, err.decode()
    result = json.loads(out)
    assert result["completion"] == SAFE
    assert all(c["text"] == SAFE for c in result["completions"])


@pytest.mark.slow
async def test_a_suite_run_writes_its_record_of_a_surrogate_answer(tmp_path: Path) -> None:
    """``bench tasks``; the other task suites (turbulence, syntactic, operational) and the HumanEval
    bench ask their models through the same backends (``create_backend``), so the same parse."""
    async with server(_routes("    " + HOSTILE)) as url:  # the prompt ends with the docstring
        code, _, err = await _cctest(
            "bench", "tasks", "--tasks", str(TASKS), "--limit", "1", "--inputs", "5", "--no-progress",
            "--backend", "http", "--model", url, "--out", "run",
            cwd=tmp_path,
        )  # fmt: skip
    assert code == 0, err.decode()
    [line] = (tmp_path / "run" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    [answer] = json.loads(line)["rounds"]
    assert answer["answer"].rstrip("\n") == "    " + SAFE and answer["category"] == "passed", answer


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.slow
async def test_complete_escapes_a_models_control_sequences_on_a_terminal_only(tmp_path: Path) -> None:
    (tmp_path / "add.py").write_text(SOURCE)
    async with server(_routes(ESCAPES)) as url:
        where = ["complete", "add.py:2:5", "--backend", "http", "--model", url, "-k", "2"]
        leader, follower = os.openpty()
        try:
            reading = asyncio.create_task(asyncio.to_thread(_read_all, leader))
            code, _, err = await _cctest(*where, cwd=tmp_path, stdout=follower)
            os.close(follower)
            follower = -1
            shown = await reading
        finally:
            if follower >= 0:
                os.close(follower)
            os.close(leader)
        assert code == 0, err.decode()
        assert b"\x1b" not in shown and b"\x07" not in shown
        assert b"return a + b  # \\x1b[2J\\x1b]0;owned\\x07\\x1b]8;;http://evil.example/" in shown
        # to a pipe (a file, another program) the completion is exact
        code, out, err = await _cctest(*where, cwd=tmp_path)
    assert code == 0, err.decode()
    assert out.decode("utf-8").splitlines()[0] == ESCAPES
    assert b"\x1b" not in err


def test_a_log_line_with_control_characters_in_a_task_id_is_escaped() -> None:
    """The command line's log handler, in a process of its own (the test runner has its own)."""
    program = (
        "import logging\n"
        "from cctest.cli import log_to_stderr\n"
        "log_to_stderr()\n"
        "logging.getLogger('cctest.tasks.run').warning("
        "'cctest bench tasks: skipping %s; broken', 'Q1\\x1b]0;owned\\x07\\x1b[2J')\n"
    )
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stderr == b"cctest bench tasks: skipping Q1\\x1b]0;owned\\x07\\x1b[2J; broken\n"


def test_an_error_sentence_quoting_control_characters_is_escaped(tmp_path: Path) -> None:
    where = "gone\x1b]0;owned\x07\x1b[2J.py:1:1"
    r = subprocess.run(
        [str(CCTEST), "complete", where, "--backend", "rules"], capture_output=True, timeout=120, cwd=tmp_path
    )
    assert r.returncode == 2 and r.stderr.startswith(b"cctest: ") and r.stderr.count(b"\n") == 1
    assert b"\x1b" not in r.stderr and b"\x07" not in r.stderr
    assert b"gone\\x1b]0;owned\\x07\\x1b[2J.py" in r.stderr


def test_the_benchs_line_for_a_failed_prompt_escapes_its_task_id_and_exception(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unexpected exception (a fault no real backend raises on cue, hence the small subclass)
    on a task whose id and exception text hold control characters."""
    from cctest.backends.rules import RuleBackend
    from cctest.bench.datasets import Problem
    from cctest.bench.runner import RunConfig, run_benchmark
    from cctest.bench.store import RunStore
    from cctest.config import Settings

    class Buggy(RuleBackend):
        async def complete(self, prompts, *, suffixes=None, groups=None):  # type: ignore[no-untyped-def]
            raise RuntimeError("a bug\x1b[2J")

    task = Problem(task_id="t\x1b]0;owned\x07", prompt=SOURCE)
    config = RunConfig(
        dataset="tasks", dataset_source="", tasks=1, thresholds=[1.0], limit=None, shuffle=False,
        settings=Settings(backend="rules", mutants=2),
    )  # fmt: skip
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.prepare(config, resume=False)
    [record] = asyncio.run(
        run_benchmark(
            [task], Settings(backend="rules", mutants=2), config, store,
            backend_factory=lambda s: Buggy(), progress=False,
        )
    )  # fmt: skip
    assert record["error"] == "RuntimeError: a bug\x1b[2J"  # the record keeps the text exactly
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "cctest: t\\x1b]0;owned\\x07: the engine failed (RuntimeError: a bug\\x1b[2J)." in err


def test_the_language_servers_log_lines_are_escaped(tmp_path: Path) -> None:
    """The language server's logging as its ``main`` sets it up, in a process of its own."""
    log = tmp_path / "lsp.log"
    program = (
        "import logging, sys\n"
        "from lsp_server.__main__ import _configure_logging\n"
        "_configure_logging('info', sys.argv[1])\n"
        "logging.getLogger('lsp_server').warning('completion for %s', 'x\\x1b]8;;http://evil/\\x07y')\n"
    )
    r = subprocess.run([sys.executable, "-c", program, str(log)], capture_output=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = log.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\x07" not in text
    assert text.rstrip("\n").endswith("completion for x\\x1b]8;;http://evil/\\x07y")


def test_the_hf_backends_decoded_text_is_made_safe() -> None:
    """A tokenizer whose decoding yields a lone surrogate (a slow, Python tokenizer can; the bundled
    fast one cannot, hence the small stand-in): every decoded row goes through the one ``decode``."""
    from cctest.backends._rows import decode

    class Tokenizer:
        def decode(self, ids: list[int], skip_special_tokens: bool) -> str:
            return "".join({1: "ok ", 2: "\ud800", 3: "é"}[i] for i in ids)

    assert decode(Tokenizer(), [1, 2, 3, 0, 2], {0}) == "ok \ufffdé"


def _on_a_terminal(*args: str, cwd: Path) -> tuple[int, bytes]:
    """``cctest ARGS`` with its stdout a pseudo-terminal: the exit code and the bytes shown."""
    import threading

    leader, follower = os.openpty()
    shown: list[bytes] = []
    reader = threading.Thread(target=lambda: shown.append(_read_all(leader)))
    reader.start()
    try:
        r = subprocess.run(
            [str(CCTEST), *args], stdout=follower, stderr=subprocess.PIPE, timeout=120, cwd=cwd
        )
    finally:
        os.close(follower)
        reader.join(30)
        os.close(leader)
    assert r.returncode == 0, r.stderr
    return r.returncode, shown[0]


def test_defects_list_and_show_escape_a_models_control_sequences_on_a_terminal_only(tmp_path: Path) -> None:
    from cctest.defects import DefectStore
    from cctest.types import Completion, EngineResult, Prompt, Verdict

    bad = "    " + ESCAPES + "\n"
    result = EngineResult(
        prompt=Prompt(text=SOURCE, suffix="", line=2, col=5),
        mutants=(),
        dropped_mutants=(),
        completions=(Completion("original", bad, bad),),
        similarity=((1.0,),),
        verdict=Verdict(outliers=(), chosen=0, no_results=(), counts=(0,), threshold=1.0),
        timings_ms={"total": 1.0},
    )
    db = tmp_path / "defects.sqlite3"
    with DefectStore(db) as store:
        rid = store.add(result, request_id="r1", uri="file:///a.py", line=1, col=4, model="http")
    for action in (["list"], ["show", str(rid)]):
        _, shown = _on_a_terminal("defects", "--db", str(db), *action, cwd=tmp_path)
        assert b"\x1b" not in shown and b"\x07" not in shown
        assert b"return a + b  # \\x1b[2J\\x1b]0;owned\\x07" in shown
    piped = subprocess.run(
        [str(CCTEST), "defects", "--db", str(db), "show", str(rid)], capture_output=True, timeout=120
    )
    assert piped.returncode == 0 and ESCAPES.encode() in piped.stdout
