"""Real small runs of every kind of report (bench, compare, tasks, syntactic, turbulence,
operational), made with the CLI against the rules backend or a scripted model server on
127.0.0.1, for the tests that look at the reports themselves.

``python tests/unit/report_runs.py DIR`` makes them in DIR and prints the reports' paths.
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

from aiohttp import web
from local_server import serve_in_thread

from cctest.cli import main

ROOT = Path(__file__).resolve().parents[2]
BENCH_TASKS = ROOT / "tests" / "data" / "bench" / "tasks.jsonl"
SMALL_TASKS = ROOT / "tests" / "data" / "tasks" / "small.jsonl"

ADD: dict[str, Any] = {
    "task_id": "add",
    "description": "Return the sum of a and b.",
    "name": "add",
    "args": ["a", "b"],
    "reference": "def add(a, b):\n    return a + b\n",
    "tests": ["assert add(2, 3) == 5"],
}
MUL: dict[str, Any] = {
    "task_id": "mul",
    "description": "Multiply a by b and return the result.",
    "name": "mul",
    "args": ["a", "b"],
    "reference": "def mul(a, b):\n    return a * b\n",
    "tests": ["assert mul(2, 3) == 6"],
}


def _size(formula: str) -> int:
    from cctest.formula import size_of

    return size_of(formula)


def answer(prompt: str, always_wrong: bool) -> str:
    """A function for whatever the prompt asks: right for some prompts, wrong for others
    (everything wrong when ``always_wrong``)."""
    eq = re.search(r"in the equation (.+?), where", prompt)
    if eq:  # syntactic: right for short equations only
        ok = _size(eq.group(1)) <= 11 and not always_wrong
        return f"def solve(a, b):\n    return [round({'-' if ok else ''}b / a, 2)]\n"
    fn = re.search(r"function called '(\w+)'", prompt)
    if fn:  # turbulence: the inclusive slice right, the exclusive one off by one
        i, j = map(int, re.findall(r"index (\d+)", prompt)[:2])
        body = f"lst[{i}:{j} + 1]" if fn.group(1) == "elements_inclusive" else f"[0] + lst[{i} + 1:{j}]"
        return f"def {fn.group(1)}(lst):\n    return {body}\n"
    if "`mul(a, b)`" in prompt:
        return "def mul(a, b):\n    return a * b\n" if not always_wrong else "def mul(a, b):\n    return a\n"
    if "add(" in prompt:
        ok = " sum " in prompt and not always_wrong
        return f"def add(a, b):\n    return a {'+' if ok else '-'} b\n"
    name = re.search(r"`(\w+)\(", prompt)
    return f"def {name.group(1) if name else 'f'}(*args):\n    return None\n"


ORIGINAL_PROMPTS = {json.loads(line)["prompt"] for line in BENCH_TASKS.read_text().splitlines() if line}
# the original prompt's completion: a long line, so it is an outlier among its mutants' and the
# report's example boxes hold a line wider than they are
LONG = "    return sorted(items, key=lambda item: (item.priority, item.created_at, item.name))  " + "# " * 60


def _app(always_wrong: bool) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        content = (
            "Sorry, I cannot help with that."  # no function at all: every original answer fails
            if always_wrong
            else f"Here it is:\n\n```python\n{answer(user, always_wrong)}```\n"
        )
        message = {"role": "assistant", "content": content}
        return web.json_response({"choices": [{"index": 0, "message": message}]})

    async def complete(request: web.Request) -> web.Response:
        body = await request.json()
        text = LONG + "\n" if body["prompt"] in ORIGINAL_PROMPTS else "    return a + b\n"
        return web.json_response({"choices": [{"index": 0, "text": text}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/completions", complete)
    return app


@contextmanager
def scripted_server(always_wrong: bool = False) -> Iterator[str]:
    """An OpenAI-style chat server on 127.0.0.1 answering by ``answer``; yields its URL."""
    with serve_in_thread(_app(always_wrong)) as url:
        yield url


def run_cli(argv: list[str]) -> str:
    """``cctest ARGV`` in this process; its terminal output (it must succeed)."""
    out = StringIO()
    with redirect_stdout(out):
        rc = main(argv)
    assert rc == 0, (argv, out.getvalue())
    return out.getvalue()


def _http(url: str) -> list[str]:
    return ["--backend", "http", "--model", url, "--chat", "--no-progress"]


def bench_run(out: Path, k: int = 4, url: str | None = None) -> str:
    """The CCTest bench on the three tasks of tests/data/bench; against ``url`` (the scripted
    server: the original's completion an outlier) or the rules backend."""
    backend = ["--backend", "http", "--model", url] if url else ["--backend", "rules"]
    argv = ["bench", "--dataset", str(BENCH_TASKS), *backend, "-k", str(k)]
    return run_cli([*argv, "--no-progress", "--out", str(out)])


def operational_run(out: Path, url: str) -> str:
    tasks = out.parent / f"{out.name}-tasks.jsonl"
    tasks.write_text(json.dumps(ADD) + "\n" + json.dumps(MUL) + "\n")
    argv = ["bench", "operational", "--tasks", str(tasks), *_http(url), "--inputs", "5"]
    return run_cli([*argv, "--budget", "12", "--out", str(out)])


def make_runs(root: Path) -> dict[str, Path]:
    """Every kind of report, made by real runs in ``root``: name -> the HTML file."""
    reports: dict[str, Path] = {}
    with scripted_server() as url:
        bench_run(root / "bench", url=url)
        reports["bench"] = root / "bench" / "report.html"
        bench_run(root / "bench-rules", k=6)
        compare = ["bench", "compare", str(root / "bench"), str(root / "bench-rules")]
        run_cli([*compare, "--out", str(root / "compare")])
        reports["compare"] = root / "compare" / "compare.html"
        # no --chat: mode auto, which becomes completion (the server's /v1/completions)
        tasks = ["bench", "tasks", "--tasks", str(SMALL_TASKS), "--backend", "http", "--model", url]
        run_cli([*tasks, "--inputs", "5", "--no-progress", "--out", str(root / "tasks")])
        reports["tasks"] = root / "tasks" / "report.html"
        argv = ["bench", "syntactic", "--equations", "linear", "--distances", "2", "--variants", "4"]
        run_cli([*argv, "--inputs", "10", *_http(url), "--out", str(root / "syntactic")])
        reports["syntactic"] = root / "syntactic" / "report.html"
        argv = ["bench", "turbulence", "--templates", "1,2", "--instances", "4", "--rounds", "1"]
        run_cli([*argv, "--inputs", "10", *_http(url), "--out", str(root / "turbulence")])
        reports["turbulence"] = root / "turbulence" / "report.html"
        operational_run(root / "operational", url)
        reports["operational"] = root / "operational" / "report.html"
    with scripted_server(always_wrong=True) as url:
        operational_run(root / "operational-failing", url)
        reports["operational, every original failing"] = root / "operational-failing" / "report.html"
    return reports


if __name__ == "__main__":
    for name, path in make_runs(Path(sys.argv[1])).items():
        print(f"{name}: {path}")


def report_settings(run: Path) -> list[list[str]]:
    """The rows of report.html's Run table before its counts: the settings the report lists."""
    page = (run / "report.html").read_text(encoding="utf-8")
    table = page.split("<h2>Run</h2>", 1)[1].split("</table>", 1)[0]
    rows = [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)] for row in table.split("<tr>")]
    return [r for r in rows if len(r) == 2 and not r[0].startswith(("count: ", "time: "))]
