"""``cctest formula mutate|reduce``, run as a subprocess like a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CCTEST = Path(sys.executable).parent / "cctest"


def cctest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CCTEST), "formula", *args], capture_output=True, text=True, timeout=120)


def test_mutate_as_json():
    p = cctest("mutate", "a*x + b = 0", "--distance", "2", "--count", "5", "--seed", "3", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert len(data) == 5 and len({d["formula"] for d in data}) == 5
    for d in data:
        assert set(d) == {"formula", "distance", "mutations", "size"}
        assert d["distance"] == 2 and len(d["mutations"]) == 2 and d["size"] >= 7
        assert all(m == "M1" or m[:2] in ("M2", "M3", "M4", "M5") for m in d["mutations"])
    again = cctest("mutate", "a*x + b = 0", "--distance", "2", "--count", "5", "--seed", "3", "--json")
    assert json.loads(again.stdout) == data


def test_mutate_distance_one_lists_every_single_mutation():
    p = cctest("mutate", "a*sin(x) = b", "--distance", "1", "--json")
    data = json.loads(p.stdout)
    assert len(data) == 9
    assert {"formula": "b = a*sin(x)", "distance": 1, "mutations": ["M1"], "size": 6} in data


def test_reduce_as_json_and_text():
    p = cctest("reduce", "(0 + b)*a = (a*x + b + b)*a", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["formula"] == "a*x + b = 0" and data["size"] == 7 and data["steps"][-1] == "R1"
    text = cctest("reduce", "k*t + m + k = 0 + k", "--variable", "t")
    assert text.returncode == 0 and text.stdout.startswith("k*t + m = 0")


@pytest.mark.parametrize(
    "args",
    [
        ("reduce", "a*x + b"),
        ("reduce", "a = b"),
        ("mutate", "a*x + b = 0", "--distance", "0"),
        ("mutate", "open('f') = x", "--distance", "1"),
        ("mutate", "a*x + b = 0"),  # --distance is required
    ],
)
def test_bad_input_is_one_line_and_exit_2(args):
    p = cctest(*args)
    assert p.returncode == 2
    assert p.stdout == "" and p.stderr.count("\n") == 1 and p.stderr.startswith("cctest: ")


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        (
            [b"mutate", b"a*x + b\xff = 0", b"--distance", b"1"],
            "The equation holds the byte 0xff at character 8",
        ),
        ([b"reduce", b"a*x\xc3 + b = 0"], "The equation holds the byte 0xc3 at character 4"),
        (
            [b"reduce", b"a*x + b = 0", b"--variable", b"x\xfe"],
            "The variable holds the byte 0xfe at character 2",
        ),
    ],
)
def test_a_byte_that_is_not_utf8_is_one_sentence(argv: list[bytes], sentence: str) -> None:
    """A shell passes bytes; Python keeps the ones that are not UTF-8 as lone surrogates, which the
    parser cannot compile: one sentence and exit status 2, not a traceback."""
    p = subprocess.run([bytes(CCTEST), b"formula", *argv], capture_output=True, timeout=120)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 2, err
    assert err.strip().splitlines() == [f"cctest: {sentence}, which is not UTF-8 text."], err
