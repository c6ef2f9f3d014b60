"""``cctest bench turbulence`` end to end against a scripted chat server whose answers are right
or wrong by parameter, so CorrSc and the four classes are known exactly; resume after a kill."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from cctest.bench.store import load_run
from cctest.cli import main
from cctest.suites.turbulence import BUILTIN, load_benchmark, parameter_rows

ROOT = Path(__file__).resolve().parents[3]
INSTANCES = 12


def answer(question: str, seen_before: int) -> str:
    """Q1 always right, Q2 always wrong, Q5 wrong the first time each instance is asked and
    right after, Q13 wrong exactly when its bounds are equal."""
    name = re.search(r"function called '(\w+)'", question)
    assert name, question
    fn = name.group(1)
    if fn == "elements_inclusive":
        i, j = map(int, re.findall(r"index (\d+)", question))
        body = f"return lst[{i}:{j} + 1]"
    elif fn == "elements_exclusive":
        i, j = map(int, re.findall(r"index (\d+)", question))
        body = f"return [0] + lst[{i} + 1:{j}]"  # one element too many, always
    elif fn == "substring_inclusive":
        i, j = map(int, re.findall(r"index (\d+)", question))
        body = f"return s[{i}:{j} + 1]" if seen_before else "raise ValueError('not today')"
    else:
        assert fn == "is_strictly_between", fn
        lo, hi = map(int, re.search(r"greater than (-?\d+) and less than (-?\d+)", question).groups())  # type: ignore[union-attr]
        body = f"return {lo} < x < {hi}" if lo != hi else f"return {lo} <= x <= {hi}"
    arg = {"substring_inclusive": "s", "is_strictly_between": "x"}.get(fn, "lst")
    return f"Sure:\n\n```python\ndef {fn}({arg}):\n    {body}\n```\n"


@pytest.fixture
def chat_server(serve_app: Callable[[web.Application], str]) -> tuple[str, list[str]]:
    """An OpenAI-style /v1/chat/completions server on 127.0.0.1 answering by ``answer``."""
    seen: list[str] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        (user,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
        before = seen.count(user)
        seen.append(user)
        await asyncio.sleep(0.02)
        content = answer(user, before)
        return web.json_response(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return serve_app(app), seen


def _argv(url: str, run: Path, templates: str = "1,2,5,13") -> list[str]:
    return [
        "bench", "turbulence", "--templates", templates, "--instances", str(INSTANCES), "--rounds", "2",
        "--inputs", "20", "--chat", "--backend", "http", "--model", url, "--no-progress", "--out", str(run),
    ]  # fmt: skip


def test_classes_corrsc_and_table_ii_are_exact(tmp_path, chat_server, capsys):
    url, seen = chat_server
    run = tmp_path / "run"
    assert main(_argv(url, run)) == 0
    summary = json.loads((run / "summary.json").read_text())
    q13 = parameter_rows(load_benchmark(BUILTIN, ["13"]), shuffle=False, spread_lists=True)["13"][:INSTANCES]
    equal = [r for r in q13 if r[0] == r[1]]
    assert 0 < len(equal) < INSTANCES
    assert summary["corrsc"] == {"Q1": 1.0, "Q2": 0.0, "Q5": 0.5, "Q13": 1 - len(equal) / INSTANCES}
    assert summary["classes"]["templates"] == {
        "perfect_success": ["Q1"],
        "perfect_failure": ["Q2"],
        "consistent_failure": ["Q13"],
        "random_failure": ["Q5"],
    }
    assert summary["classes"]["counts"] == dict.fromkeys(summary["classes"]["counts"], 1)
    h = summary["histogram"]
    assert len(h) == 12 and h["1.0"] == 1 and h["0.0"] == 1 and h["[0.5, 0.6)"] == 1 and sum(h.values()) == 4
    fc = summary["failure_categories"]["counts"]
    assert fc["assertion_error"] == 2 * INSTANCES + 2 * len(equal) and fc["runtime_error"] == INSTANCES
    assert sum(fc.values()) == 3 * INSTANCES + 2 * len(equal)
    failing = summary["params_of_failures"]["Q13"]
    assert [f["params"] for f in failing["failing"]] == equal
    assert failing["patterns"]["bounds_equal"]["failing_share"] == 1.0
    assert "Q1" not in summary["params_of_failures"]
    assert set(summary["outliers"]["per_template"]) == {"Q1", "Q2", "Q5", "Q13"}
    assert summary["outliers"]["overall"]["failed"] == sum(fc.values())
    # every instance asked twice, in chat
    config, records = load_run(run)
    assert config["kind"] == "turbulence" and config["suite"]["instances"] == INSTANCES
    assert len(records) == 4 * INSTANCES and len(seen) == 2 * len(records)
    html = (run / "report.html").read_text()
    assert "CorrSc histogram (Figure 3)" in html and "side by side" in html and "<svg" in html
    assert "Failures by category (Table II)" in capsys.readouterr().out
    # the summary is rebuilt from the records alone; two runs compare
    (run / "summary.json").unlink()
    assert main(["bench", "report", str(run)]) == 0
    assert json.loads((run / "summary.json").read_text()) == summary
    other = tmp_path / "other"
    assert main(_argv(url, other, "1,13")) == 0
    assert main(["bench", "compare", str(run), str(other)]) == 0
    assert "consistent failure" in capsys.readouterr().out


def test_resume_after_a_kill_asks_only_what_is_missing(tmp_path, chat_server):
    url, seen = chat_server
    run = tmp_path / "run"
    argv = [*_argv(url, run, "1,13"), "--batch-prompts", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "cctest", *argv], env=env, stderr=subprocess.DEVNULL)
    results = run / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and len(results.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(results.read_text().splitlines())
    assert 3 <= done < 2 * INSTANCES
    asked = len(seen)
    assert main([*argv, "--resume"]) == 0
    _, records = load_run(run)
    assert len(records) == 2 * INSTANCES and len({r["task_id"] for r in records}) == 2 * INSTANCES
    assert len(seen) - asked == 2 * (2 * INSTANCES - done)  # only the missing instances, two rounds each
    summary = json.loads((run / "summary.json").read_text())
    assert summary["classes"]["templates"]["perfect_success"] == ["Q1"]
    assert summary["classes"]["templates"]["consistent_failure"] == ["Q13"]


@pytest.mark.parametrize(
    "extra",
    [["--instances", "0"], ["--templates", "99"], ["--benchmark", "/nonexistent"], ["oops"]],
)
def test_bad_options_are_one_sentence_and_exit_2(tmp_path, capsys, extra):
    assert main(["bench", "turbulence", *extra, "--backend", "rules", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cctest: ") and err.count("\n") == 1


@pytest.mark.slow
def test_suite_on_the_bundled_model_for_two_templates(tmp_path: Path) -> None:
    run = tmp_path / "run"
    argv = ["bench", "turbulence", "--templates", "1,13", "--instances", "2", "--rounds", "1"]
    assert main([*argv, "--inputs", "10", "--no-progress", "--out", str(run)]) == 0
    config, records = load_run(run)
    assert config["backend"] == "hf" and config["kind"] == "turbulence" and len(records) == 4
    for r in records:
        assert r["rounds"][0]["category"] is not None and r["rounds"][0]["answer"] is not None
        assert r["meta"]["template"] in ("Q1", "Q13") and len(r["meta"]["params"]) == 2
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary["corrsc"]) == {"Q1", "Q13"} and all(0 <= s <= 1 for s in summary["corrsc"].values())
    assert sum(summary["classes"]["counts"].values()) == 2 and sum(summary["histogram"].values()) == 2
