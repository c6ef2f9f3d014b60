"""Print a pip constraints file that pins every runtime dependency of pyproject.toml to its lower
bound (``name>=X`` -> ``name==X``): the floors job installs cctest with it (scripts/test-floors.sh).

The development tools (the ``dev`` extra) are left free: their floors are not the users'. A runtime
dependency without a ``>=`` bound is an error, since nothing would say which versions work."""

from __future__ import annotations

import sys
from pathlib import Path

import tomllib
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def floors(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    declared = list(project["dependencies"])
    for extra, reqs in project.get("optional-dependencies", {}).items():
        if extra != "dev":
            declared += reqs
    pins: dict[str, str] = {}
    for line in declared:
        req = Requirement(line)
        if req.name == project["name"]:  # an extra that includes others
            continue
        lows = [s.version for s in req.specifier if s.operator == ">="]
        if len(lows) != 1:
            raise SystemExit(f"floors: {line!r} in pyproject.toml needs one '>=' lower bound.")
        pins[req.name] = f"{req.name}=={lows[0]}"
    return sorted(pins.values(), key=str.lower)


if __name__ == "__main__":
    sys.stdout.write("".join(f"{pin}\n" for pin in floors()))
