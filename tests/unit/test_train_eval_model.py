"""tools/eval_model.py on the bundled model at a tiny size: the held-out losses (left to right, FIM,
the middle with and without the code after it) and the cctest bench commands, the same
humaneval-infill sample with FIM and left to right."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from cctest.models import bundled_model_path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "eval_model.py"


def _corpus(root: Path) -> Path:
    import sysconfig

    root.mkdir(parents=True)
    text = (Path(sysconfig.get_paths()["stdlib"]) / "glob.py").read_text(encoding="utf-8")
    (root / "heldout-00000.jsonl").write_text(
        json.dumps({"text": text, "dist": "x", "path": "glob.py"}) + "\n"
    )
    return root


def test_held_out_losses_of_the_bundled_model(tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(bundled_model_path(), model)
    for f in ("tokenizer.json", "tokenizer_config.json"):  # as a model brought back from a GPU machine
        (model / f).unlink()
    tokenizer = tmp_path / "tok"
    shutil.copytree(bundled_model_path(), tokenizer)
    cmd = [sys.executable, str(SCRIPT), "--model", str(model), "--corpus", str(_corpus(tmp_path / "c"))]
    cmd += ["--tokenizer", str(tokenizer), "--out", str(tmp_path / "eval"), "--windows", "3", "--seq", "96"]
    p = subprocess.run([*cmd, "--skip-bench", "--threads", "1"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    held = json.loads((tmp_path / "eval" / "eval.json").read_text())["held_out"]
    assert held["windows"] == 3 and 0 < held["left_to_right"] < 10 and 0 < held["fim"] < 10
    assert set(held["middle"]) == {"fim", "left_to_right"}
    assert (model / "tokenizer.json").is_file()  # the tokenizer was copied in


def test_the_bench_commands_use_the_same_infill_sample_with_and_without_fim(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, str(SCRIPT), "--model", "M", "--corpus", "C", "--out", "E", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    lines = dict(line.split(": ", 1) for line in p.stdout.splitlines())
    assert set(lines) == {"humaneval", "infill_fim", "infill_left_to_right"}
    assert "--dataset humaneval " in lines["humaneval"] and "--limit" not in lines["humaneval"]
    fim, ltr = lines["infill_fim"], lines["infill_left_to_right"]
    assert "--fim auto" in fim and "--fim off" in ltr
    sample = "--shuffle --limit 300 --seed 0"
    assert sample in fim and sample in ltr
    assert fim.replace("--fim auto", "").replace("infill-fim", "") == ltr.replace("--fim off", "").replace(
        "infill-ltr", ""
    )
