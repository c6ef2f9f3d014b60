"""``cctest bench evaluate``, ``export`` and ``report`` on hostile files: a lone surrogate in a
sample, JSON nested a hundred thousand deep, gigabytes of blank lines, an absurd ``--samples``.
Each is judged or refused in one sentence (exit 2), never a traceback, and costs no more than the
bounds say."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cctest.bench.datasets import load_humaneval
from cctest.bench.evaluate import read_samples
from cctest.cli import main
from cctest.errors import DatasetError
from cctest.userfile import iter_user_lines, read_user_lines

DEEP = "[" * 100_000 + "]" * 100_000


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _one_sentence(err: str) -> None:
    assert err.startswith("cctest: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "RecursionError" not in err


def _completion_run(tmp_path: Path, completion: str = "    return None\n") -> Path:
    """A completion run's directory as ``cctest bench`` writes it: HumanEval/0, one completion."""
    problem = load_humaneval().tasks[0]
    run = tmp_path / "completion-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval", "thresholds": [1.0]}))
    record = {
        "task_id": problem.task_id,
        "index": 0,
        "prompt": problem.prompt,
        "completions": [{"text": completion, "is_result": True}],
        "per_T": {"1": {"outliers": [], "chosen": 0}},
    }
    (run / "results.jsonl").write_text(json.dumps(record) + "\n")
    return run


# --- a lone surrogate


def test_a_lone_surrogate_in_a_completion_is_judged_recorded_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A completion holding a lone surrogate (which UTF-8 cannot carry, so Python cannot compile
    it) is a syntax error like any program that does not compile; one that only spells one in an
    escape runs as usual; the record keeps the code as given, and the run and its report finish."""
    right = load_humaneval().tasks[1].ground_truth
    assert right is not None
    samples = _write(
        tmp_path / "samples.jsonl",
        [
            {"task_id": "HumanEval/0", "completion": '    x = "\ud800"\n    return False\n'},
            {"task_id": "HumanEval/1", "completion": '    assert "\\ud800" != ""\n' + right},
        ],
    )
    run = tmp_path / "run"
    assert main(["bench", "evaluate", str(samples), "--out", str(run), "--no-progress"]) == 0, (
        capsys.readouterr().err
    )
    records = _records(run)
    assert [r["task_id"] for r in records] == ["HumanEval/0", "HumanEval/1"]
    first, second = records[0]["samples"][0], records[1]["samples"][0]
    assert first["outcome"] == "syntax_error" and "surrogates not allowed" in first["detail"]
    assert first["code"] == '    x = "\ud800"\n    return False\n'  # as given, escaped in the file
    assert second["passed"], second
    assert main(["bench", "report", str(run)]) == 0
    assert (run / "report.html").is_file()


def test_a_lone_surrogate_in_a_completion_run_is_exported_escaped(tmp_path: Path) -> None:
    run = _completion_run(tmp_path, '    return "\ud800"\n')
    out = tmp_path / "samples.jsonl"
    assert main(["bench", "export", str(run), "--format", "humaneval", "--out", str(out)]) == 0
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == [
        {"task_id": "HumanEval/0", "completion": '    return "\ud800"\n'}
    ]


# --- JSON nested a hundred thousand deep


def test_deeply_nested_samples_are_refused_in_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": "    return 1\n"}) + "\n")
    with samples.open("a") as f:
        f.write('{"task_id": "HumanEval/0", "completion": ' + DEEP + "}\n")
    run = tmp_path / "run"
    assert main(["bench", "evaluate", str(samples), "--out", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    _one_sentence(err)
    assert "line 2 is not valid JSON (nested too deeply" in err
    assert not run.exists()


@pytest.mark.parametrize("where", ["dataset", "humaneval-plus"])
def test_deeply_nested_datasets_are_refused_in_one_sentence(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text('{"prompt": "def f():\\n", "tests": ' + DEEP + "}\n")
    samples = _write(tmp_path / "samples.jsonl", [{"task_id": "line-1", "completion": "    return 1\n"}])
    spec = str(dataset) if where == "dataset" else f"humaneval-plus:{dataset}"
    assert main(["bench", "evaluate", str(samples), "--dataset", spec, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    _one_sentence(err)
    assert "line 1 is not valid JSON (nested too deeply" in err


@pytest.mark.parametrize("damaged", ["results.jsonl", "config.json"])
@pytest.mark.parametrize("action", ["report", "export"])
def test_a_run_with_deeply_nested_files_is_refused_in_one_sentence(
    damaged: str, action: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _completion_run(tmp_path)
    if damaged == "results.jsonl":
        with (run / damaged).open("a") as f:
            f.write('{"task_id": "HumanEval/1", "index": 1, "completions": ' + DEEP + "}\n")
    else:
        (run / damaged).write_text('{"dataset": "humaneval", "thresholds": ' + DEEP + "}\n")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    argv = ["bench", action, str(run)] + (["--format", "humaneval"] if action == "export" else [])
    assert main(argv) == 2
    captured = capsys.readouterr()
    _one_sentence(captured.err)
    assert damaged in captured.err and captured.out == ""
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


# --- blank lines by the million


def _gzip_blank(path: Path, mib: int, tail: bytes = b"") -> Path:
    with gzip.open(path, "wb", compresslevel=1) as f:
        block = b"\n" * (1 << 20)
        for _ in range(mib):
            f.write(block)
        f.write(tail)
    return path


def test_runs_of_blank_lines_are_passed_over_a_buffer_at_a_time(tmp_path: Path) -> None:
    """16 MiB of blank lines (16,777,216 lines) before a sample: read in a few thousand steps,
    not one per line, and the sample's line number is still right."""
    sample = json.dumps({"task_id": "HumanEval/0", "completion": "    return 1\n"}).encode()
    path = _gzip_blank(tmp_path / "samples.jsonl.gz", 16, sample + b"\n\n \r\n" + b"{not json\n")
    steps = sum(1 for _ in iter_user_lines(path, limit=None, blank_runs=True))
    assert steps < 16 * 1024  # a step per kibibyte at most (the reader's buffer is larger)
    assert list(read_user_lines(path, skip_blank=True))[0] == (16 * 2**20 + 1, sample.decode())
    with pytest.raises(DatasetError, match=f"line {16 * 2**20 + 4} is not valid JSON"):
        read_samples(path)


