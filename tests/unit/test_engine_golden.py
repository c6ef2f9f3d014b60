"""Every completion and verdict the engine gives on the bundled model at fixed cursor positions
is the one recorded in golden.json.

The record (``tests/data/engine/make_golden.py``) was made before the model backend was split into
objects that import one way; a refactor of the backend or of the engine's use of it must leave it
byte for byte the same. Regenerate it only for an intended change of completions or verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from script_module import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "data" / "engine" / "make_golden.py"


def _script() -> ModuleType:
    return load_script(SCRIPT, "make_engine_golden")


@pytest.mark.slow
def test_the_completions_and_verdicts_are_the_recorded_ones() -> None:
    golden = _script()
    recorded = json.loads(golden.GOLDEN.read_text(encoding="utf-8"))
    now = json.loads(golden.dumps(golden.record()))
    assert len(now["cursors"]) == len(recorded["cursors"])
    for got, want in zip(now["cursors"], recorded["cursors"], strict=True):  # one cursor at a time
        assert got == want, f"{want['file']} at {want['offset']} (seed {want['seed']})"
    assert now["run_many"] == recorded["run_many"]
    assert golden.dumps(now) == golden.GOLDEN.read_text(encoding="utf-8")
