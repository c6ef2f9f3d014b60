"""The syntactic suite's paper prompt: a program printing the solutions, run in the sandbox on
generated inputs and judged by what it prints, within the paper's ε."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from cctest.bench.store import load_run
from cctest.cli import main
from cctest.formula import size_of
from cctest.suites.syntactic import build_tasks
from cctest.suites.syntactic_program import extract_program, judge_programs, paper_description
from cctest.tasks.model import Task
from cctest.tasks.oracle import OracleSettings

SETTINGS = OracleSettings(inputs=25, input_wall_seconds=1.0)


def original(kind: str) -> Task:
    (task,) = [t for t in build_tasks([kind], [1], 1, prompt="paper") if t.meta["distance"] == 0]
    return task


def test_the_papers_wording() -> None:
    """§5, Prompts 1-5, asking for Python instead of C."""
    assert paper_description("linear", "a*x + b = 0") == (
        "Implement a Python program that finds the solutions for 'x' in a*x + b = 0, where 'a' and 'b' "
        "are inputs to the program. Assume that none of 'a' or 'b' are 0. Print only the solution for "
        "'x' up to 2 digit precision after decimal (do not print anything else)."
    )
    quadratic = paper_description("quadratic", "a*x**2 + b*x + c = 0")
    assert "where 'a', 'b' and 'c' are inputs" in quadratic and "none of 'a', 'b', or 'c' are 0" in quadratic
    assert quadratic.endswith(
        "comma separated form. If there are no real solutions then print 'No real roots'."
    )
    assert "only one of the solutions for 'x' in radian format up to 6 digit precision" in paper_description(
        "tan", "a*tan(x) = b"
    )
    assert "a*log(x) = b, in base 10 (not base e), where" in paper_description("log", "a*log(x) = b")
    assert "a*ln(x) = b, in base e (not base 10), where" in paper_description("ln", "a*ln(x) = b")
    # the tasks: the paper's ε, 0.02 for 2 digits and 0.000002 for the trigonometric 6
    assert original("linear").abs_tol == 0.02 and original("sin").abs_tol == pytest.approx(0.000002)
    assert original("sin").description.startswith("Implement a Python program")
    assert original("sin").meta["prompt"] == "paper"


def test_extract_program() -> None:
    assert extract_program("Here:\n```python\nprint(1)\n```\nDone.") == "print(1)\n"
    assert extract_program("```\nx = 1\n```\n```python\nprint(2)\n```") == "print(2)\n"
    assert extract_program("print(3)\n") == "print(3)\n"
    assert extract_program("   \n") is None


LINES = "a = float(input())\nb = float(input())\nprint(f'{-b / a:.2f}')\n"
SPLIT = "a, b = map(float, input().split())\nprint('x =', round(-b / a, 2))\n"
ARGV = "import sys\na, b = map(float, sys.argv[1:3])\nprint('%.2f' % (-b / a))\n"
MAIN = (
    "def main():\n    a = int(input())\n    b = int(input())\n    print(round(-b / a, 2))\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)
WRONG = "a = float(input())\nb = float(input())\nprint(f'{b / a:.2f}')\n"


@pytest.mark.parametrize("program", [LINES, SPLIT, ARGV, MAIN])
def test_a_right_program_passes_however_it_reads_its_inputs(program: str) -> None:
    """Coefficients one a line on stdin, else on one line, and as arguments; 'x =' around the
    number is taken off, as the paper post-processed outputs."""
    (j,) = judge_programs([(original("linear"), f"```python\n{program}```", None)], SETTINGS)
    assert j.category == "passed" and j.inputs_passed == 25, j.detail


def test_wrong_and_broken_programs() -> None:
    task = original("linear")
    answers = [
        WRONG,
        "print(1",  # does not parse
        "print(undefined_name)\n",
        "import sys\nsys.exit(3)\n",
        "while True:\n    pass\n",
        "",
        "a = float(input())\nb = float(input())\nprint(a, b, -b / a)\n",  # prints more than asked
    ]
    judged = judge_programs([(task, a, None) for a in answers], SETTINGS)
    assert [j.category for j in judged] == [
        "fuzzing_failure",
        "syntax_error",
        "static_error",
        "runtime_error",
        "resource_exhaustion",
        "no_function",
        "fuzzing_failure",
    ]
    assert judged[0].failing_input == 0 and "the solutions are" in judged[0].detail


def test_the_quadratics_roots_and_no_real_roots() -> None:
    right = (
        "import math\na, b, c = (float(input()) for _ in range(3))\nd = b * b - 4 * a * c\n"
        "if d < 0:\n    print('No real roots')\nelse:\n"
        "    r = math.sqrt(d)\n    print(f'{(-b + r) / (2 * a):.2f}, {(-b - r) / (2 * a):.2f}')\n"
    )
    one_root = right.replace(
        "print(f'{(-b + r) / (2 * a):.2f}, {(-b - r) / (2 * a):.2f}')", "print(f'{(-b + r) / (2 * a):.2f}')"
    )
    silent = right.replace("print('No real roots')", "pass")
    judged = judge_programs([(original("quadratic"), a, None) for a in (right, one_root, silent)], SETTINGS)
    assert [j.category for j in judged] == ["passed", "fuzzing_failure", "fuzzing_failure"], judged


def test_one_trigonometric_solution_to_6_digits_modulo_the_period() -> None:
    """asin's value in [-pi/2, pi/2] is a solution modulo 2*pi; 2 digits are not 6 (ε 0.000002)."""
    six = "import math\na = float(input())\nb = float(input())\nprint(f'{math.asin(b / a):.6f}')\n"
    two = six.replace(".6f", ".2f")
    tan = "import math\na = float(input())\nb = float(input())\nprint(f'{math.atan(b / a) + math.pi:.6f}')\n"
    judged = judge_programs(
        [(original("sin"), six, None), (original("sin"), two, None), (original("tan"), tan, None)], SETTINGS
    )
    assert [j.category for j in judged] == ["passed", "fuzzing_failure", "passed"], judged