def test_a_gzip_of_blank_lines_past_the_limit_is_refused(tmp_path: Path) -> None:
    """Blank lines count toward the unpacked size: past the limit, the file is refused (here a
    limit of 1 MiB, as 512 MiB is a samples file's)."""
    path = _gzip_blank(tmp_path / "samples.jsonl.gz", 4)
    with pytest.raises(DatasetError, match="unpacks to more than 1 MiB"):
        list(read_user_lines(path, limit=1 << 20, error=DatasetError, skip_blank=True))


def test_skipping_blank_lines_numbers_the_others_as_reading_every_line_does(tmp_path: Path) -> None:
    """Runs of whitespace lines of every kind of line end (a lone carriage return ends a line too),
    across the reader's buffer, in a plain file and a gzip one."""
    parts = [b"\xef\xbb\xbf", b"a\n"]
    for end in (b"\n", b"\r\n", b"\r", b" \t\n", b"\x0c\r\n", b" \xc2\xa0\n"):
        parts += [end * 9000, b"b\r", end * 3, b"c\r\n", end, b"d"]
    data = b"".join(parts)
    for name in ("lines.jsonl", "lines.jsonl.gz"):
        path = tmp_path / name
        if name.endswith(".gz"):
            with gzip.open(path, "wb") as f:
                f.write(data)
        else:
            path.write_bytes(data)
        every = [(n, line) for n, line in read_user_lines(path) if line.strip()]
        assert list(read_user_lines(path, skip_blank=True)) == every
        assert len(every) == 1 + 3 * 6


# --- --samples


def test_samples_beyond_the_bound_are_refused_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    argv = ["bench", "--dataset", "humaneval", "--backend", "rules", "--temperature", "0.8"]
    argv += ["--limit", "1", "--no-progress", "--out", str(out), "--samples", "1001"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    _one_sentence(err)
    assert "at most 1,000" in err
    assert not out.exists()
