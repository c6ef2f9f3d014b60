"""A local model's load is told on stderr (``cctest.model_load``): ``complete`` and ``bench`` run
as a user runs them, on the bundled model, through a pipe; the in-place line on a real terminal."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cctest.config import Settings
from cctest.model_load import StderrReport, load
from cctest.models import bundled_model_path

ROOT = Path(__file__).resolve().parents[2]
CCTEST = Path(sys.executable).parent / "cctest"
DEMO = f"{ROOT / 'examples' / 'demo.py'}:6:5"
BUNDLED = bundled_model_path()
DONE = re.compile(r"cctest: loading model bundled… done \(\d+\.\d s\)")


def cctest_run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CCTEST), *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def read_all(leader: int) -> str:
    """What a terminal whose other end is closed was sent (Linux: EIO at its end)."""
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.slow
def test_complete_tells_the_load_on_stderr_and_keeps_json_on_stdout() -> None:
    r = cctest_run("complete", DEMO, "--json", "-k", "2", "--max-new-tokens", "8")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == "cctest: loading model bundled…" and DONE.fullmatch(lines[1]), r.stderr
    assert len(lines) == 2, r.stderr
    assert json.loads(r.stdout)["prompt"]  # stdout is the JSON and nothing else


def test_a_backend_without_a_local_model_loads_nothing_to_tell() -> None:
    r = cctest_run("complete", DEMO, "--backend", "rules")
    assert r.returncode == 0 and "loading model" not in r.stderr, r.stderr


SYNTACTIC = ["--equations", "linear", "--distances", "1", "--variants", "1", "--inputs", "5"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suite", "args"),
    [
        ("", ["--dataset", "humaneval", "--limit", "2", "-k", "1"]),
        (" syntactic", SYNTACTIC),  # the task suites' runner (tasks, syntactic, turbulence)
        (" operational", ["--dataset", "syntactic", *SYNTACTIC, "--budget", "2"]),
    ],
    ids=["completion", "tasks", "operational"],
)
def test_bench_tells_the_load_before_its_progress_bar_starts(
    suite: str, args: list[str], tmp_path: Path
) -> None:
    r = cctest_run("bench", *suite.split(), *args, "--max-new-tokens", "8", "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    err = r.stderr
    start = err.index("cctest: loading model bundled…\n")
    done = DONE.search(err)
    assert done is not None, err
    # the bar's first drawing (0/2) comes after the load ended: its clock, and so its first
    # rate and ETA, leave the load out
    first_bar = err.index(f"cctest bench{suite}:")
    assert start < done.start() < first_bar, err
    assert "0/2" in err[first_bar : err.index("prompt", first_bar)]


def test_on_a_terminal_the_load_is_one_line_finished_in_place() -> None:
    leader, follower = os.openpty()
    with open(follower, "w", encoding="utf-8", closefd=True) as tty:
        assert load(lambda s: s.backend, Settings(), StderrReport(tty)) == "hf"
        load(lambda s: s.backend, Settings(model=str(BUNDLED)), StderrReport(tty))
    shown = read_all(leader)
    lines = shown.splitlines()
    assert len(lines) == 2 and DONE.fullmatch(lines[0]), shown
    assert lines[1].startswith(f"cctest: loading model {BUNDLED}… done ("), shown


def test_a_failed_load_ends_its_line_and_leaves_the_message_to_the_error(tmp_path: Path) -> None:
    def broken(settings: Settings) -> None:
        raise OSError("no such model")

    leader, follower = os.openpty()
    with open(follower, "w", encoding="utf-8", closefd=True) as tty, pytest.raises(OSError):
        load(broken, Settings(), StderrReport(tty))
    shown = read_all(leader)
    assert shown == "cctest: loading model bundled… failed\n"
    piped = tmp_path / "stderr"
    with piped.open("w", encoding="utf-8") as pipe, pytest.raises(OSError):
        load(broken, Settings(), StderrReport(pipe))
    assert piped.read_text(encoding="utf-8") == "cctest: loading model bundled…\n"


def test_a_directory_that_is_no_model_is_refused_in_one_sentence_with_no_load_told(tmp_path: Path) -> None:
    for model in (tmp_path / "nothing", tmp_path):
        r = cctest_run("complete", DEMO, "--model", str(model))
        assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
        assert "loading model" not in r.stderr


def test_a_model_directory_is_named_as_given(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    stream = tmp_path / "stderr"
    with stream.open("w", encoding="utf-8") as pipe:
        load(lambda s: None, Settings(model=str(tmp_path)), StderrReport(pipe))
    told, done = stream.read_text(encoding="utf-8").splitlines()
    assert told == f"cctest: loading model {tmp_path}…" and done.startswith(f"{told} done (")


@pytest.mark.slow
def test_serve_tells_the_load_before_it_listens() -> None:
    proc = subprocess.Popen(
        [str(CCTEST), "serve", "--port", "0", "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        listening = proc.stdout.readline()  # written once the model is loaded and the port open
        told = [proc.stderr.readline(), proc.stderr.readline()]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert "listening on http://127.0.0.1:" in listening, listening
    assert told[0] == "cctest: loading model bundled…\n" and DONE.fullmatch(told[1].rstrip("\n")), told
