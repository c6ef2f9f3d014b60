"""Real llama.cpp servers for the end-to-end tests: ``llama-server`` as built by
``scripts/setup-llama.sh`` and llama-cpp-python's ``python -m llama_cpp.server``, each a process of
its own on a free loopback port, its log kept in a file the tests can read."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cctest.models.gguf import setup_dir

ROOT = Path(__file__).resolve().parents[3]
K = 10  # cctest's default number of mutants: a repair asks k + 1 rows
NOT_BUILT = (
    "llama.cpp's server is not built for these tests: run 'make setup-e2e' (scripts/setup-llama.sh "
    "builds it once per version under ~/.cache/cctest, or $CCTEST_LLAMA_CACHE)."
)
NO_PYTHON_SERVER = (
    "llama-cpp-python's server is not installed in this environment: run 'make setup-e2e' "
    "(scripts/setup-llama.sh installs it)."
)


def llama_server_binary() -> Path:
    """The setup's ``llama-server``; the calling test fails (not skips) with one sentence saying
    how to build it when it is not there."""
    base = setup_dir()
    binary = base / "build" / "bin" / "llama-server" if base is not None else None
    if binary is None or not os.access(binary, os.X_OK):
        pytest.fail(NOT_BUILT, pytrace=False)
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A server process: its base URL and its log."""

    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    args: tuple[str, ...]

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=60) as r:
            return json.loads(r.read())

    def post(self, path: str, body: dict[str, Any], timeout: float = 120) -> Any:
        request = urllib.request.Request(
            f"{self.url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return json.loads(r.read())


def _wait_ready(server: Server, health: str, limit_s: float = 300) -> None:
    """Until ``health`` answers 200; a server that exits first fails the test with its log's end."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            tail = "\n".join(server.log().splitlines()[-20:])
            pytest.fail(
                f"{' '.join(server.args)} exited with {server.proc.returncode}:\n{tail}", pytrace=False
            )
        try:
            with urllib.request.urlopen(f"{server.url}{health}", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    pytest.fail(f"{' '.join(server.args)} was not ready after {limit_s:.0f} s", pytrace=False)


@contextmanager
def _running(
    args: Sequence[str], port: int, log_path: Path, health: str, env: dict[str, str]
) -> Iterator[Server]:
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            list(args), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=log_path.parent
        )
    server = Server(f"http://127.0.0.1:{port}", proc, log_path, tuple(str(a) for a in args))
    try:
        _wait_ready(server, health)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def llama_server(model: Path, log_dir: Path, *options: str) -> Iterator[Server]:
    """``llama-server -m MODEL OPTIONS`` on a free loopback port (its log: ``log_dir``/llama-server.log)."""
    port = free_port()
    args = [
        str(llama_server_binary()),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *options,
    ]
    with _running(args, port, log_dir / "llama-server.log", "/health", dict(os.environ)) as server:
        yield server


@contextmanager
def llama_cpp_python_server(model: Path, log_dir: Path, *options: str) -> Iterator[Server]:
    """``python -m llama_cpp.server --model MODEL OPTIONS`` on a free loopback port."""
    try:
        import llama_cpp.server  # noqa: F401
    except (ImportError, OSError, RuntimeError):
        pytest.fail(NO_PYTHON_SERVER, pytrace=False)
    port = free_port()
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    args += ["--host", "127.0.0.1", "--port", str(port), *options]
    with _running(args, port, log_dir / "llama-cpp-python.log", "/v1/models", dict(os.environ)) as server:
        yield server


@contextmanager
def cctest_proxy(upstream: Server, log_dir: Path, *options: str) -> Iterator[Server]:
    """``cctest proxy --upstream URL --port 0 OPTIONS`` as a user starts it; its stderr goes to
    ``log_dir``/proxy.log. Yields it as a Server (its URL from the line it prints)."""
    log_path = log_dir / "proxy.log"
    args = [sys.executable, "-m", "cctest", "proxy", "--upstream", upstream.url, "--port", "0"]
    args += ["--defect-log", str(log_dir / "defects.sqlite3"), "--timeout", "600", *options]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=log, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        line = proc.stdout.readline().decode() if ready else ""
        found = re.match(r"cctest proxy: (http://\S+) -> ", line)
        if not found:
            pytest.fail(
                f"cctest proxy did not start: {line!r} {log_path.read_text(errors='replace')}", pytrace=False
            )
        yield Server(found.group(1), proc, log_path, tuple(args))
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cctest(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``cctest ARGS`` as a user runs it, from the repository's root."""
    return subprocess.run(
        [sys.executable, "-m", "cctest", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=timeout,
    )
