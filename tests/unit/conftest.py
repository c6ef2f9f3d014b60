"""Fixtures shared by the unit tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable

import pytest

NOBODY = 65534


@pytest.fixture
def as_nobody() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run a Python script (``-c``) as an ordinary user, ``nobody``, with the system's python3.

    Skips unless the tests run as root (to become that user) with ``setpriv`` and ``/usr/bin/python3``.
    """
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or not shutil.which("setpriv") or not system_python:
        pytest.skip("needs root (to become an ordinary user), setpriv and a system python3")

    def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            + [str(system_python), "-I", "-c", script, *args],
            capture_output=True,
            text=True,
            cwd="/tmp",
            timeout=120,
        )

    return run
