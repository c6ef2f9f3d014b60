"""``cctest complete --backend http`` and ``cctest bench --backend http`` against a real
``llama-server`` serving the bundled model: a repair with a slot per row, at the server's
defaults, a prompt and suffix longer than its context, and a small bench run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from llama_helpers import K, Server, cctest

ROWS = K + 1


def long_module(tmp_path: Path, functions: int = 60, after: int = 30) -> tuple[Path, str]:
    """A module of ``functions`` similar functions and ``after`` more, with the cursor inside the
    last of the first ones: its prompt (thousands of tokens) and its suffix are each longer than
    the bundled model's context of 1,024 tokens. Returns the file and its ``FILE:LINE:COL``."""
    lines: list[str] = ["import math", "", ""]
    for i in range(functions + after):
        lines += [
            f"def scale_{i}(values, factor={i + 1}):",
            f'    """Scale every value by {i + 1} and shift it by {i}."""',
            "    result = []",
            "    for value in values:",
            f"        result.append(value * factor + {i})",
            "    return result",
            "",
            "",
        ]
        if i == functions - 1:
            lines[-6:] = ["    result = []", "    for value in values:", "        ", "", ""]
            cursor = len(lines) - 2  # 1-based line of the empty body line
    path = tmp_path / "scales.py"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path, f"{path}:{cursor}:9"


TIMEOUT = ("--timeout", "600")  # a busy machine is not what these tests are about


def _errors(result: dict) -> list[str]:
    return [f"{c['source']}: {c.get('error')}" for c in result["completions"] if c.get("error")]


def _complete(server: Server, where: str, *options: str) -> tuple[dict, str]:
    done = cctest("complete", where, "--backend", "http", "--model", server.url, "--json", *TIMEOUT, *options)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_a_repair_with_a_slot_per_row(llama_wide: Server) -> None:
    result, _ = _complete(llama_wide, "examples/demo.py:6:5")
    assert len(result["completions"]) == ROWS
    assert result["no_results"] == [], _errors(result)
    assert result["completion"].strip()


def test_a_repair_at_the_servers_default_slots(llama_defaults: Server) -> None:
    """Four slots for eleven rows: the rows wait for a slot, none fails."""
    result, _ = _complete(llama_defaults, "examples/demo.py:6:5")
    assert len(result["completions"]) == ROWS
    assert result["no_results"] == [], _errors(result)
    assert result["completion"].strip()


def test_the_code_after_the_cursor_is_not_lost(llama_wide: Server, tmp_path: Path) -> None:
    """llama-server answers 200 to /v1/completions' ``suffix`` field and ignores it: cctest must
    not report a layout it did not get (it fills in the middle another way, or says it did not)."""
    path = tmp_path / "area.py"
    path.write_text("def area(r):\n    \n    return result\n\n\nprint(area(2))\n", encoding="utf-8")
    result, _ = _complete(llama_wide, f"{path}:2:5")
    assert result["fim"] != "suffix field"
    assert _errors(result) == []  # filled in the middle, a row may rightly be empty


REFUSED = "exceeds the available context size"  # llama-server's log for a prompt too long


def test_a_prompt_and_suffix_longer_than_the_context(llama_wide: Server, tmp_path: Path) -> None:
    """A prompt longer than a slot's context: cctest reads each row's context from the server
    (``/props``, the longest row counted by its ``/tokenize``) and windows the rows to fit before
    any is sent, with one line saying so, instead of dropping the suffix or failing the rows; the
    server refuses nothing."""
    _, where = long_module(tmp_path)
    refused = llama_wide.log().count(REFUSED)
    result, stderr = _complete(llama_wide, where)
    assert "refused the suffix" not in stderr
    assert re.search(r"gives each row \d+ tokens of context; prompts are cut", stderr), stderr
    assert result["no_results"] == [], _errors(result)
    assert result["completion"].strip()
    assert llama_wide.log().count(REFUSED) == refused


def test_at_the_bare_defaults_failed_rows_are_said_and_the_answer_kept(
    llama_bare: Server, tmp_path: Path
) -> None:
    """Four slots sharing one context of 1,024 tokens: eleven long rows overflow it. The command
    still answers (exit 0, a completion), and says on stderr how many rows failed."""
    _, where = long_module(tmp_path)
    done = cctest("complete", where, "--backend", "http", "--model", llama_bare.url, "--json", *TIMEOUT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["completion"].strip()
    assert 0 not in result["no_results"]  # the original row is answered
    failed = len(result["no_results"])
    if failed:
        assert re.search(rf"\b{failed}\b[^\n]*\bfailed\b", done.stderr), done.stderr


def test_bench_against_llama_server(llama_wide: Server, tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = cctest(
        "bench", "--dataset", "humaneval", "--limit", "2", "--thresholds", "1", "--no-progress",
        "--backend", "http", "--model", llama_wide.url, "--max-new-tokens", "48", "--out", str(run), *TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2
    for record in records:
        assert record["error"] is None
        assert len(record["completions"]) == ROWS
        assert [c["error"] for c in record["completions"]] == [None] * ROWS
    assert json.loads((run / "summary.json").read_text(encoding="utf-8"))
