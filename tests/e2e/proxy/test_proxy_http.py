"""``cctest proxy`` (a subprocess, as a user starts it) under malformed HTTP, oversized bodies and
slow or greedy clients, over raw loopback sockets: each is refused in the upstream API's error
shape (JSON), nothing the client sent (a malformed ``Authorization`` header's token) is echoed
back or printed, stderr holds no traceback, and connections are bounded as ``cctest serve``'s
are (``cctest.admission``)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from proxy_helpers import Seen, openai_app, serving
from raw_http import trickle, until_closed

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
WAIT = 60.0  # the most a test waits for the proxy before failing; never a measure
TOKEN = "sk-hostile-SECRET-4242"


@asynccontextmanager
async def proxy_process(upstream: str, *args: str) -> AsyncIterator[tuple[int, list[bytes]]]:
    """``cctest proxy`` in front of ``upstream``; yields its port and, once it has stopped
    (SIGTERM), its stderr in the list."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cctest", "proxy", "--upstream", upstream, "--port", "0", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT, env=ENV,
    )  # fmt: skip
    stderr: list[bytes] = []
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), WAIT)).decode()
        found = re.match(r"cctest proxy: http://127\.0\.0\.1:(\d+) ", line)
        assert found, line + (await proc.stderr.read()).decode() if proc.stderr else line
        yield int(found.group(1)), stderr
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), WAIT)
        stderr.append(err)
    assert proc.returncode == 0, err.decode()[-3000:]


async def _exchange(port: int, data: bytes, local: str = "127.0.0.1") -> bytes:
    """Send ``data`` and read everything the proxy sends until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(local, 0))
    try:
        writer.write(data)
        await writer.drain()
    except ConnectionError:
        pass  # the proxy answered and closed before it took everything
    got = b""
    try:
        while chunk := await asyncio.wait_for(reader.read(65536), WAIT):
            got += chunk
    except ConnectionError:
        pass
    writer.close()
    return got


def _answer(data: bytes, provider: str) -> tuple[int, Any]:
    """The status and JSON body of a raw answer, checked to be in ``provider``'s error shape."""
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1."), data[:300]
    status = int(head.split(b" ", 2)[1])
    assert b"application/json" in head, data[:500]
    error = json.loads(body)
    if provider == "openai":
        assert set(error["error"]) == {"message", "type", "param", "code"}, error
    else:
        assert set(error) == {"error"} and isinstance(error["error"], str), error
    return status, error


