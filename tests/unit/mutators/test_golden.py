"""Every mutant the mutators make at fixed cursor positions is the one recorded in golden.json.

The record (``tests/data/mutators/make_golden.py``) was made before the mutators were split into
self-contained schemes; a refactor must leave it byte for byte the same. Regenerate it only for an
intended change of the mutants.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from script_module import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "data" / "mutators" / "make_golden.py"


def _script() -> ModuleType:
    return load_script(SCRIPT, "make_golden")


def test_the_mutants_are_the_recorded_ones() -> None:
    golden = _script()
    recorded = json.loads(golden.GOLDEN.read_text(encoding="utf-8"))
    now = json.loads(golden.dumps(golden.record()))
    assert len(now["cursors"]) == len(recorded["cursors"])
    for got, want in zip(now["cursors"], recorded["cursors"], strict=True):
        assert got == want, (want["file"], want["offset"], want["seed"])
    assert now["whole"] == recorded["whole"]
