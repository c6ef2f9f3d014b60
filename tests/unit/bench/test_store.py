"""The run store (``cctest.bench.store.RunStore``) used directly, as every kind of run uses it: a
new run and a resume (refused when the config differs), a torn last record, the lock held by
another process, and summary.json written whole or not at all."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cctest.bench.store import RunStore, RunWriteError, load_run
from cctest.errors import ConfigError


@dataclass(frozen=True)
class _Config:
    """A config of the ``evaluate`` kind (read as it is written)."""

    kind: str = "evaluate"
    dataset: str = "humaneval"
    tasks: int = 2
    sandbox: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "dataset": self.dataset, "tasks": self.tasks, "sandbox": self.sandbox}


def _record(i: int) -> dict[str, Any]:
    return {"task_id": f"t{i}", "index": i, "text": "é\n" * i}


def test_a_new_run_writes_its_config_and_a_resume_reads_its_records(tmp_path: Path) -> None:
    store: RunStore[dict[str, Any]] = RunStore(tmp_path / "run")
    with store.locked():
        assert store.prepare(_Config(), resume=False) == []
        store.append(_record(1))
        store.append(_record(0))
    assert json.loads(store.config_path.read_text()) == _Config().to_dict()
    assert store.config_path.read_text().endswith("\n")
    # written one line each, in the order appended; load gives task order
    lines = store.results_path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == ["t1", "t0"]
    assert store.records() == [_record(1), _record(0)]
    assert load_run(store.path) == (_Config().to_dict(), [_record(0), _record(1)])

    with pytest.raises(ConfigError, match="already holds a run; add --resume"):
        store.prepare(_Config(), resume=False)
    assert store.prepare(_Config(), resume=True) == [_record(1), _record(0)]


def test_a_resume_with_another_config_is_refused_naming_what_differs(tmp_path: Path) -> None:
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.prepare(_Config(), resume=False)
    store.append(_record(0))
    before = store.results_path.read_bytes()
    with pytest.raises(ConfigError) as err:
        store.prepare(_Config(tasks=3, sandbox={"wall_seconds": 1}), resume=True)
    assert str(err.value) == (
        f"the run in {tmp_path} was made with different settings (sandbox, tasks); "
        "resume it with the same ones or choose another --out."
    )
    assert store.results_path.read_bytes() == before
    with pytest.raises(ConfigError, match="there is no run to resume"):
        RunStore(tmp_path / "none").prepare(_Config(), resume=True)


def test_a_torn_last_record_is_ignored_then_cut_off_on_resume(tmp_path: Path) -> None:
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.prepare(_Config(), resume=False)
    store.append(_record(0))
    store.append(_record(1))
    whole = store.results_path.read_bytes()
    with store.results_path.open("ab") as f:  # a write an interruption cut short
        f.write(json.dumps(_record(2)).encode()[:10])
    assert store.records() == [_record(0), _record(1)]
    assert len(store.results_path.read_bytes()) > len(whole)  # reading alone changes nothing
    assert store.prepare(_Config(), resume=True) == [_record(0), _record(1)]
    assert store.results_path.read_bytes() == whole  # the resume cut it off
    store.append(_record(2))
    assert store.records() == [_record(0), _record(1), _record(2)]


def test_a_damaged_record_before_the_last_line_is_one_sentence(tmp_path: Path) -> None:
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.results_path.write_text('{"task_id": "a"}\n{"task_id": \n{"task_id": "b"}\n')
    with pytest.raises(ConfigError, match=r"results.jsonl line 2 is damaged"):
        store.records()
    store.results_path.write_text('{"task_id": "a"}\n{"index": 1}\n')
    with pytest.raises(ConfigError, match=r"line 2 is not a record of a run \(it has no 'task_id' string\)"):
        store.records()


_HOLD = """
import sys
from pathlib import Path
from cctest.bench.store import RunStore

with RunStore(Path(sys.argv[1])).locked():
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_directory_another_process_holds_is_refused_with_its_pid(tmp_path: Path) -> None:
    store: RunStore[dict[str, Any]] = RunStore(tmp_path / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(store.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(ConfigError) as err, store.locked():
            pass
        assert str(err.value) == (
            f"{store.path} is being written by another run (pid {holder.pid}); "
            "wait for it to end or choose another --out."
        )
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    with store.locked():  # the lock ends with its process
        assert store.lock_path.read_text() == f"{os.getpid()}\n"


def test_summary_json_is_written_whole_and_never_through_a_link(tmp_path: Path) -> None:
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.write_summary({"counts": {"tasks": 2}})
    assert store.summary_path.read_text() == json.dumps({"counts": {"tasks": 2}}, indent=2) + "\n"
    store.write_summary({"counts": {"tasks": 1}})
    assert json.loads(store.summary_path.read_text()) == {"counts": {"tasks": 1}}

    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text("mine")
    store.summary_path.unlink()
    store.summary_path.symlink_to(outside)
    store.write_summary({"counts": {}})
    assert outside.read_text() == "mine"  # the link was replaced, not followed
    assert not store.summary_path.is_symlink()

    # a write that fails (a file-size limit, reached mid-write) leaves no temporary file behind
    store.summary_path.unlink()
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (10, limits[1]))
    try:
        with pytest.raises(RunWriteError, match=r"summary.json cannot be written \(the file size limit"):
            store.write_summary({"counts": {"tasks": 12345}})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert list(tmp_path.iterdir()) == []

    # a directory there is refused before anything is written
    store.summary_path.mkdir()
    (store.summary_path / "x").write_text("")
    with pytest.raises(ConfigError, match="summary.json: it is a directory"):
        store.write_summary({"counts": {}})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
