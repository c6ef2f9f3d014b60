"""``cctest serve`` under slow, greedy and odd clients, over real loopback sockets: incomplete
requests are closed after the request timeout, connections are capped in total and per client
address (and another address is still answered), an accept storm past the open-file limit is
logged in a bounded number of lines and the server answers again once the clients go, and what
aiohttp's parser refuses or a tokenizer cannot encode is a 4xx in OpenAI's shape, never a
traceback."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import resource
import socket
import ssl
import subprocess
import sys
import threading
import time
from typing import Any

import aiohttp
import pytest
from raw_http import trickle, until_closed
from serve_helpers import running

from cctest.backends.hf import HFBackend
from cctest.serve import LOG_EVERY, Limits

ERROR_KEYS = {"message", "type", "param", "code"}
WAIT = 60.0  # the most a test waits for the server before failing; never a measure


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _answer(data: bytes) -> tuple[int, dict[str, Any]]:
    """The status and the JSON error of a raw HTTP answer, checked to be in OpenAI's shape."""
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"application/json" in head, data[:500]
    error = json.loads(body)["error"]
    assert set(error) == ERROR_KEYS, error
    return status, error


async def _health(url: str, local: str = "127.0.0.1") -> int:
    connector = aiohttp.TCPConnector(local_addr=(local, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"{url}/health") as r:
            return r.status


async def test_incomplete_headers_and_bodies_are_closed_after_the_request_timeout(
    model: HFBackend,
) -> None:
    async with running(model, limits=Limits(request_timeout=0.5)) as (url, _):
        port = _port(url)
        silent = await asyncio.open_connection("127.0.0.1", port)  # never sends a byte
        header = await asyncio.open_connection("127.0.0.1", port)
        header[1].write(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-")
        body = await asyncio.open_connection("127.0.0.1", port)
        body[1].write(
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"prompt": '
        )
        trickling = await asyncio.open_connection("127.0.0.1", port)
        for connection in (silent, header, body, trickling):
            await connection[1].drain()

        # a header sent a byte at a time, more slowly than the timeout allows in all (each byte
        # well within it): the deadline is for the whole request, not between bytes
        slow = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
        silent_seen, header_seen, body_seen, trickle_seen = await asyncio.gather(
            until_closed(silent[0]), until_closed(header[0]), until_closed(body[0]), trickle(*trickling, slow)
        )
        assert silent_seen == header_seen == trickle_seen == b""  # closed without an answer
        status, error = _answer(body_seen)  # the headers had come: a 408 says why
        assert status == 408 and error["code"] == "request_timeout", error
        for _, writer in (silent, header, body, trickling):
            writer.close()
        assert await _health(url) == 200


async def test_connections_past_the_caps_are_refused_and_another_address_is_answered(
    model: HFBackend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with running(model, limits=Limits(request_timeout=300, max_per_address=3)) as (url, _):
        port = _port(url)
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        refused = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
        for reader, _ in refused:
            status, error = _answer(await until_closed(reader))
            assert status == 429 and error["code"] == "too_many_connections", error
            assert "per client address" in error["message"]
        assert await _health(url, local="127.0.0.2") == 200  # another client is not starved
        for _, writer in held:
            writer.close()
        for _ in range(200):  # a bounded wait for the server to see them go
            if await _health(url) == 200:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the address was never let in again")
    lines = [r for r in caplog.records if "refused a connection" in r.getMessage()]
    assert 1 <= len(lines) < 20  # once per interval, with the count, not once per refusal
    assert "Traceback" not in caplog.text

    async with running(model, limits=Limits(request_timeout=300, max_connections=2)) as (url, _):
        port = _port(url)
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        reader, _ = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
        status, error = _answer(await until_closed(reader))
        assert status == 503 and error["type"] == "server_error", error
        for _, writer in held:
            writer.close()


def _stderr_lines(proc: subprocess.Popen[str], lines: list[str]) -> threading.Thread:
    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def storm(port: int, clients: list[socket.socket], count: int) -> None:
    """``count`` connections that send nothing (past the backlog they wait in SYN)."""
    for _ in range(count):
        client = socket.socket()
        client.setblocking(False)
        client.connect_ex(("127.0.0.1", port))
        clients.append(client)


def test_an_accept_storm_past_the_open_file_limit_logs_a_few_lines_and_the_server_recovers() -> None:
    """The server in a process that may open 128 files, with caps above that (so the accepts
    fail for real, EMFILE), and twice as many connections as it may open files; then again,
    and the server stopped (SIGTERM) while they are there."""
    limit = 128

    def lower_the_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    command = [sys.executable, "-m", "cctest", "serve", "--port", "0", "--threads", "1",
               "--request-timeout", "300", "--max-connections", "100000",
               "--max-connections-per-address", "100000"]  # fmt: skip
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lower_the_limit,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    clients: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, (line, proc.stderr.read() if proc.stderr else "")
        port = int(match.group(1))
        lines: list[str] = []
        reader = _stderr_lines(proc, lines)
        storm(port, clients, 2 * limit)
        first = time.monotonic()
        deadline = time.monotonic() + WAIT
        while not any("accept" in line for line in lines):  # the first failed accept
            if time.monotonic() > deadline:
                raise AssertionError(f"no accept failed; stderr: {''.join(lines)[-2000:]}")
            time.sleep(0.1)
        time.sleep(3)  # asyncio retries the accept each second: each retry fails again
        assert len(os.listdir(f"/proc/{proc.pid}/fd")) == limit  # really at the limit
        for client in clients:
            client.close()
        clients.clear()
        deadline = time.monotonic() + WAIT
        while True:  # the server accepts again
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as health:
                    health.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if health.recv(65536).startswith(b"HTTP/1.1 200"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"/health never answered again; stderr: {''.join(lines)[-2000:]}")
            time.sleep(0.1)
        storm(port, clients, 2 * limit)  # again, and the server stopped in the middle of it
        deadline = time.monotonic() + WAIT
        while len(os.listdir(f"/proc/{proc.pid}/fd")) < limit:
            if time.monotonic() > deadline:
                raise AssertionError("the second storm never reached the limit")
            time.sleep(0.1)
        time.sleep(1.5)  # an accept retry is pending: it meets the stopped server
        elapsed = time.monotonic() - first
        proc.terminate()
        proc.wait(WAIT)
        reader.join(WAIT)
    finally:
        for client in clients:
            client.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = "".join(lines)
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr[-3000:]
    failures = [line for line in lines if "cannot accept" in line]
    # one line per 10 s however many accepts failed (asyncio retries each second)
    assert 1 <= len(failures) <= 2 + elapsed / LOG_EVERY, stderr[-3000:]
    assert "Too many open files" in failures[0]


async def test_a_content_length_over_the_limit_is_a_413_before_the_body(model: HFBackend) -> None:
    async with running(model, limits=Limits(request_timeout=300)) as (url, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(url))
        writer.write(
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 999999999999\r\n\r\n{}"
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
        status, error = _answer(head + await asyncio.wait_for(reader.readexactly(length), WAIT))
        assert status == 413 and error["code"] == "request_too_large", error
        assert b"Connection: close" in head
        writer.close()


def _client_hello() -> bytes:
    """The first bytes a TLS client sends (a real ClientHello, made by Python's ssl module)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


AUTH = b"GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "  # a token never echoed or logged


@pytest.mark.parametrize(
    ("request_bytes", "detail"),
    [
        (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -2\r\n\r\n{}", "Content-Length"),
        (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n", "8190 bytes"),
        (b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Big: a\r\n" * 20_000 + b"\r\n", ""),
        (_client_hello(), "HTTPS"),
        (b"\x00\xff\x01garbage\r\n\r\n", ""),
        (AUTH + b"sk-secret-77\x01\r\n\r\n", "header"),
        (AUTH + b"sk-secret-77" * 1000 + b"\r\n\r\n", ""),
    ],
    ids=[
        "negative-content-length",
        "200KB-header",
        "20000-headers",
        "tls-client-hello",
        "binary",
        "authorization-control-char",
        "authorization-too-long",
    ],
)
async def test_what_the_http_parser_refuses_is_a_json_400_without_a_traceback(
    model: HFBackend, caplog: pytest.LogCaptureFixture, request_bytes: bytes, detail: str
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running(model) as (url, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(url))
        writer.write(request_bytes)
        await writer.drain()
        status, error = _answer(await until_closed(reader))
        writer.close()
        assert await _health(url) == 200
    assert status == 400 and error["type"] == "invalid_request_error", error
    assert error["message"].startswith("the request is not valid HTTP") and detail in error["message"]
    assert "sk-secret-77" not in error["message"] and "sk-secret-77" not in caplog.text  # never echoed
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.exc_info], caplog.text


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/completions", b'{"prompt": "def f():\\ud800", "max_tokens": 2}', "prompt"),
        ("/v1/completions", b'{"prompt": ["x = ", "\\udfff"], "max_tokens": 2}', "prompt"),
        ("/v1/completions", b'{"prompt": "x = ", "stop": ["\\ud800"], "max_tokens": 2}', "stop"),
        (
            "/v1/chat/completions",
            b'{"messages": [{"role": "user", "content": "\\ud800"}], "max_tokens": 2}',
            "messages",
        ),
    ],
    ids=["prompt", "prompt-list", "stop", "chat-content"],
)
async def test_a_lone_surrogate_is_a_400_that_says_so(
    model: HFBackend, caplog: pytest.LogCaptureFixture, path: str, body: bytes, param: str
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running(model) as (url, _), aiohttp.ClientSession() as session:
        headers = {"Content-Type": "application/json"}
        async with session.post(f"{url}{path}", data=body, headers=headers) as r:
            assert r.status == 400
            error = (await r.json())["error"]
        pair = {"prompt": "x = '\ud83d\ude00'", "max_tokens": 2}  # a whole pair is fine
        async with session.post(f"{url}/v1/completions", data=json.dumps(pair), headers=headers) as r:
            assert r.status == 200
    assert set(error) == ERROR_KEYS and error["param"] == param, error
    assert "lone surrogate" in error["message"]
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    ("flag", "value", "sentence"),
    [
        ("--request-timeout", "0", "--request-timeout must be"),
        ("--request-timeout", "inf", "--request-timeout must be"),
        ("--request-timeout", "nan", "--request-timeout must be"),
        ("--max-connections", "0", "at least 1"),
        ("--max-connections-per-address", "-3", "at least 1"),
    ],
)
def test_the_command_refuses_a_bound_out_of_range_in_one_sentence(
    flag: str, value: str, sentence: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cctest", "serve", "--port", "0", flag, value],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and sentence in lines[0], proc.stderr
