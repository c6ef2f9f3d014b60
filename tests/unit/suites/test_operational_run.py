"""``cctest bench operational`` end to end against a scripted chat server, with WordNet's
neighbours: the summary's keys, the answer cache across runs, and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web

from cctest.bench.runner import load_run
from cctest.cli import main

ADD = {
    "task_id": "add",
    "description": "Return the sum of a and b.",
    "name": "add",
    "args": ["a", "b"],
    "reference": "def add(a, b):\n    return a + b\n",
    "tests": ["assert add(2, 3) == 5"],
}
MUL = {
    "task_id": "mul",
    "description": "Multiply a by b and return the result.",
    "name": "mul",
    "args": ["a", "b"],
    "reference": "def mul(a, b):\n    return a * b\n",
    "tests": ["assert mul(2, 3) == 6"],
}


def answer(user: str) -> str:
    """mul is always right; add is right only while its description says 'sum'."""
    if "`mul(a, b)`" in user:
        return "def mul(a, b):\n    return a * b\n"
    return "def add(a, b):\n    return a + b\n" if " sum " in user else "def add(a, b):\n    return a - b\n"


@pytest.fixture
def server(serve_app) -> tuple[str, list[str]]:
    """An OpenAI-style chat server answering a fenced block of ``answer(user message)``."""
    seen: list[str] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        (user,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
        seen.append(user)
        message = {"role": "assistant", "content": f"```python\n{answer(user)}```"}
        return web.json_response({"choices": [{"index": 0, "message": message}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return serve_app(app), seen


def test_operational_run_cache_and_resume(tmp_path: Path, server, capsys) -> None:
    url, seen = server
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(ADD) + "\n" + json.dumps(MUL) + "\n")
    cache = tmp_path / "answers.sqlite"
    base = [
        "bench",
        "operational",
        "--tasks",
        str(tasks),
        "--backend",
        "http",
        "--model",
        url,
        "--chat",
        "--inputs",
        "5",
        "--n",
        "2",
        "--k",
        "1",
        "--answers-cache",
        str(cache),
        "--no-progress",
    ]
    run1 = tmp_path / "run1"
    assert main([*base, "--budget", "4", "--out", str(run1)]) == 0
    summary = json.loads((run1 / "summary.json").read_text())
    assert {"r_o", "r_star", "unbroken", "queries_per_task", "first_failures"} <= set(summary)
    # add: 'Tax return the sum ...' (one word inserted) passes, 'sum' -> WordNet's 'amount' breaks it
    (ff,) = summary["first_failures"]
    assert ff["task"] == "add" and ff["replaced"] == [["sum", "amount", 11]]
    assert ff["paraphrase"] == "Return the amount of a and b." and ff["category"] == "fuzzing_failure"
    assert summary["r_o"]["lev_word"] == 1 and summary["r_star"]["lev_word"] == 1
    assert summary["r_star"]["lev_char"] == 5  # "R" -> "Tax r": 4 insertions, 1 substitution
    assert summary["unbroken"] == 1 and summary["unbroken_tasks"] == ["mul"]
    assert summary["queries_per_task"] == (3 + 4) / 2
    assert len(seen) == 7
    html = (run1 / "report.html").read_text()
    assert "<mark title='sum'>amount</mark>" in html and "return a - b" in html
    assert "Rᵒ" in capsys.readouterr().out
    # a re-run with a doubled budget asks only the new queries (mul's next 4)
    run2 = tmp_path / "run2"
    assert main([*base, "--budget", "8", "--out", str(run2)]) == 0
    assert len(seen) == 7 + 4
    s2 = json.loads((run2 / "summary.json").read_text())
    assert s2["queries"] == {"total": 3 + 8, "cached": 7, "widenings": s2["queries"]["widenings"]}
    # resume: a run cut after its first record finishes the rest from the cache, asking nothing
    lines = (run2 / "results.jsonl").read_text().splitlines(keepends=True)
    (run2 / "results.jsonl").write_text(lines[0])
    assert main([*base, "--budget", "8", "--out", str(run2), "--resume"]) == 0
    assert len(seen) == 11
    _, records = load_run(run2)
    assert [r["task_id"] for r in records] == ["add", "mul"]
    assert json.loads((run2 / "summary.json").read_text())["r_o"] == s2["r_o"]


def test_bad_options_are_one_sentence(tmp_path: Path, capsys) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(ADD) + "\n")
    for extra, message in (
        (["--metric", "cosine"], "needs --vectors FILE"),
        (["--budget", "0"], "--budget must be at least 1"),
        (["--vectors", str(tmp_path / "none.txt")], "cannot read the vectors file"),
    ):
        assert (
            main(["bench", "operational", "--tasks", str(tasks), *extra, "--out", str(tmp_path / "r")]) == 2
        )
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
