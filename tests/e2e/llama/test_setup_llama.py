"""``scripts/setup-llama.sh`` once its version is built and installed: a second run (as
``make test`` makes on every run, and a fresh clone on the same machine) fetches, builds and
installs nothing, and so announces no step; the servers it leaves start (the other tests)."""

from __future__ import annotations

import subprocess

from llama_helpers import ROOT, llama_server_binary


def test_a_second_setup_does_nothing() -> None:
    llama_server_binary()  # built by a first setup
    done = subprocess.run(
        ["bash", "scripts/setup-llama.sh"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (done.stdout, done.stderr) == ("", "")
