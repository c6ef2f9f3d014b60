"""Starting the server: the console script, ``--tcp``, ``--log-file``, and a clean stdout."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_helpers import ROOT, SOURCE, URI, server_env
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

pytestmark = pytest.mark.timeout(120)


def _frame(payload: dict[str, object]) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_stdout_carries_only_the_protocol(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    script = shutil.which("cctest-lsp", path=str(Path(sys.executable).parent))
    assert script, "the cctest-lsp console script is not installed in this environment"
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "capabilities": {},
                "initializationOptions": {"backend": "rules", "defectLog": str(tmp_path / "d.sqlite3")},
            },
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    proc = subprocess.run(
        [script, "--log-file", str(log), "--log-level", "debug"],
        input=b"".join(_frame(m) for m in messages),
        capture_output=True,
        timeout=60,
        env=server_env(tmp_path),
    )
    out = proc.stdout
    # every byte of stdout is a framed JSON-RPC message
    answers = []
    while out:
        header, _, rest = out.partition(b"\r\n\r\n")
        assert header.startswith(b"Content-Length: "), out[:80]
        n = int(header.split(b"\r\n")[0].split(b":")[1])
        answers.append(json.loads(rest[:n]))
        out = rest[n:]
    assert [a.get("id") for a in answers if "id" in a] == [1, 2]
    assert answers[0]["result"]["serverInfo"]["name"] == "cctest-lsp"
    assert proc.stderr == b""  # the logs went to the file...
    assert "Sending data" in log.read_text()  # ...at debug level, pygls's message log included


def test_bad_arguments_exit_2() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "lsp_server", "--tcp", "nowhere"], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 2 and "HOST:PORT" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "lsp_server", "--log-file", "/nonexistent/dir/x.log"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 2 and "cannot write the log file" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "lsp_server", "--version"], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 0 and r.stdout.startswith("cctest-lsp ")


async def test_tcp(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "--tcp", f"127.0.0.1:{port}"],
        env=server_env(tmp_path),
        stderr=subprocess.DEVNULL,
    )
    client = LanguageClient("tcp-test", "1")
    try:
        for _ in range(200):  # until it listens
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise AssertionError("the server never listened")
        await client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                initialization_options={"backend": "rules", "defectLog": str(tmp_path / "d.sqlite3")},
            )
        )
        client.initialized(lsp.InitializedParams())
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=URI, language_id="python", version=1, text=SOURCE)
            )
        )
        result = await asyncio.wait_for(
            client.text_document_inline_completion_async(
                lsp.InlineCompletionParams(
                    text_document=lsp.TextDocumentIdentifier(uri=URI),
                    position=lsp.Position(line=1, character=4),
                    context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Invoked),
                )
            ),
            30,
        )
        assert result.items[0].insert_text == "return a + b"
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize(
    "argv", [["--tcp", "nowhere"], ["--tcp", "127.0.0.1:99999"], ["--log-level", "loud"], ["--bogus"]]
)
def test_bad_arguments_are_one_sentence(argv: list[str]) -> None:
    r = subprocess.run([sys.executable, "-m", "lsp_server", *argv], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    [line] = r.stderr.splitlines()  # not argparse's usage lines
    assert line.startswith("cctest-lsp: ") and line.endswith(".")


async def test_tcp_port_0_listens_on_a_free_port_and_says_which(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "--tcp", "127.0.0.1:0"],
        env=server_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    client = LanguageClient("tcp-test", "1")
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
        prefix = "cctest-lsp: listening on 127.0.0.1:"
        assert line.startswith(prefix), line
        port = int(line[len(prefix) :])
        assert port > 0
        await client.start_tcp("127.0.0.1", port)
        result = await client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                initialization_options={"backend": "rules", "defectLog": str(tmp_path / "d.sqlite3")},
            )
        )
        assert result.server_info is not None and result.server_info.name == "cctest-lsp"
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
        proc.kill()
        proc.wait()
