"""What every ``cctest`` sub-command shares, run as a subprocess like a user would: ``--version``,
the one parser of scheme names, and the warning for a file that does not look like Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import cctest
from cctest import mutators
from cctest.config import Settings

ROOT = Path(__file__).resolve().parents[2]
CCTEST = Path(sys.executable).parent / "cctest"
SAMPLE = ROOT / "tests" / "data" / "mutators" / "sample.py"
# the registry's names, in its order (a new scheme joins the sentence without editing this test)
SCHEMES = "the schemes are " + ", ".join(mutators.SCHEMES) + "."


def cctest_run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CCTEST), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_version() -> None:
    r = cctest_run("--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"cctest {cctest.__version__}\n", "")


@pytest.mark.parametrize(
    "args",
    [
        ["mutate", f"{SAMPLE}:12:5"],
        ["complete", f"{SAMPLE}:12:5", "--backend", "rules"],
        ["bench", "--dataset", "humaneval", "--backend", "rules", "--out", "run"],
    ],
    ids=["mutate", "complete", "bench"],
)
def test_an_unknown_scheme_is_the_same_sentence_everywhere(args: list[str], tmp_path: Path) -> None:
    r = cctest_run(*args, "--scheme", "REL_R", "--scheme", "FOO", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"cctest: unknown mutation scheme 'FOO'; {SCHEMES}\n"
    assert list(tmp_path.iterdir()) == []  # rejected before anything was written


def test_scheme_names_in_any_case() -> None:
    r = cctest_run("mutate", f"{SAMPLE}:12:5", "--scheme", "rtf", "--scheme", "Ini")
    assert r.returncode == 0, r.stderr
    headers = {line.split()[1] for line in r.stdout.splitlines() if line.startswith("# ")}
    assert headers == {"RTF", "INI"}
    r = cctest_run("complete", f"{SAMPLE}:12:5", "--backend", "rules", "--scheme", "rel_c", "--json")
    assert r.returncode == 0, r.stderr
    assert '"scheme": "REL_C"' in r.stdout


def test_a_file_that_does_not_look_like_python_is_warned_of_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Title\n\nSome text\n")
    warning = f"cctest: warning: {notes} does not look like Python"
    r = cctest_run("mutate", f"{notes}:3:5")
    assert r.returncode == 0 and r.stderr.count(warning) == 1
    assert "no scheme applies" in r.stderr
    r = cctest_run("mutate", str(notes), "--whole")
    assert r.stderr.count(warning) == 1
    r = cctest_run("complete", f"{notes}:3:5", "--backend", "rules")
    assert r.returncode == 0 and r.stderr.count(warning) == 1
    # Python by its suffix or its #! line: not a word
    script = tmp_path / "tool"
    script.write_text("#!/usr/bin/env python3\nx = 1\n")
    for path in (script, SAMPLE):
        r = cctest_run("mutate", f"{path}:2:1")
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


@pytest.mark.slow
def test_complete_decides_early_unless_told_not_to() -> None:
    """On the bundled model `cctest complete` decides on the first tokens by default; with
    `--decide-after 0` every completion is whole, and the chosen one is the same text as its
    row's whole completion when deciding (greedy)."""
    import json

    demo = str(ROOT / "examples" / "demo.py") + ":6:5"
    early = json.loads(cctest_run("complete", demo, "--json", "--max-new-tokens", "24").stdout)
    whole = json.loads(
        cctest_run("complete", demo, "--json", "--max-new-tokens", "24", "--decide-after", "0").stdout
    )
    assert early["decided_after"] == Settings().decide_after and whole["decided_after"] is None
    assert any(c.get("cut") for c in early["completions"]) and not any(
        c.get("cut") for c in whole["completions"]
    )
    assert early["completion"] == whole["completions"][early["chosen"]]["text"]
    bad = cctest_run("complete", demo, "--decide-after", "-1")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "decide" in bad.stderr
