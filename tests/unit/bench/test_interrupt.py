"""Ctrl-C on a real ``cctest bench`` run on the bundled model: the process ends promptly, the model
call in flight abandoned, every record written stays whole, and ``--resume`` completes the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cctest.bench.datasets import load_humaneval
from cctest.bench.store import RunStore

LIMIT = 4
HANG_GUARD = 120  # seconds: far beyond a prompt's model call, so only a hang can reach it


def test_ctrl_c_stops_the_run_and_resume_completes_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = [
        sys.executable,
        "-m",
        "cctest",
        "bench",
        "--dataset",
        "humaneval",
        "--limit",
        str(LIMIT),
        "-k",
        "2",
        "--batch-prompts",
        "1",
        "--max-new-tokens",
        "32",
        "--out",
        str(run),
        "--no-progress",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    results = run / "results.jsonl"
    try:
        # Ctrl-C once the first record is on disk: the next prompt's model call is then in flight
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            if results.exists() and results.read_bytes().count(b"\n") >= 1:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("cctest bench did not end after Ctrl-C") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    # it did not wait for the model call in flight (which a cancellation cannot stop) to end
    assert "the model call in flight was abandoned" in stderr
    data = results.read_bytes()
    assert data.endswith(b"\n")  # whole records only, no torn line
    before = [json.loads(line)["task_id"] for line in data.splitlines()]
    assert 1 <= len(before) < LIMIT
    assert not (run / "summary.json").exists()
    resumed = subprocess.run(
        [*args, "--resume"], env=env, capture_output=True, text=True, timeout=HANG_GUARD * 5
    )
    assert resumed.returncode == 0, resumed.stderr
    after = [r["task_id"] for r in RunStore(results.parent).records()]
    assert sorted(after) == sorted(t.task_id for t in load_humaneval().tasks[:LIMIT])
    assert after[: len(before)] == before
    assert (run / "summary.json").exists()
