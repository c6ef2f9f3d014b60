"""``cctest mutate``, run as a subprocess like a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CCTEST = Path(sys.executable).parent / "cctest"
SAMPLE = ROOT / "tests" / "data" / "mutators" / "sample.py"


def cctest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CCTEST), "mutate", *args], capture_output=True, text=True, timeout=120)


def test_mutants_at_a_cursor_as_json():
    # line 9 is "        res = res + x"; COL = length + 1 is the end of the line
    line = SAMPLE.read_text().splitlines()[8]
    p = cctest(f"{SAMPLE}:9:{len(line) + 1}", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert set(data) == {"prompt", "mutants"}
    assert data["prompt"].endswith("        res = res + x")
    assert data["mutants"]
    for m in data["mutants"]:
        assert set(m) == {"scheme", "text", "renames", "structural_distance"}
        assert m["text"] != data["prompt"] and 0.0 <= m["structural_distance"] <= 0.1
    schemes = {m["scheme"] for m in data["mutants"]}
    assert {"REP_R", "REL_R", "IRR", "GRA_R"} <= schemes
    rep = next(m for m in data["mutants"] if m["scheme"] == "REP_R")
    ((new, old),) = rep["renames"].items()
    assert old in ("a", "b", "rest") and new.startswith("Param")


def test_scheme_filter_and_text_output():
    p = cctest(f"{SAMPLE}:12:5", "--scheme", "RTF", "--scheme", "INI")
    assert p.returncode == 0, p.stderr
    headers = [line for line in p.stdout.splitlines() if line.startswith("# ")]
    assert headers and all(h.split()[1] in ("RTF", "INI") for h in headers)
    assert "+    if not not (res > 10 and count):" in p.stdout


def test_whole_file_one_entry_per_applicable_scheme():
    p = cctest(str(SAMPLE), "--whole", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    source = SAMPLE.read_text()
    assert data["prompt"] == source
    by_scheme = {m["scheme"]: m for m in data["mutants"]}
    assert list(by_scheme) == [
        *("REP_R", "REP_C", "REL_R", "REL_C", "IRR", "RTF", "GRA_R", "GRA_C", "INI"),
        "FMT",  # blank lines and parenthesised conditions
        "DOC",  # the docstring's closing quotes (CMP and FORM find nothing)
    ]
    # nothing in the file passes a or b by keyword, so REP renames them with *rest
    assert by_scheme["REP_R"]["renames"] == {"Param1": "a", "Param2": "b", "Param3": "rest"}
    for m in data["mutants"]:
        compile(m["text"], "<m>", "exec")
    assert "count = count + 1" in by_scheme["IRR"]["text"]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["/nonexistent/x.py:1:1"], "no such file"),
        ([f"{SAMPLE}:99:1"], "outside the document"),
        ([f"{SAMPLE}:2:500"], "outside line 2"),
        ([f"{SAMPLE.parent}:1:1"], "is a directory"),
        ([f"{SAMPLE}:1:1", "--scheme", "NOPE"], "unknown mutation scheme 'NOPE'"),
        ([f"{SAMPLE}"], "not a cursor location"),
        (["/nonexistent/x.py", "--whole"], "no such file"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(args, needle):
    p = cctest(*args)
    assert p.returncode == 2
    assert needle in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and p.stdout == ""


def test_binary_non_utf8_and_unparsable_files(tmp_path):
    binary = tmp_path / "b.py"
    binary.write_bytes(b"\x00\x01\x02")
    latin = tmp_path / "l.py"
    latin.write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n    pass\n")
    for args, needle in [
        ([f"{binary}:1:1"], "binary"),
        ([f"{latin}:1:1"], "not valid UTF-8"),
        ([str(broken), "--whole"], "does not parse"),
    ]:
        p = cctest(*args)
        assert p.returncode == 2 and needle in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1


def test_a_cursor_with_nothing_to_mutate_is_not_an_error(tmp_path):
    f = tmp_path / "c.py"
    f.write_text("# just a comment\n")
    p = cctest(f"{f}:1:3", "--json")
    assert p.returncode == 0
    assert json.loads(p.stdout) == {"prompt": "# ", "mutants": []}


def test_context_files_and_the_code_after_the_cursor_protect_keyword_parameters(tmp_path):
    src = tmp_path / "lib.py"
    src.write_text("def scale(values, factor):\n    out = [v * factor for v in values]\n    return out\n")
    tests = tmp_path / "test_lib.py"
    tests.write_text("from lib import scale\nassert scale([1], factor=2) == [2]\n")

    def renamed(*extra: str) -> set[str]:
        r = cctest(*extra, "--scheme", "REP_R", "--json")
        assert r.returncode == 0, r.stderr
        return {old for m in json.loads(r.stdout)["mutants"] for old in m["renames"].values()}

    assert renamed(str(src), "--whole") == {"values", "factor"}
    assert renamed(str(src), "--whole", "--context", str(tests)) == {"values"}
    # at a cursor, a keyword call after the cursor counts as well
    src.write_text("def scale(values, factor):\n    out = []\n    \n\nprint(scale([1], factor=2))\n")
    assert renamed(f"{src}:3:5") == {"values"}
