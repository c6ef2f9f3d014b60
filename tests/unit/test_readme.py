"""The README's and docs/how-it-works.md's examples are what the tool does: each is run here and
compared with the text; every script the figures name exists."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from cctest.mutators import mutate_whole

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
HOW = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")  # the worked example
FIGURES = (ROOT / "docs" / "figures.md").read_text(encoding="utf-8")
CCTEST = Path(sys.executable).parent / "cctest"
DEMO = "examples/demo.py:6:5"


def cctest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CCTEST), *args], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env
    )


def _paragraph(start: str) -> str:
    at = HOW.index(start)
    return HOW[at : HOW.index("\n\n", at)]


def test_the_demo_mutants_are_the_ones_the_readme_lists() -> None:
    """Every mutant `cctest mutate examples/demo.py:6:5` prints is in the README's list, under its
    scheme, and the list names no mutant the command does not print."""
    text = " ".join(_paragraph(f"`cctest mutate {DEMO}` shows").split())
    listed = text[: text.index("One run of")]
    # "REP_R `def …`" or "FMT a blank line" (a mutant that only adds an empty line), and
    # "(inside the function, or `…` before it)" for a second one of a scheme; a mutant that changes
    # several lines is quoted with " / " between them
    described: list[tuple[str, str]] = []
    pattern = r"\b([A-Z]{3}(?:_[RC])?) (?:`([^`]+)`|a blank line)(?: \([^`)]*`([^`]+)`[^`)]*\))?"
    for m in re.finditer(pattern, listed):
        described += [(m[1], m[2] or "")] + ([(m[1], m[3])] if m[3] else [])
    r = cctest("mutate", DEMO, "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    made = []
    for mutant in data["mutants"]:  # each changes or adds a line: the README quotes it, unindented
        new = set(mutant["text"].splitlines()) - set(data["prompt"].splitlines())
        made.append((mutant["scheme"], " / ".join(sorted(line.strip() for line in new))))
    assert Counter(made) == Counter(described)
    assert ("GRA_R", "if False: TempVar = 0") in described and ("FMT", "") in described


@pytest.mark.parametrize(
    ("scheme", "source"),
    [
        ("RTF", "def f(ignore):\n    if ignore:\n        return 1\n"),
        ("IRR", "def f():\n    n = 0\n    n += 1\n    return n\n"),
    ],
)
def test_the_scheme_table_examples(scheme: str, source: str) -> None:
    (row,) = [line for line in HOW.splitlines() if line.startswith(f"   | {scheme} |")]
    before, after = re.findall(r"`([^`]+)` → `([^`]+)`", row)[0]
    assert before in source
    assert after in mutate_whole(source, scheme).text


@pytest.mark.slow
def test_the_demo_completion_is_printed_as_the_readme_shows() -> None:
    """The bundled model is greedy and deterministic: `make demo` prints the worked example's block."""
    block = re.search(r"which `cctest complete` prints from the cursor on.*?```python\n(.*?)```", HOW, re.S)
    assert block is not None
    r = cctest("complete", DEMO)
    assert r.returncode == 0, r.stderr
    assert r.stdout == block[1]
    # the README names the mutant whose completion the repair chose: "here FMT's (...)"
    chosen = re.search(r"closest to their average: here ([A-Z]{3}(?:_[RC])?)'s", " ".join(HOW.split()))
    assert chosen is not None
    assert "original completion consistent; chosen: mutant:" in r.stderr and chosen[1] in r.stderr
    assert "warning" not in r.stderr.lower()  # nothing from transformers, nothing about the file


def test_complete_never_writes_the_defect_log(tmp_path: Path) -> None:
    """Even when the original completion is flagged, `cctest complete` logs nothing; and
    `cctest defects list` then shows an empty list, as the README says."""
    src = tmp_path / "add.py"
    src.write_text("def add(a, b):\n    res = a + b\n    total = res * 2\n    \n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    # the rules backend answers differently while "res = a + b\n    total" is intact: only the
    # original keeps it (REL renames res or total), so the original is the outlier
    model = "fragile=res = a + b\n    total"
    args = ["--backend", "rules", "--model", model, "--scheme", "REL_R", "--scheme", "REL_C", "-k", "6"]
    r = cctest("complete", f"{src}:4:5", *args, env=env)
    assert r.returncode == 0, r.stderr
    assert "original completion flagged as an outlier" in r.stderr
    assert not any(p.name.startswith("defects") for p in tmp_path.rglob("*"))
    r = cctest("defects", "list", env=env)
    assert (r.returncode, r.stdout) == (0, "") and "no defect log" in r.stderr
    said = " ".join(README.split())
    assert "`cctest complete` never does" in said and "`cctest defects list` prints an empty list" in said


def test_every_script_the_figures_name_exists() -> None:
    """The README's headline figures and docs/figures.md name their scripts; each is in the tree,
    and every headline row names one."""
    named = set(re.findall(r"benchmarks/[\w.]+\.py", README + FIGURES))
    assert len(named) >= 10, named
    missing = sorted(n for n in named if not (ROOT / n).is_file())
    assert not missing, missing
    table = README[README.index("## Headline figures") :]
    table = table[: table.index("\n## ")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| what")]
    assert 6 <= len(rows) <= 14, len(rows)
    assert all("benchmarks/" in row for row in rows), [r for r in rows if "benchmarks/" not in r]


def test_the_readme_stays_short_and_opens_with_the_two_commands() -> None:
    lines = README.splitlines()
    assert len(lines) <= 260, len(lines)
    first_block = README[README.index("```sh") : README.index("```", README.index("```sh") + 5)]
    assert "make demo" in first_block and "make test" in first_block