def program_server(serve_app: Callable[[web.Application], str], seen: list[str]) -> str:
    """A chat server answering a linear-equation program: right for the original equation and
    its sides swapped (11 symbols at most), wrong for anything longer."""

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        (user,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
        seen.append(user)
        formula = re.search(r"for 'x' in (.+?), where", user)
        assert formula, user
        program = LINES if size_of(formula.group(1)) <= 7 else WRONG
        content = f"Here is the program:\n\n```python\n{program}```\n"
        return web.json_response(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return serve_app(app)


def test_bench_syntactic_with_the_papers_prompt_and_rounds(tmp_path: Path, serve_app) -> None:
    """--paper-prompt: the paper's words alone as the chat message, answers judged by what the
    program prints; at a temperature above 0, 5 rounds per variant (the paper's), 1 at 0."""
    seen: list[str] = []
    url = program_server(serve_app, seen)
    argv = ["bench", "syntactic", "--equations", "linear", "--distances", "1", "--variants", "3"]
    argv += ["--paper-prompt", "--inputs", "10", "--backend", "http", "--model", url, "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "greedy")]) == 0
    config, records = load_run(tmp_path / "greedy")
    assert config["rounds"] == 1 and config["mode"] == "chat" and config["suite"]["prompt"] == "paper"
    assert len(seen) == len(records) == 4
    assert all(p.startswith("Implement a Python program that finds") and "function" not in p for p in seen)
    by_id = {r["task_id"]: r["rounds"][0]["category"] for r in records}
    size = {r["task_id"]: size_of(r["meta"]["formula"]) for r in records}
    assert by_id == {t: "passed" if size[t] <= 7 else "fuzzing_failure" for t in by_id}
    assert "passed" in by_id.values() and "fuzzing_failure" in by_id.values()
    seen.clear()
    assert main([*argv, "--temperature", "0.7", "--out", str(tmp_path / "sampled")]) == 0
    config, records = load_run(tmp_path / "sampled")
    assert config["rounds"] == 5 and len(seen) == 5 * 4 and all(len(r["rounds"]) == 5 for r in records)
    assert main([*argv, "--temperature", "0.7", "--rounds", "2", "--out", str(tmp_path / "two")]) == 0
    assert load_run(tmp_path / "two")[0]["rounds"] == 2


def test_the_papers_prompt_is_a_chat_prompt_and_not_for_operational(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "r")
    assert (
        main(["bench", "syntactic", "--paper-prompt", "--completion", "--backend", "rules", "--out", out])
        == 2
    )
    assert "drop --completion" in capsys.readouterr().err
    argv = ["bench", "operational", "--dataset", "syntactic", "--paper-prompt", "--backend", "rules"]
    assert main([*argv, "--out", out]) == 2
    assert "for cctest bench syntactic alone" in capsys.readouterr().err
