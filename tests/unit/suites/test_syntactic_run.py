"""``cctest bench syntactic`` end to end: against a scripted model server whose answers are right
for some prompts and wrong for others (so the degree is known exactly), and on the bundled model."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from cctest.bench.store import load_run
from cctest.cli import main
from cctest.formula import EQUATIONS, parse_equation, reduce, size_of, variants

RIGHT = "    return [round(-b / a, 2)]\n"
WRONG = "    return [round(b / a, 2)]\n"  # what a model that misreads the equation might write


def answer(prompt: str) -> str:
    """Right when the prompt's equation has at most 11 symbols (the original, M1, one more
    operation), wrong for anything longer."""
    formula = re.search(r"in the equation (.+?), where", prompt)
    assert formula, prompt
    return RIGHT if size_of(formula.group(1)) <= 11 else WRONG


@pytest.fixture
def scripted_server(serve_app: Callable[[web.Application], str]) -> tuple[str, list[str]]:
    """An OpenAI-style /v1/completions and /v1/chat/completions server on 127.0.0.1."""
    seen: list[str] = []

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body["prompt"])
        return web.json_response({"choices": [{"index": 0, "text": answer(body["prompt"])}]})

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        (user,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
        seen.append(user)
        code = "def solve(a, b):\n" + answer(user)
        content = f"Here is the function:\n\n```python\n{code}```\n\nIt returns the root."
        return web.json_response(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        )

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat)
    return serve_app(app), seen


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_suite_against_a_scripted_server_gives_the_exact_degree(tmp_path, scripted_server, capsys, mode):
    url, seen = scripted_server
    run = tmp_path / "run"
    argv = ["bench", "syntactic", "--equations", "linear", "--distances", "1-3", "--variants", "5"]
    argv += ["--reduce", "--inputs", "30", "--backend", "http", "--model", url, "--no-progress"]
    argv += ["--chat"] if mode == "chat" else ["--completion"]
    assert main([*argv, "--out", str(run)]) == 0
    # the expected degree, from the variants themselves
    eq = parse_equation(EQUATIONS["linear"])
    expected = {}
    for d in (1, 2, 3):
        vs = variants(eq, d, count=5, seed=0)
        expected[str(d)] = sum(v.equation.size <= 11 for v in vs) / len(vs)
        assert all(reduce(v.equation).equation.size <= 11 for v in vs)
    assert 0 < expected["2"] < 1  # right for some prompts, wrong for others
    summary = json.loads((run / "summary.json").read_text())
    deg = summary["robustness_degree"]
    assert deg["by_distance"] == expected
    assert deg["by_equation"]["linear"] == pytest.approx(sum(expected.values()) / 3)
    assert deg["overall"] == pytest.approx(sum(expected.values()) / 3)
    assert set(deg["by_mutation"]) <= {"M1", "M2", "M3", "M4", "M5"} and "M1" in deg["by_mutation"]
    assert summary["reduced"]["robustness_degree"]["by_distance"] == {"1": 1.0, "2": 1.0, "3": 1.0}
    assert summary["variants"] == {"1": 5, "2": 5, "3": 5}
    n_wrong = round(15 - 15 * deg["overall"])
    assert summary["categories_by_set"]["variants"]["fuzzing_failure"] == n_wrong
    assert summary["categories"]["passed"] == 1 + (15 - n_wrong) + 15  # original, variants, reduced
    assert summary["original"]["by_equation"] == {"linear": 1.0}
    # every prompt reached the model once: the stub with the formula in its docstring
    config, records = load_run(run)
    assert config["kind"] == "syntactic" and config["oracle"]["inputs"] == 30 and config["mode"] == mode
    assert config["suite"]["reduce"] and config["suite"]["equations"] == ["linear"]
    assert len(seen) == len(records) == 1 + 15 + 15
    if mode == "completion":
        assert all(p.startswith("def solve(a, b):\n") for p in seen)
    else:
        assert all("`solve(a, b)`" in p and "Find the solutions for 'x'" in p for p in seen)
    html = (run / "report.html").read_text()
    assert "Robustness degree against syntactic distance" in html and "<svg" in html
    out = capsys.readouterr().out
    assert "Robustness degree by distance" in out
    # the report is rebuilt from the records alone
    (run / "summary.json").unlink()
    assert main(["bench", "report", str(run)]) == 0
    assert json.loads((run / "summary.json").read_text()) == summary


@pytest.mark.slow
def test_suite_on_the_bundled_model_for_one_equation(tmp_path: Path):
    run = tmp_path / "run"
    argv = ["bench", "syntactic", "--equations", "linear", "--distances", "1", "--variants", "3"]
    assert main([*argv, "--reduce", "--inputs", "20", "--no-progress", "--out", str(run)]) == 0
    config, records = load_run(run)
    assert config["backend"] == "hf" and config["kind"] == "syntactic"
    assert len(records) == 1 + 3 + 3
    for r in records:
        assert r["prompt"].startswith("def solve(a, b):\n") and r["meta"]["formula"] in r["prompt"]
        assert r["rounds"][0]["category"] is not None and r["rounds"][0]["answer"] is not None
    summary = json.loads((run / "summary.json").read_text())
    deg = summary["robustness_degree"]
    assert set(deg) >= {"by_distance", "by_equation", "by_mutation", "overall"}
    assert 0 <= deg["overall"] <= 1 and deg["answers"] == 3
    assert summary["reduced"]["robustness_degree"]["answers"] == 3
    assert sum(summary["categories"].values()) == 7


@pytest.mark.parametrize(
    "extra",
    [["--equations", "cubic"], ["--distances", "0-2"], ["--variants", "0"], ["--epsilon", "-1"], ["oops"]],
)
def test_bad_options_are_one_sentence_and_exit_2(tmp_path, capsys, extra):
    assert main(["bench", "syntactic", *extra, "--backend", "rules", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cctest: ") and err.count("\n") == 1
