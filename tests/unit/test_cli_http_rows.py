"""``cctest complete --backend http`` tells what happened to the rows: how many failed and why
(a timeout among them) on stderr, and the FIM layout the rows really got."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web
from local_server import serve_in_thread
from test_cli import cctest_run

SOURCE = "def area(r):\n    total = r * r\n    return \n\n\nprint(area(2))\n"


def first_answers_the_rest_stall() -> web.Application:
    """Answers the first completion request; every later one waits until its client gives up."""
    asked: list[int] = []

    async def complete(request: web.Request) -> web.Response:
        await request.read()
        asked.append(1)
        if len(asked) > 1:
            await asyncio.sleep(3600)
        choice = {"index": 0, "text": "total\n", "finish_reason": "stop"}
        return web.json_response({"id": "cmpl-1", "choices": [choice]})

    app = web.Application()
    app.router.add_post("/v1/completions", complete)
    return app


def refuses_the_suffix() -> web.Application:
    async def complete(request: web.Request) -> web.Response:
        if "suffix" in await request.json():
            return web.json_response({"error": {"message": "suffix is not supported"}}, status=422)
        return web.json_response({"choices": [{"index": 0, "text": "total\n", "finish_reason": "stop"}]})

    app = web.Application()
    app.router.add_post("/v1/completions", complete)
    return app


def test_rows_that_time_out_are_counted_and_said_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "area.py"
    path.write_text(SOURCE)
    with serve_in_thread(first_answers_the_rest_stall()) as url:
        r = cctest_run(
            "complete", f"{path}:3:12", "--backend", "http", "--model", url, "--mutants", "3",
            "--decide-after", "0", "--timeout", "3", cwd=tmp_path,
        )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("total")
    line = next(x for x in r.stderr.splitlines() if "rows failed" in x)
    assert line.startswith("# cctest: 3 of 4 rows failed (3: ") and "gave no completion within 3 s" in line


def test_the_fim_layout_shown_is_the_one_the_rows_got(tmp_path: Path) -> None:
    path = tmp_path / "area.py"
    path.write_text(SOURCE)
    with serve_in_thread(refuses_the_suffix()) as url:
        r = cctest_run(
            "complete", f"{path}:3:12", "--backend", "http", "--model", url, "--mutants", "2",
            "--json", cwd=tmp_path,
        )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fim"] is None  # asked without the code after the cursor
    assert "refused the suffix field" in r.stderr
