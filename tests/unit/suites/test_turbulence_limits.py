"""Turbulence without an instance lost to a time limit (issue 45): the prompt the published runs
recorded and the repository's current one; per-call limits relative to each model solution's own
time, measured once per instance and recorded with it; and the public benchmark's Q45, whose
model solution runs for seconds and needs more than a gigabyte on some rows, judged on every
instance (read from ``../shared``, never copied into the repository)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web
from test_turbulence_harness import clone

from cctest.bench.store import load_run
from cctest.cli import main
from cctest.suites.turbulence import BENCHMARK_INSTRUCTION, RECORDED_INSTRUCTION, fill
from cctest.tasks import Task
from cctest.tasks.oracle import REFERENCE_TIMES
from cctest.tasks.render import ChatStyle, chat_messages

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data" / "turbulence"
# the "complete_prompt" the benchmark's published GPT-4 runs recorded for Q1, instance 11
# (GPT4_T_0/Q1/gpt_4_results_1/Folder_11/model_specs_prompt.json)
Q1_RECORDED = (
    "Here is a text specification delimited by angle brackets. Create Python code according to the "
    "text specification. <Write a function called 'all_ints_inclusive' that takes one argument, a list "
    "of integers, and returns the list of all elements from index 22 to index 63, both inclusive.> The "
    "Python code should not contain any comments. The Python code should be delimited only by triple "
    "backticks."
)


def test_the_recorded_prompt_is_the_published_runs_and_the_harnesss_puts_the_question_last():
    if not (DATA / "All_questions.json").is_file():
        pytest.skip("the recovered Turbulence benchmark (shared/data/turbulence) is not beside the clone")
    question = fill(json.loads((DATA / "All_questions.json").read_text())["1"], [22, 63])
    task = Task("Q1/10", question, "all_ints_inclusive", args=("lst",), tests=("assert True",))
    recorded = chat_messages(task, ChatStyle(instruction=RECORDED_INSTRUCTION))[0]["content"]
    assert recorded == Q1_RECORDED
    current = chat_messages(task, ChatStyle(instruction=BENCHMARK_INSTRUCTION))[0]["content"]
    assert current.endswith(f"triple backticks. <{question}>") and current != recorded


@pytest.fixture
def chat_server(serve_app: Callable[[web.Application], str]) -> tuple[str, list[str]]:
    """An OpenAI-style chat server answering cctest's template 1 correctly; it keeps each prompt."""
    seen: list[str] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        (user,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
        seen.append(user)
        i, j = map(int, re.findall(r"index (\d+)", user))
        await asyncio.sleep(0.01)
        content = f"```python\ndef elements_inclusive(lst):\n    return lst[{i}:{j} + 1]\n```"
        return web.json_response(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return serve_app(app), seen


def test_a_run_asks_the_recorded_prompt_and_records_each_instances_reference_times(tmp_path, chat_server):
    url, seen = chat_server
    base = ["bench", "turbulence", "--templates", "1", "--instances", "3", "--rounds", "1", "--inputs", "4"]
    base += ["--chat", "--backend", "http", "--model", url, "--no-progress"]
    assert main([*base, "--out", str(tmp_path / "run")]) == 0
    config, records = load_run(tmp_path / "run")
    assert config["suite"]["prompt"] == "recorded" and config["oracle"]["input_limits"] == "reference"
    assert len(seen) == 3 and all(re.search(r"specification\. <.*> The Python code", q) for q in seen)
    assert all(r["rounds"][0]["category"] == "passed" for r in records)
    for r in records:  # measured once per instance, recorded with it
        times = r["meta"][REFERENCE_TIMES]
        assert len(times["inputs"]) == 4 and times["seed"] == 0 and times["memory_mb"] > 0
        assert all(t is None or t >= 0 for t in times["tests"] + times["inputs"])
    seen.clear()
    argv = [*base, "--prompt", "benchmark", "--input-limits", "fixed", "--out", str(tmp_path / "fixed")]
    assert main(argv) == 0
    config, records = load_run(tmp_path / "fixed")
    assert config["suite"]["prompt"] == "benchmark" and "input_limits" not in config["oracle"]
    assert all(q.endswith(">") and "backticks. <" in q for q in seen)
    assert all(REFERENCE_TIMES not in r["meta"] for r in records)


@pytest.mark.slow
def test_q45_every_instance_is_judged_and_its_model_solution_is_correct(tmp_path):
    """Q45's model solution takes seconds of CPU on some rows, more than a gigabyte on its row 24
    (permutations of ten letters), far past the fixed 1 s / 1 GB: with limits relative to it,
    no instance is skipped and its own solutions score CorrSc 1.0."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from turbulence_acceptance import acceptance
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    r = acceptance(clone(tmp_path), instances=25, inputs=1, only=["45"])
    assert r["skipped_instances"] == {}, r["skipped_instances"]
    assert r["judged"] == {"Q45": 25} and r["corrsc"] == {"Q45": 1.0}, r["failures"]
    assert r["classes"] == {"Q45": "perfect_success"}
