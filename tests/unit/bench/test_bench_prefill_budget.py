"""``cctest bench --prefill-budget X``: the mutants of a run are chosen within the setting given,
as the language server's and the proxy's are; it is recorded with the run's settings, and a
resume with another value is refused, since the mutants (and so the records) would differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cctest.cli import main

RULES = ["--backend", "rules", "-k", "2", "--no-progress"]


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "data.jsonl"
    rows = [
        {
            "task_id": f"t{i}",
            "prompt": f"def f{i}(a, b):\n    total = a\n",
            "ground_truth": "    return total + b\n",
        }
        for i in range(2)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return data


def test_the_budget_given_is_the_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, run = _data(tmp_path), tmp_path / "run"
    assert main(["bench", "--dataset", str(data), *RULES, "--prefill-budget", "0", "--out", str(run)]) == 0
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    assert config["settings"]["prefill_budget"] == 0
    capsys.readouterr()
    again = ["bench", "--dataset", str(data), *RULES, "--prefill-budget", "3", "--out", str(run), "--resume"]
    assert main(again) == 2
    assert "different settings (prefill_budget)" in capsys.readouterr().err


def test_a_budget_below_0_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _data(tmp_path)
    code = main(
        ["bench", "--dataset", str(data), *RULES, "--prefill-budget", "-1", "--out", str(tmp_path / "r")]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "prefill" in err, err
