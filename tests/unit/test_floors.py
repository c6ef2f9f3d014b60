"""scripts/floors.py: the constraints of the floors job (scripts/test-floors.sh) pin every runtime
dependency of pyproject.toml, and only those, to its lower bound."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_every_runtime_dependency_is_pinned_to_its_lower_bound() -> None:
    floors = load_script(ROOT / "scripts" / "floors.py", "floors").floors()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = [Requirement(r) for r in project["dependencies"]]
    runtime += [
        Requirement(r) for e, rs in project["optional-dependencies"].items() if e != "dev" for r in rs
    ]
    runtime = [r for r in runtime if r.name != "cctest"]
    pins = {Requirement(p).name: Requirement(p) for p in floors}
    assert set(pins) == {r.name for r in runtime}
    for req in runtime:
        (pin,) = pins[req.name].specifier
        assert pin.operator == "==" and req.specifier.contains(pin.version), (req, pin)
        assert not any(s.operator == ">=" and s.version != pin.version for s in req.specifier)


def test_a_dependency_without_a_lower_bound_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["libcst>=1.1", "torch"]\n', encoding="utf-8"
    )
    with pytest.raises(SystemExit, match="'torch' in pyproject.toml needs one '>=' lower bound"):
        load_script(ROOT / "scripts" / "floors.py", "floors").floors(tmp_path / "pyproject.toml")
