"""The command line's options as a new user meets them: one name per meaning (old spellings still
work, with one line saying which name to use), each suite's ``--help`` led by its own options,
"did you mean" for a mistyped option, and a hub id given as ``--model``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cctest.config import missing_model_dir

ROOT = Path(__file__).resolve().parents[2]
CCTEST = Path(sys.executable).parent / "cctest"
SAMPLE = ROOT / "tests" / "data" / "mutators" / "sample.py"


def cctest_run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CCTEST), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_a_hub_id_as_model_says_cctest_does_not_download_and_how_to(tmp_path: Path) -> None:
    r = cctest_run("complete", f"{SAMPLE}:12:5", "--model", "Qwen/Qwen2.5-Coder-0.5B", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "cctest loads local directories only (it never downloads)" in r.stderr
    assert (
        "huggingface-cli download Qwen/Qwen2.5-Coder-0.5B --local-dir models/Qwen2.5-Coder-0.5B" in r.stderr
    )
    assert r.stderr.rstrip().endswith("then pass --model models/Qwen2.5-Coder-0.5B.")


@pytest.mark.parametrize("model", ["./missing", "/no/such/dir", "~/no-such-model", "a/b/c", "../x"])
def test_a_missing_path_that_is_no_hub_id_is_only_missing(model: str) -> None:
    assert missing_model_dir(model) == f"the model directory {Path(model).expanduser()} does not exist."
