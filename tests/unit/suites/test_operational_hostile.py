"""``cctest bench operational`` on hostile input: an endless description, endless words, a vectors
file or an answer cache that is a device, a named pipe, an endless line or not what it claims.

Each is one sentence on stderr and exit status 2 before any query. The cases that would fill
memory or hang without their fix run ``cctest`` as a subprocess under a wall-clock timeout and an
address-space limit (``_bounded``), against a real scripted chat server.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web
from local_server import chat_app
from report_runs import ADD
from test_cli_hostile_input import _bounded, _one_sentence

from cctest.cli import main


def _add(user: str) -> str:
    """Right code while the task says 'sum', wrong code otherwise."""
    return "def add(a, b):\n    return %s\n" % ("a + b" if " sum " in user else "a - b")


@pytest.fixture
def url(serve_app: Callable[[web.Application], str]) -> str:
    return serve_app(chat_app(_add, []))


def _args(url: str, tasks: Path, out: Path, *extra: str) -> list[str]:
    return [
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
        "--budget",
        "4",
        "--no-progress",
        "--out",
        str(out),
        *extra,
    ]


def _tasks(tmp_path: Path, description: str = ADD["description"]) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({**ADD, "description": description}) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("description", "size"),
    [
        ("Return the sum of a and b. " + "word " * 300_000, "1,500,027 characters"),
        ("Return the sum " + " ".join(["q" * (1 << 20)] * 3) + " of a and b.", "3,145,757 characters"),
    ],
    ids=["300k words", "three 1 MiB words"],
)
def test_an_endless_description_is_refused_before_any_query(
    tmp_path: Path, url: str, description: str, size: str
) -> None:
    """Without the bound, 300,000 words passed 6 GB, and three 1 MiB words made no progress."""
    out = tmp_path / "run"
    r = _bounded(*_args(url, _tasks(tmp_path, description), out, "--answers-cache", "none"))
    assert r.returncode == 2, r.stderr[-2000:]
    sentence = _one_sentence(r.stderr)
    assert f"task 'add' has a description of {size}; " in sentence
    assert "at most 10,000 characters and 1,000 words" in sentence
    assert not (out / "results.jsonl").exists()


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("option", ["--vectors", "--answers-cache"])
def test_a_device_or_a_pipe_is_refused_before_it_is_opened(
    tmp_path: Path, url: str, fifo: Path, option: str
) -> None:
    """/dev/zero as vectors grew to 6 GB; a named pipe waited for a writer forever."""
    tasks = _tasks(tmp_path)
    for path in ("/dev/zero", str(fifo)):
        cache = [] if option == "--answers-cache" else ["--answers-cache", "none"]
        r = _bounded(*_args(url, tasks, tmp_path / "run", option, path, *cache))
        assert r.returncode == 2, r.stderr[-2000:]
        assert f"{path} is not a regular file (a device, a pipe or a socket)" in _one_sentence(r.stderr)
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_a_vectors_file_of_one_endless_line_is_refused_after_a_line(tmp_path: Path, url: str) -> None:
    """A 2 GiB sparse file (NUL bytes, no line end) took 4.1 GB before its error; now one line's
    bound (1 MiB) is read. Sparse: it takes no disk."""
    sparse = tmp_path / "glove.txt"
    with sparse.open("wb") as f:
        f.truncate(2 << 30)
    r = _bounded(
        *_args(url, _tasks(tmp_path), tmp_path / "run", "--vectors", str(sparse), "--answers-cache", "none")
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert "glove.txt line 1 is longer than 1 MiB, the limit for a line of a GloVe-format vectors file" in (
        _one_sentence(r.stderr)
    )


def test_an_answer_cache_that_is_not_ours_is_refused_and_left_as_it_was(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = _tasks(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my notes, not a database\n" * 100)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE people (name TEXT)")
    other_bytes = other.read_bytes()
    for path, says in (
        (notes, "notes.txt is not an SQLite database; give an answer cache file (SQLite) or 'none'."),
        (other, "other.sqlite is an SQLite database but not cctest's answer cache;"),
        (tmp_path, "is a directory; give an answer cache file (SQLite) or 'none'."),
    ):
        assert main(_args(url, tasks, tmp_path / "run", "--answers-cache", str(path))) == 2
        assert says in _one_sentence(capsys.readouterr().err)
    assert notes.read_bytes() == b"my notes, not a database\n" * 100
    assert other.read_bytes() == other_bytes
    assert not (tmp_path / "run" / "results.jsonl").exists()
    # an empty file becomes the cache, and the cache it became is used again
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert main(_args(url, tasks, tmp_path / "run1", "--answers-cache", str(empty))) == 0
    assert main(_args(url, tasks, tmp_path / "run2", "--answers-cache", str(empty))) == 0
    summary = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert summary["queries"]["cached"] == summary["queries"]["total"] > 0


def test_results_hold_strict_json_when_a_distance_cannot_be_measured(tmp_path: Path, url: str) -> None:
    """'tot-al' has a vector, but a text is split at '-': the paraphrase has no word with a vector,
    so its cosine and Euclidean distances cannot be measured. They were bare NaN in
    results.jsonl (not JSON: strict readers refuse it); now they are null."""
    vectors = tmp_path / "glove.txt"
    vectors.write_text("sum 1 0\ntot-al 0.9 0.1\n", encoding="utf-8")
    out = tmp_path / "run"
    assert main(_args(url, _tasks(tmp_path), out, "--vectors", str(vectors), "--answers-cache", "none")) == 0

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    (record,) = [json.loads(line, parse_constant=refuse) for line in (out / "results.jsonl").open()]
    ff = record["first_failure"]
    assert ff["text"] == "Return the tot-al of a and b." and ff["distance"]["cosine"] is None
    summary = json.loads((out / "summary.json").read_text(), parse_constant=refuse)
    assert summary["r_o"]["cosine"] is None and summary["r_o"]["lev_word"] == 3  # tot - al
