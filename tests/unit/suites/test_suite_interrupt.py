"""Ctrl-C on a real ``cctest bench`` task suite (syntactic, turbulence, operational), as
``tests/unit/bench/test_interrupt.py`` does for the completion benchmark: once the first record is
on disk the process gets SIGINT, and it ends with status 130 and the ``--resume`` line, its
records whole. The bound is far beyond what stopping takes, so only a runner that does not stop
(it waits for the work under way: a model call, the samples being judged, a search measuring its
paraphrases in the event loop) reaches it."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from aiohttp import web
from local_server import chat_app
from report_runs import ADD, MUL

HANG_GUARD = 60  # seconds from SIGINT to the process's end


def _bench_interrupted(
    tmp_path: Path, args: Sequence[str], until: Callable[[subprocess.Popen[str], Path], str]
) -> tuple[Path, str]:
    """``cctest bench ARGS --out RUN``, sent SIGINT once ``until(process, RUN)`` returns (what it
    read of the process's stderr); the run directory and the whole stderr, checked: status 130,
    the ``--resume`` line, no traceback."""
    run = tmp_path / "run"
    command = [sys.executable, "-m", "cctest", "bench", *args, "--no-progress", "--out", str(run)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        said = until(proc, run)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        try:
            _, rest = proc.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"cctest bench {args[0]} did not end after Ctrl-C") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = said + (rest or "")
    assert proc.returncode == 130, stderr
    assert f"--resume --out {run}" in stderr and "Traceback" not in stderr
    return run, stderr


def _first_record(proc: subprocess.Popen[str], run: Path) -> str:
    deadline = time.monotonic() + 600
    results = run / "results.jsonl"
    while proc.poll() is None and time.monotonic() < deadline:
        if results.exists() and results.read_bytes().count(b"\n") >= 1:
            break
        time.sleep(0.05)
    return ""


def _interrupted(tmp_path: Path, *args: str) -> tuple[str, list[dict[str, object]]]:
    """``cctest bench ARGS --out RUN``, sent SIGINT once its first record is written; its stderr
    and the records it left."""
    run, stderr = _bench_interrupted(tmp_path, args, _first_record)
    data = (run / "results.jsonl").read_bytes()
    assert data.endswith(b"\n")  # whole records only, no torn line
    records = [json.loads(line) for line in data.splitlines()]
    assert records
    assert not (run / "summary.json").exists()
    return stderr, records


def _slow_after_the_first(user: str, seen: list[str]) -> str:
    """The function the chat message asks for: the first answer returns at once, every later one
    sleeps (its samples are still being judged when Ctrl-C comes)."""
    match = re.search(r"Write a Python function `?(\w+)\(([^)]*)\)", user)  # cctest's wording
    if match:
        name, args = match[1], match[2]
    else:  # Turbulence's: "Write a function called 'f' that takes two arguments, ..."
        match = re.search(r"called '(\w+)' that takes (\w+) argument", user)
        assert match, user
        count = ("one", "two", "three", "four").index(match[2]) + 1
        name, args = match[1], ", ".join(f"x{i}" for i in range(count))
    seen.append(user)
    body = "return 0" if len(seen) == 1 else "import time\n    time.sleep(300)\n    return 0"
    return f"def {name}({args}):\n    {body}\n"


# the chat model answers at once; the samples of all but the first answer sleep for as long as
# a call may take, so a runner that waits for them at Ctrl-C does not end for minutes
SLOW_SAMPLES = ("--chat", "--rounds", "1", "--batch-prompts", "1", "--inputs", "5")
SLOW_SAMPLES += ("--input-timeout", "300", "--input-cpu", "300")


def test_ctrl_c_stops_the_syntactic_suite(
    tmp_path: Path, serve_app: Callable[[web.Application], str]
) -> None:
    seen: list[str] = []
    url = serve_app(chat_app(lambda user: _slow_after_the_first(user, seen), []))
    _interrupted(
        tmp_path,
        *("syntactic", "--equations", "linear,sin", "--distances", "1", "--variants", "3"),
        *("--backend", "http", "--model", url, *SLOW_SAMPLES),
    )
    assert len(seen) > 1


def test_ctrl_c_stops_the_turbulence_suite(
    tmp_path: Path, serve_app: Callable[[web.Application], str]
) -> None:
    seen: list[str] = []
    url = serve_app(chat_app(lambda user: _slow_after_the_first(user, seen), []))
    _interrupted(
        tmp_path,
        *("turbulence", "--templates", "1,2,3", "--instances", "2"),
        *("--backend", "http", "--model", url, *SLOW_SAMPLES),
    )
    assert len(seen) > 1


WORDS = (
    "return the total of two given numbers and report that result as one value when both inputs "
    "are whole numbers give back their plain sum otherwise keep the same order and explain nothing"
).split()


def test_ctrl_c_stops_the_operational_suite_while_it_measures(
    tmp_path: Path, serve_app: Callable[[web.Application], str]
) -> None:
    """The first task's original answer names another function (its record is written at once);
    the others' descriptions are near the cap of 1,000 words, so their searches measure 1,000
    paraphrases each by every metric, seconds of work that held the event loop (and Ctrl-C with
    it) for minutes."""
    url = serve_app(chat_app(lambda user: "def add(a, b):\n    return a + b\n", []))
    rng = random.Random(1)
    tasks = [dict(MUL)]
    for i in range(6):
        words = " ".join(rng.choice(WORDS) for _ in range(980))
        tasks.append({**ADD, "task_id": f"add-{i}", "description": f"Return the sum of a and b. {words}"})
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    _, records = _interrupted(
        tmp_path,
        *("operational", "--tasks", str(path), "--backend", "http", "--model", url, "--chat"),
        *("--inputs", "5", "--answers-cache", "none"),
    )
    assert [r["task_id"] for r in records] == ["mul"] and records[0]["status"] == "original_failed"


def _loading(proc: subprocess.Popen[str], run: Path) -> str:
    assert proc.stderr is not None
    first = proc.stderr.readline()
    assert first == "cctest: loading model bundled…\n", first
    return first


def _interrupted_while_loading(tmp_path: Path, *args: str) -> str:
    """``cctest bench ARGS`` on the bundled model, sent SIGINT as soon as it says the model is
    loading; its stderr. The load (importing the model's libraries, reading its weights) takes
    seconds, and a run that loaded it in its event loop heard Ctrl-C only once it had finished."""
    run, stderr = _bench_interrupted(tmp_path, args, _loading)
    # it did not wait for the load to end: the thread loading was left behind
    assert "done (" not in stderr and "the model load in flight was abandoned" in stderr, stderr
    assert not (run / "results.jsonl").exists() or not (run / "results.jsonl").read_bytes()
    return stderr


def test_ctrl_c_while_the_model_loads_stops_the_completion_bench(tmp_path: Path) -> None:
    _interrupted_while_loading(tmp_path, "--dataset", "humaneval", "--limit", "1", "-k", "2")


def test_ctrl_c_while_the_model_loads_stops_a_task_suite(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(ADD) + "\n", encoding="utf-8")
    _interrupted_while_loading(tmp_path, "tasks", "--tasks", str(path))


def test_ctrl_c_while_the_model_loads_stops_the_operational_suite(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(ADD) + "\n", encoding="utf-8")
    _interrupted_while_loading(tmp_path, "operational", "--tasks", str(path), "--answers-cache", "none")
