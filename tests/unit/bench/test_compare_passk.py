"""``cctest bench compare`` of ``--samples n`` runs: the terminal table (and compare.html) show
pass@k over the draws, for the original and the repaired completions, as the summary does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cctest.cli import main

ARGS = [
    "bench",
    "--dataset",
    "humaneval",
    "--backend",
    "rules",
    "--limit",
    "2",
    "-k",
    "3",
    "--thresholds",
    "1",
]


def _rows(table: str) -> dict[str, list[str]]:
    """The terminal table's rows by label (cells split on two or more spaces)."""
    out = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        if len(cells) == 3:
            out[cells[0]] = cells[1:]
    return out


def _rewrite_draws(run: Path, original_passes: int, repaired_passes: int) -> None:
    """Set the draws' verdicts of every record: the original passes in the first
    ``original_passes`` further draws, the repaired one at T=1 in the first ``repaired_passes``."""
    lines = []
    for line in (run / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        for i, d in enumerate(r["draws"]):
            d["passed"] = {"original": i < original_passes, "repaired": {"1": i < repaired_passes}}
        lines.append(json.dumps(r))
    (run / "results.jsonl").write_text("".join(x + "\n" for x in lines))


def test_compare_shows_pass_at_k_of_the_draws(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, greedy = tmp_path / "a", tmp_path / "b", tmp_path / "greedy"
    assert main([*ARGS, "--samples", "10", "--temperature", "0.8", "--out", str(a), "--no-progress"]) == 0
    assert main([*ARGS, "--out", str(greedy), "--no-progress"]) == 0
    first = [r["tests"][0]["outcome"] == "passed" for r in map(json.loads, (a / "results.jsonl").open())]
    chosen_first = []
    for r in map(json.loads, (a / "results.jsonl").open()):
        c = r["per_T"]["1"]["chosen"]
        chosen_first.append(c is not None and r["tests"][c]["outcome"] == "passed")
    shutil.copytree(a, b)
    _rewrite_draws(a, 0, 9)  # of 9 further draws: the original never passes, the repaired always
    _rewrite_draws(b, 4, 2)
    capsys.readouterr()
    assert main(["bench", "compare", str(a), str(b), "--out", str(tmp_path)]) == 0
    rows = _rows(capsys.readouterr().out)

    def p1(passes: int, firsts: list[bool]) -> str:  # pass@1 over 10 draws, averaged over prompts
        return f"{100 * sum((passes + f) / 10 for f in firsts) / len(firsts):.1f}%"

    assert rows["draws per prompt (--samples)"] == ["10", "10"]
    assert rows["pass@1 original (draws)"] == [p1(0, first), p1(4, first)]
    assert rows["pass@1 repaired T=1 (draws)"] == [p1(9, chosen_first), p1(2, chosen_first)]
    # pass@10 of 10 draws: whether any passed
    assert rows["pass@10 original (draws)"][1] == "100.0%"
    assert rows["pass@10 repaired T=1 (draws)"][0] == "100.0%"
    assert not any(label.startswith("pass@100") for label in rows)  # 100 > n
    html = (tmp_path / "compare.html").read_text()
    assert "pass@10 repaired T=1 (draws)" in html

    # beside a run of one completion per prompt: that run has no draws
    assert main(["bench", "compare", str(a), str(greedy), "--out", str(tmp_path)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["draws per prompt (--samples)"] == ["10", "1"]
    assert rows["pass@10 original (draws)"][1] == "—"

    # two runs without --samples: no such rows
    assert main(["bench", "compare", str(greedy), str(greedy), "--out", str(tmp_path)]) == 0
    assert "(draws)" not in capsys.readouterr().out
