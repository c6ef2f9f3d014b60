"""Turbulence's rounds as the paper counts and asks them (issue 29, items 4 and 7): CorrSc over
M × N with a backend error as a wrong answer, and each round a request of its own with a seed of
its own, against real servers on 127.0.0.1 that record what they are sent."""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from cctest.bench.store import load_run
from cctest.cli import main

INSTANCES = 4


def right_answer(question: str) -> str:
    """A correct answer to Q1 (an inclusive slice), a wrong one to Q2."""
    found = re.search(r"function called '(\w+)'", question)
    assert found, question
    i, j = map(int, re.findall(r"index (\d+)", question))
    if found.group(1) == "elements_inclusive":
        return f"```python\ndef elements_inclusive(lst):\n    return lst[{i}:{j} + 1]\n```\n"
    return f"```python\ndef {found.group(1)}(lst):\n    return [0]\n```\n"


def _argv(url: str, run: Path, *extra: str) -> list[str]:
    return [
        "bench", "turbulence", "--templates", "1,2", "--instances", str(INSTANCES), "--inputs", "5",
        "--chat", "--backend", "http", "--model", url, "--no-progress", "--out", str(run), *extra,
    ]  # fmt: skip


@pytest.fixture
def failing_server(serve_app: Callable[[web.Application], str]) -> tuple[str, list[str]]:
    """An OpenAI chat server that answers Q1 correctly except the first time each instance is
    asked (a 400, which is not retried) and refuses every question of Q2."""
    seen: list[str] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        (user,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
        before = seen.count(user)
        seen.append(user)
        await asyncio.sleep(0.01)
        if "elements_exclusive" in user or not before:
            return web.json_response({"error": {"message": "overloaded"}}, status=400)
        content = right_answer(user)
        return web.json_response(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return serve_app(app), seen


def test_corrsc_is_over_m_times_n_with_a_backend_error_as_a_wrong_answer(
    tmp_path: Path, failing_server: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, seen = failing_server
    run = tmp_path / "run"
    assert main(_argv(url, run, "--rounds", "2")) == 0
    assert len(seen) == 2 * 2 * INSTANCES
    summary = json.loads((run / "summary.json").read_text())
    # Q1: every instance answered right once and failed by the server once: 4 / (4 × 2)
    assert summary["corrsc"] == {"Q1": 0.5, "Q2": 0.0}
    assert summary["corrsc_mean"] == 0.25
    assert summary["classes"]["templates"]["random_failure"] == ["Q1"]
    assert summary["classes"]["templates"]["perfect_failure"] == ["Q2"]
    assert summary["histogram"]["0.0"] == 1 and summary["histogram"]["[0.5, 0.6)"] == 1
    # the errors are counted and said, not hidden: per template and in one sentence
    assert summary["counts"]["backend_errors"] == INSTANCES + 2 * INSTANCES
    errors = summary["corrsc_backend_errors"]
    assert errors["total"] == 3 * INSTANCES
    assert errors["per_template"] == {"Q1": INSTANCES, "Q2": 2 * INSTANCES}
    assert "12 backend errors" in errors["note"] and "wrong answer" in errors["note"]
    assert summary["neighbourhoods"]["Q1"] == {
        "instances": INSTANCES,
        "rounds": 2,
        "answers": INSTANCES,
        "backend_errors": INSTANCES,
    }
    # Table II holds the judged answers only: an error has no category
    assert sum(summary["failure_categories"]["counts"].values()) == 0
    assert summary["params_of_failures"]["Q2"]["failing"][0]["failed_rounds"] == 2
    # the terminal and report.html say the same: the note under the headline, and per template
    # M × N and its backend errors
    out = capsys.readouterr().out
    page = html.unescape((run / "report.html").read_text())
    assert f"<p class='note'>{errors['note']}</p>" in page and errors["note"] in out.splitlines()[1]
    table = "Per template: CorrSc, backend errors, failing parameters, outliers"
    assert re.search(r"Q1\s+50\.0%\s+4 × 2\s+4\s+random failure", out.split(table)[1])
    assert re.search(r"Q2\s+0\.0%\s+4 × 2\s+8\s+perfect failure", out.split(table)[1])
    assert "<th>M × N</th><th>backend errors</th>" in page
    assert "<td>Q1</td><td>50.0%</td><td>4 × 2</td><td>4</td>" in page


# -- item 7: each round a request of its own, with a seed of its own -----------------------------


def _seed_of(body: dict[str, Any]) -> Any:
    """Where each provider's API takes the seed: OpenAI's ``seed``, Ollama's ``options.seed``,
    TGI's ``parameters.seed``."""
    if "parameters" in body:
        return body["parameters"].get("seed")
    if "options" in body:
        return body["options"].get("seed")
    return body.get("seed")


@pytest.fixture
def recording_server(serve_app: Callable[[web.Application], str]) -> tuple[str, list[tuple[str, Any]]]:
    """Every provider's completion and chat endpoint, answering Q1 correctly and recording each
    request's question and seed."""
    asked: list[tuple[str, Any]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        if "messages" in body:
            question = next(m["content"] for m in body["messages"] if m["role"] == "user")
        else:
            question = str(body.get("prompt", body.get("inputs")))
        asked.append((question, _seed_of(body)))
        text = right_answer(question) if "messages" in body else "    return lst\n"
        if request.path == "/api/generate":
            return web.json_response({"response": text, "done": True})
        if request.path == "/generate":
            return web.json_response({"generated_text": text})
        message = {"role": "assistant", "content": text}
        return web.json_response({"choices": [{"index": 0, "message": message, "text": text}]})

    app = web.Application()
    for path in ("/v1/chat/completions", "/v1/completions", "/api/generate", "/generate"):
        app.router.add_post(path, handle)
    return serve_app(app), asked


def _seeds_by_question(asked: list[tuple[str, Any]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for question, seed in asked:
        out.setdefault(question, []).append(seed)
    return out


@pytest.mark.parametrize("temperature", ["0", "0.8"])
def test_each_round_is_a_request_of_its_own_with_its_own_seed(
    tmp_path: Path, recording_server: tuple[str, list[tuple[str, Any]]], temperature: str
) -> None:
    url, asked = recording_server

    def argv(run: str, *extra: str) -> list[str]:
        out = _argv(url, tmp_path / run, "--rounds", "3", "--temperature", temperature, *extra)
        out[out.index("1,2")] = "1"
        return out

    assert main(argv("a", "--batch-prompts", "4")) == 0
    first = _seeds_by_question(asked)
    # N rounds: N requests per instance, each with a seed of its own, at temperature 0 too
    assert len(first) == INSTANCES and all(len(s) == 3 for s in first.values())
    assert all(isinstance(x, int) for s in first.values() for x in s)
    assert all(len(set(s)) == 3 for s in first.values())
    assert len({x for s in first.values() for x in s}) == 3 * INSTANCES  # no two rounds share one
    # the records say each round's seed
    _, records = load_run(tmp_path / "a")
    recorded = {(r["prompt"][-1]["content"], a["seed"]) for r in records for a in r["rounds"]}
    assert recorded == {(q, x) for q, s in first.items() for x in s}
    # a re-run (batched otherwise) asks the same rounds with the same seeds
    asked.clear()
    assert main(argv("b", "--batch-prompts", "1")) == 0
    again = _seeds_by_question(asked)
    assert {q: sorted(s) for q, s in again.items()} == {q: sorted(s) for q, s in first.items()}
    # another --seed, other seeds
    asked.clear()
    assert main(argv("c", "--seed", "1")) == 0
    assert not {x for s in first.values() for x in s} & {x for _, x in asked}


@pytest.mark.parametrize("provider", ["openai", "ollama", "tgi"])
def test_every_provider_carries_each_rounds_seed_where_its_api_takes_it(
    tmp_path: Path, recording_server: tuple[str, list[tuple[str, Any]]], provider: str
) -> None:
    url, asked = recording_server
    argv = _argv(url, tmp_path / "run", "--rounds", "2", "--provider", provider, "--model-name", "m")
    argv[argv.index("1,2")] = "1"
    argv[argv.index("--chat")] = "--completion"
    assert main(argv) == 0
    seeds = _seeds_by_question(asked)
    assert len(seeds) == INSTANCES and all(len(set(s)) == 2 and None not in s for s in seeds.values())


@pytest.mark.slow
def test_a_local_models_rounds_are_sampled_by_their_own_seeds(tmp_path: Path) -> None:
    """The hf backend ``SeedsEachRequest`` too: each round recorded with its seed, and its answer
    the same whatever batch it came in."""
    from cctest.tasks.run import round_seed

    def run(name: str, batch: str) -> dict[tuple[str, int], tuple[Any, Any]]:
        argv = [
            "bench", "turbulence", "--templates", "1", "--instances", "2", "--rounds", "2",
            "--inputs", "5", "--temperature", "0.8", "--max-new-tokens", "24",
            "--batch-prompts", batch, "--no-progress", "--out", str(tmp_path / name),
        ]  # fmt: skip
        assert main(argv) == 0
        _, records = load_run(tmp_path / name)
        rounds = [(r["task_id"], i, a) for r in records for i, a in enumerate(r["rounds"])]
        return {(task, i): (a["seed"], a["answer"]) for task, i, a in rounds}

    batched = run("a", "2")
    assert len(batched) == 4
    assert all(seed == round_seed(0, task, i) for (task, i), (seed, _) in batched.items())
    assert run("b", "1") == batched  # each round alone: the same answers
