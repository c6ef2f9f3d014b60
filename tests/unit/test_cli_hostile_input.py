"""Hostile and unlucky input to the CLI: special files, huge files, and numbers out of range.

Each case is one sentence on stderr and exit status 2, before a model is loaded or a byte of a
special file is read. The cases that would hang or fill memory without the fix run as a
subprocess under a wall-clock timeout and an address-space limit.
"""

from __future__ import annotations

import gzip
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from cctest.cli import main
from cctest.errors import DatasetError, InputError
from cctest.userfile import MAX_SOURCE_BYTES, read_user_text

ROOT = Path(__file__).resolve().parents[2]
CCTEST = Path(sys.executable).parent / "cctest"
SAMPLE = ROOT / "tests" / "data" / "mutators" / "sample.py"


def _bounded(*args: str) -> subprocess.CompletedProcess[str]:
    """``cctest ARGS`` with at most 60 s and 2 GiB of address space (a runaway read hits either)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [str(CCTEST), *args], capture_output=True, text=True, timeout=60, preexec_fn=limit, cwd=ROOT
    )


def _one_sentence(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cctest: ") and lines[0].endswith("."), stderr
    return lines[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.py"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", ["complete", "mutate"])
def test_a_device_is_refused_not_read(command: str) -> None:
    extra = ["--backend", "rules"] if command == "complete" else []
    r = _bounded(command, "/dev/zero:1:1", *extra)
    assert r.returncode == 2
    assert "/dev/zero is not a regular file" in _one_sentence(r.stderr)


def test_a_named_pipe_is_refused_without_waiting(fifo: Path) -> None:
    r = _bounded("complete", f"{fifo}:1:1", "--backend", "rules")
    assert r.returncode == 2 and "is not a regular file" in _one_sentence(r.stderr)
    r = _bounded("mutate", f"{SAMPLE}:12:5", "--context", str(fifo))
    assert r.returncode == 2 and "is not a regular file" in _one_sentence(r.stderr)


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * (MAX_SOURCE_BYTES // 6 + 1))
    assert main(["complete", f"{big}:1:1", "--backend", "rules"]) == 2
    assert "larger than 4 MiB, the limit for a Python source file" in _one_sentence(capsys.readouterr().err)


def test_datasets_and_task_files_go_through_the_same_reader(fifo: Path, tmp_path: Path) -> None:
    named = tmp_path / "data.jsonl"
    os.rename(fifo, named)
    for args in (
        ["bench", "--dataset", str(named), "--backend", "rules", "--out", str(tmp_path / "run")],
        ["bench", "tasks", "--tasks", str(named), "--backend", "rules", "--out", str(tmp_path / "run")],
    ):
        r = _bounded(*args)
        assert r.returncode == 2 and "is not a regular file" in _one_sentence(r.stderr), args
    assert not (tmp_path / "run").exists()


def test_a_gzip_file_that_unpacks_beyond_the_limit_is_refused(tmp_path: Path) -> None:
    bomb = tmp_path / "tasks.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"\n" * (1 << 20)))  # 1 MiB of newlines in about 1 KiB
    assert len(read_user_text(bomb, limit=2 << 20)) == 1 << 20
    with pytest.raises(DatasetError, match="unpacks to more than 64 KiB"):
        read_user_text(bomb, limit=64 << 10, what="dataset file", error=DatasetError)
    with pytest.raises(InputError, match="not a readable gzip file"):
        (tmp_path / "bad.gz").write_bytes(b"not gzip")
        read_user_text(tmp_path / "bad.gz")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--threads", "99999"], "more than this machine's"),
        (["--threads", str((os.cpu_count() or 1) + 1)], "more than this machine's"),
        (["--threads", "-1"], "threads: -1 is not an integer of at least 0."),
        (["--temperature", "1e308"], "temperature: 1e+308 is not a number from 0 to 2."),
        (["--temperature", "inf"], "temperature: inf is not a number from 0 to 2."),
        (["--temperature", "nan"], "temperature: nan is not a number from 0 to 2."),
        (["--top-p", "0"], "top-p: 0.0 is not a number above 0 and at most 1."),
        (["--top-p", "1.5"], "top-p: 1.5 is not a number above 0 and at most 1."),
    ],
)
def test_numbers_out_of_range_are_refused_before_the_model_loads(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --backend hf: without the check, 99999 threads crash torch and 1e308 reaches torch.multinomial
    assert main(["complete", f"{SAMPLE}:12:5", "--backend", "hf", "--model", "/nonexistent", *args]) == 2
    assert needle in _one_sentence(capsys.readouterr().err)


def test_threads_up_to_the_cores_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    cores = os.cpu_count() or 1
    assert main(["complete", f"{SAMPLE}:12:5", "--backend", "rules", "--threads", str(cores)]) == 0


@pytest.mark.parametrize("value", ["nan", "-1", "1.5", "inf"])
def test_max_distance_is_checked_once_for_mutate_and_complete(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mutate", f"{SAMPLE}:12:5", "--max-distance", value]) == 2
    from_mutate = _one_sentence(capsys.readouterr().err)
    assert main(["complete", f"{SAMPLE}:12:5", "--backend", "rules", "--max-distance", value]) == 2
    assert _one_sentence(capsys.readouterr().err) == from_mutate
    assert "max-distance" in from_mutate and "from 0 to 1" in from_mutate
