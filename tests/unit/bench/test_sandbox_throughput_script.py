"""``benchmarks/sandbox_throughput.py --user``: how it runs the tools as an ordinary user (the
measurement itself installs the peers and takes minutes; it is run by hand, see docs/bench.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
from run_benchmark_script import ROOT, run_benchmark_script
from script_module import load_script


@pytest.fixture
def st(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its _peer_venv, as when it is run
    return load_script(ROOT / "benchmarks" / "sandbox_throughput.py", "sandbox_throughput")


def test_a_user_that_does_not_exist_is_one_sentence_and_exit_2() -> None:
    proc = run_benchmark_script("sandbox_throughput.py", "--user", "no-such-user-here", timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["sandbox_throughput: there is no user 'no-such-user-here'."]
    assert proc.stdout == ""


def test_the_interpreter_chosen_is_one_the_user_can_reach(st: ModuleType) -> None:
    """The user runs the tools with an interpreter whose file and standard library it can reach by
    their paths, as the sandbox's view binds them (starting it is not enough: an interpreter under
    a directory the user may not enter can still be started by its path from root's setpriv)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv, to become an ordinary user")
    prefix, python = st.as_user("nobody")
    assert prefix[0] == shutil.which("setpriv") and "--clear-groups" in prefix
    reach = "import os, sys; os.stat(sys.argv[1]); print(os.getuid())"
    real = str(Path(python).resolve())
    command = [*prefix, str(python), "-I", "-c", reach, real]
    proc = subprocess.run(command, capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() != "0"