def _client_hello() -> bytes:
    """The first bytes a TLS client sends (a real ClientHello, made by Python's ssl module)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


POST = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
MALFORMED = {
    "duplicate-content-length": POST + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    "content-length-and-chunked": POST + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "200KB-header": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n",
    "20000-headers": b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + b"X-Many: a\r\n" * 20_000 + b"\r\n",
    "tls-client-hello": _client_hello(),
    "authorization-control-char": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + TOKEN.encode()
    + b"\x01\r\n\r\n",
    "authorization-bare-lf": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + TOKEN.encode()
    + b"\nX: y\r\n\r\n",
    "authorization-space-before-colon": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer "
    + TOKEN.encode()
    + b"\r\n\r\n",
    "authorization-too-long": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + TOKEN.encode() * 1000
    + b"\r\n\r\n",
}


@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_malformed_http_is_refused_in_the_apis_shape_and_never_echoes_a_token(provider: str) -> None:
    seen = Seen()
    async with serving(openai_app(seen, odd=set())) as up:
        async with proxy_process(up, "--provider", provider) as (port, stderr):
            answers = {name: await _exchange(port, data) for name, data in MALFORMED.items()}
            # the proxy still answers
            ok = await _exchange(port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert ok.startswith(b"HTTP/1.1 200"), ok[:300]
    for name, answer in answers.items():
        status, _ = _answer(answer, provider)
        assert status == 400, (name, answer[:300])
        assert TOKEN.encode() not in answer, name
    err = stderr[0].decode()
    assert "Traceback" not in err and TOKEN not in err, err[-3000:]
    assert [p for _, p, _, _ in seen.requests] == ["/v1/models"]  # nothing malformed went upstream


@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_a_body_over_the_limit_is_a_413_in_the_apis_shape(provider: str) -> None:
    path = b"/v1/completions" if provider == "openai" else b"/api/generate"
    head = b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    declared = head + b"Content-Length: 104857600\r\n\r\n" + b"{" * 65536  # 100 MiB said, not sent
    chunk = b"[" * (1024 * 1024)
    chunked = (
        head + b"Transfer-Encoding: chunked\r\n\r\n" + (b"100000\r\n" + chunk + b"\r\n") * 9 + b"0\r\n\r\n"
    )
    seen = Seen()
    async with serving(openai_app(seen, odd=set())) as up:
        async with proxy_process(up, "--provider", provider) as (port, stderr):
            answers = [await _exchange(port, declared), await _exchange(port, chunked)]
    for answer in answers:
        status, error = _answer(answer, provider)
        assert status == 413, answer[:300]
        assert "larger than the proxy's limit" in json.dumps(error)
    assert "Traceback" not in stderr[0].decode()
    assert not seen.requests


async def test_incomplete_headers_and_bodies_are_closed_after_the_request_timeout() -> None:
    async with serving(openai_app(Seen(), odd=set())) as up:
        async with proxy_process(up, "--request-timeout", "0.5") as (port, stderr):
            silent = await asyncio.open_connection("127.0.0.1", port)  # never sends a byte
            header = await asyncio.open_connection("127.0.0.1", port)
            header[1].write(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-")
            body = await asyncio.open_connection("127.0.0.1", port)
            body[1].write(POST + b'Content-Length: 100\r\n\r\n{"prompt": ')
            trickling = await asyncio.open_connection("127.0.0.1", port)
            for connection in (silent, header, body, trickling):
                await connection[1].drain()

            slow = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
            silent_seen, header_seen, body_seen, trickle_seen = await asyncio.gather(
                until_closed(silent[0]),
                until_closed(header[0]),
                until_closed(body[0]),
                trickle(*trickling, slow),  # each byte within the timeout, all of them not
            )
            for _, writer in (silent, header, body, trickling):
                writer.close()
    assert silent_seen == header_seen == trickle_seen == b""  # closed without an answer
    status, error = _answer(body_seen, "openai")  # the headers had come: a 408 says why
    assert status == 408 and "did not arrive" in error["error"]["message"], error
    assert "Traceback" not in stderr[0].decode()


async def test_connections_past_the_caps_are_refused_and_another_address_is_answered() -> None:
    async with serving(openai_app(Seen(), odd=set())) as up:
        args = ("--request-timeout", "300", "--max-connections-per-address", "3", "--provider", "ollama")
        async with proxy_process(up, *args) as (port, stderr):
            held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
            refused = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
            for reader, _ in refused:
                status, error = _answer(await until_closed(reader), "ollama")
                assert status == 429 and "per client address" in error["error"], error
            other = await _exchange(
                port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", local="127.0.0.2"
            )
            assert other.startswith(b"HTTP/1.1 200"), other[:300]  # another client is not starved
            for _, writer in held:
                writer.close()
        async with proxy_process(up, "--request-timeout", "300", "--max-connections", "2") as (port, _):
            held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
            reader, _ = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
            status, error = _answer(await until_closed(reader), "openai")
            assert status == 503 and error["error"]["type"] == "server_error", error
            for _, writer in held:
                writer.close()
    assert "Traceback" not in stderr[0].decode()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--request-timeout", "0"),
        ("--max-connections", "0"),
        ("--max-prompt-chars", "0"),
        ("--max-repairs", "-1"),
    ],
)
async def test_a_bound_out_of_range_is_one_sentence_and_exit_2(flag: str, value: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cctest", "proxy", "--upstream", "http://127.0.0.1:9", "--port", "0",
        flag, value, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT, env=ENV,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == 2 and not out
    (line,) = err.decode().splitlines()
    assert line.startswith("cctest: ") and flag in line


async def test_a_max_connections_past_the_open_file_limit_is_warned_of() -> None:
    """As ``cctest serve`` does: a ``--max-connections`` that leaves the proxy fewer open files
    than its reserve for the upstream's connections and its log is said at start (past it,
    connections would wait unanswered); the default is not."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = 1024 if soft == resource.RLIM_INFINITY else soft
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, hard))  # what the proxy inherits
    try:
        async with serving(openai_app(Seen(), set())) as up:
            async with proxy_process(up) as (_, default):
                pass
            async with proxy_process(up, "--max-connections", str(files)) as (_, wide):
                pass
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    said = wide[0].decode()
    assert "--max-connections leaves fewer than" in said and f"of the {files} files" in said, said
    assert "--max-connections" not in default[0].decode()
