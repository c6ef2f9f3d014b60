"""``cctest bench operational`` end to end against a scripted chat server, with WordNet's
neighbours: the summary's keys, the answer cache across runs, and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web
from local_server import chat_app
from report_runs import ADD, MUL

from cctest.bench.store import load_run
from cctest.cli import main


def answer(user: str) -> str:
    """mul is always right; add is right only while its description says 'sum'."""
    if "`mul(a, b)`" in user:
        return "def mul(a, b):\n    return a * b\n"
    return "def add(a, b):\n    return a + b\n" if " sum " in user else "def add(a, b):\n    return a - b\n"


@pytest.fixture
def server(serve_app) -> tuple[str, list[str]]:
    seen: list[str] = []
    return serve_app(chat_app(answer, seen)), seen


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
        "--order",
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
    # Rᵒ and R* over both tasks (Algorithm 2, line 41); the means over the broken one beside them
    assert summary["r_o"]["lev_word"] == 0.5 and summary["r_star"]["lev_word"] == 0.5
    assert summary["r_o_broken_mean"]["lev_word"] == 1 and summary["r_star_broken_mean"]["lev_word"] == 1
    assert summary["r_star_broken_mean"]["lev_char"] == 5  # "R" -> "Tax r": 4 insertions, 1 substitution
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
    assert s2["queries"] == {
        "total": 3 + 8,
        "cached": 7,
        "widenings": s2["queries"]["widenings"],
        "errors": 0,
    }
    # resume: a run cut after its first record finishes the rest from the cache, asking nothing;
    # config.json keeps the paper's names (k), so the order's old spelling --k resumes it too
    assert json.loads((run2 / "config.json").read_text())["suite"]["search"]["k"] == 1
    lines = (run2 / "results.jsonl").read_text().splitlines(keepends=True)
    (run2 / "results.jsonl").write_text(lines[0])
    old = ["--k" if a == "--order" else a for a in base]
    capsys.readouterr()
    assert main([*old, "--budget", "8", "--out", str(run2), "--resume"]) == 0
    assert "use --order." in capsys.readouterr().err
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
        (["--order", "0"], "--order must be at least 1"),
        (["--widen-n", "0", "--widen-order", "0"], "--widen-n and --widen-order must be at least 0"),
        (["--vectors", str(tmp_path / "none.txt")], "none.txt: no such file"),
    ):
        assert (
            main(["bench", "operational", "--tasks", str(tasks), *extra, "--out", str(tmp_path / "r")]) == 2
        )
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def _search_args(url: str, tmp_path: Path) -> list[str]:
    return [
        "--backend",
        "http",
        "--model",
        url,
        "--chat",
        "--inputs",
        "5",
        "--n",
        "1",
        "--order",
        "1",
        "--budget",
        "6",
        "--answers-cache",
        "none",
        "--no-progress",
        "--out",
        str(tmp_path / "run"),
    ]


def test_turbulence_templates_as_tasks(tmp_path: Path, serve_app) -> None:
    """The Turbulence suite's own question template 7 ('replace_character'), built by that suite's
    options with their defaults for cctest's own templates (docs/turbulence.md): the seed the
    string "1", as the benchmark passes it; the generator's order, so the first instance is the
    first hand-picked row ('a' -> 'b'); cctest's judging rules. With the search's defaults (any word
    replaced, as the paper's Table 2) the model breaks once 'takes' is replaced (WordNet: Write ->
    compose, a -> angstrom, function -> mathematical function, called -> name, takes -> return,
    all at one word of distance)."""
    seen: list[str] = []

    def turbulence_answer(user: str) -> str:
        ok = " takes " in user
        return f"def replace_character(s):\n    return s.replace('a', {'b' if ok else 'c'!r})\n"

    url = serve_app(chat_app(turbulence_answer, seen))
    argv = ["bench", "operational", "--dataset", "turbulence", "--templates", "7", "--instances", "1"]
    assert main([*argv, *_search_args(url, tmp_path)]) == 0
    config, records = load_run(tmp_path / "run")
    assert config["source"] == "turbulence"
    assert config["suite"]["tasks"] == {
        "dataset": "turbulence",
        "benchmark": "built-in templates",
        "templates": ["Q7"],
        "instances": 1,
        "param_seed": "1",
        "param_order": "generated",
        "rules": "cctest",
    }
    (r,) = records
    assert r["task_id"] == "Q7/0" and r["description"].startswith(
        "Write a function called 'replace_character'"
    )
    assert r["meta"]["params"] == ["a", "b"]  # Q7's manually_chosen_params.txt, first row
    assert r["description"].endswith("the character 'a' replaced by the character 'b'.")
    assert r["status"] == "broken" and r["original"]["category"] == "passed"
    assert [q["replaced"] for q in r["queries"]] == [
        [["Write", "compose", 0]],
        [["a", "angstrom", 6]],  # a function word too (--protect-stop-words would keep it)
        [["function", "mathematical function", 8]],  # one word inserted
        [["called", "name", 17]],
        [["takes", "return", 49]],
    ]
    assert r["last_success"]["text"].startswith("Write a function name 'replace_character'")
    assert r["first_failure"]["category"] == "fuzzing_failure"  # differs from C_t on generated strings
    assert len(seen) == 6 and all("'replace_character'" in u for u in seen)  # the budget: 1 + 5


def test_syntactic_formulas_as_tasks(tmp_path: Path, serve_app) -> None:
    """The syntactic suite's linear equation, built by that suite's options: the equation and the
    called round(x, 2) are never touched; the model breaks once 'solutions' is replaced."""
    seen: list[str] = []

    def solve(user: str) -> str:
        sign = "-" if "the solutions for 'x'" in user else ""
        return f"def solve(a, b):\n    return [round({sign}b / a, 2)]\n"

    url = serve_app(chat_app(solve, seen))
    argv = ["bench", "operational", "--dataset", "syntactic", "--equations", "linear", "--distances", "1"]
    argv += ["--variants", "1", "--limit", "1"]
    assert main([*argv, *_search_args(url, tmp_path)]) == 0
    config, records = load_run(tmp_path / "run")
    assert config["source"] == "syntactic" and config["suite"]["tasks"]["equations"] == ["linear"]
    (r,) = records
    assert r["task_id"] == "linear/original" and r["status"] == "broken"
    assert [q["replaced"] for q in r["queries"]] == [
        [["Find", "discovery", 0]],
        [["solutions", "solution", 9]],
    ]
    for q in r["queries"]:
        assert "a*x + b = 0" in q["text"] and "with round(x, 2)," in q["text"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["r_o"]["lev_word"] == 1 and summary["first_failures"][0]["category"] == "fuzzing_failure"


def test_task_source_options_are_checked(tmp_path: Path, capsys) -> None:
    for extra, message in (
        (["--dataset", "mbpp"], "reads --dataset humaneval, turbulence or syntactic"),
        (
            ["--dataset", "humaneval", "--equations", "linear"],
            "--equations is an option of --dataset syntactic",
        ),
        (["--dataset", "syntactic", "--instances", "2"], "--instances is an option of --dataset turbulence"),
        (["--dataset", "syntactic", "--benchmark", str(tmp_path)], "--benchmark is an option of --dataset"),
        (["--benchmark", str(tmp_path)], "is not a Turbulence benchmark"),
        (["--dataset", "turbulence", "--templates", "999"], "no question 999"),
        (["--dataset", "syntactic", "--equations", "cubic"], "unknown equation 'cubic'"),
        (["--dataset", "syntactic", "--distances", "0"], "--distances must be distances from 1 to 8"),
        (["--dataset", "humaneval", "--tasks", str(tmp_path / "t.jsonl")], "not both"),
    ):
        assert main(["bench", "operational", *extra, "--out", str(tmp_path / "r")]) == 2, extra
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_backend_faults_are_retried_then_recorded(tmp_path: Path, serve_app) -> None:
    """A real server that fails some requests: 503 twice on mul's original (the HTTP backend's retry
    answers it), a dropped connection on every try of add's first paraphrase (retried, then recorded
    for that paraphrase; the search goes on to the first failure), and on every try of sub's
    original (that task alone stops as backend_error)."""
    hits = {"mul": 0, "tax": 0, "sub": 0}
    seen: list[str] = []
    app = chat_app(answer, seen)

    @web.middleware
    async def faults(request: web.Request, handler):  # type: ignore[no-untyped-def]
        body = await request.json()
        (user,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
        if "Multiply a by b and return the result." in user:
            hits["mul"] += 1
            if hits["mul"] <= 2:
                return web.json_response({"error": "warming up"}, status=503)
        for key, marker in (("tax", "Tax return the sum"), ("sub", "Subtract b from a.")):
            if marker in user:
                hits[key] += 1
                assert request.transport is not None
                request.transport.close()
        return await handler(request)

    app.middlewares.append(faults)
    url = serve_app(app)
    sub = {**ADD, "task_id": "sub", "description": "Subtract b from a.", "tests": ["assert add(2, 3) == 5"]}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in (ADD, MUL, sub)))
    argv = ["bench", "operational", "--tasks", str(tasks), *_search_args(url, tmp_path)]
    argv[argv.index("--n") + 1] = "2"
    argv[argv.index("--budget") + 1] = "4"
    assert main(argv) == 0
    _, records = load_run(tmp_path / "run")
    add, mul, down = records
    assert hits["mul"] == 3 and mul["original"]["category"] == "passed" and mul["status"] == "unbroken"
    assert hits["tax"] == 4  # the first try and the backend's three retries
    lost, ff = add["queries"]
    assert lost["text"] == "Tax return the sum of a and b." and lost["passed"] is None
    assert "broke before an answer" in lost["error"]
    assert add["status"] == "broken" and ff["text"] == "Return the amount of a and b."
    assert add["last_success"]["text"] == ADD["description"]  # the lost paraphrase is no success
    assert hits["sub"] == 4 and down["status"] == "backend_error" and down["queries"] == []
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"]["backend_error"] == 1 and summary["queries"]["errors"] == 1
    assert summary["r_o"]["lev_word"] == 1 / 3 and summary["r_star"]["lev_word"] == 0  # over 3 tasks
    assert summary["r_o_broken_mean"]["lev_word"] == 1
    assert "paraphrases the backend did not answer" in (tmp_path / "run" / "report.html").read_text()


def test_benchmark_dir_alone_reads_a_turbulence_clone() -> None:
    """--benchmark DIR (a folder in the benchmark's layout: here cctest's own templates) implies
    --dataset turbulence and goes through the suite's loader; the tasks are the suite's own."""
    from cctest.cli import build_parser
    from cctest.commands.bench_operational import task_set
    from cctest.suites.turbulence import BUILTIN, build_tasks, load_benchmark

    argv = ["bench", "operational", "--benchmark", str(BUILTIN), "--templates", "7,13", "--instances", "2"]
    args = build_parser().parse_args(argv)
    chosen = task_set(args)
    assert args.dataset == "turbulence" and chosen.source == str((BUILTIN / "Benchmark").resolve())
    assert chosen.settings["templates"] == ["Q7", "Q13"] and chosen.settings["instances"] == 2
    assert chosen.tasks == build_tasks(load_benchmark(BUILTIN, ["7", "13"]), 2)
    assert [t.task_id for t in chosen.tasks] == ["Q7/0", "Q7/1", "Q13/0", "Q13/1"]


def test_the_command_line_defaults_are_the_papers_search() -> None:
    """No budget, every mutant, any word by default; cctest's earlier defaults by name."""
    from cctest.cli import build_parser
    from cctest.commands.bench_operational import search_settings

    args = build_parser().parse_args(["bench", "operational"])
    search = search_settings(args)
    assert (search.budget, search.per_order, search.protect_stop_words) == (None, None, False)
    earlier = ["--budget", "20", "--per-order", "50", "--protect-stop-words"]
    search = search_settings(build_parser().parse_args(["bench", "operational", *earlier]))
    assert (search.budget, search.per_order, search.protect_stop_words) == (20, 50, True)


def test_vectors_neighbours_by_euclidean_distance_unless_told(tmp_path: Path) -> None:
    """--vectors FILE: a word's nearest words by Euclidean distance (the paper's), or by cosine."""
    from cctest.cli import build_parser
    from cctest.paraphrase import neighbour_source

    f = tmp_path / "glove.txt"
    f.write_text("cat 1.0 0.0\nbig 3.0 0.3\nnear 0.6 0.5\n", encoding="utf-8")
    for extra, nearest in (([], "near"), (["--neighbours-by", "cosine"], "big")):
        args = build_parser().parse_args(["bench", "operational", "--vectors", str(f), *extra])
        assert neighbour_source(args.vectors, args.neighbours_by).neighbours("cat", 1) == [nearest]
