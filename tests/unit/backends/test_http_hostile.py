"""The HTTP backend against a hostile server (``hostile_server.py``): it must answer within the
user's deadline, bounded in memory, with one-line errors; and credentials in the server URL must
neither break the request nor show up anywhere."""

from __future__ import annotations

import base64
import gc
import logging
import tracemalloc
import warnings

import pytest
from aiohttp import web
from hostile_server import gzip_bomb, hostile_server

from cctest.backends.http import MAX_RESPONSE_BYTES, HTTPBackend
from cctest.errors import BackendResponseError, BackendTimeout
from cctest.redact import redact_url

K = 10  # mutants: one call sends k + 1 prompts


async def test_the_deadline_runs_from_the_call_not_from_admission() -> None:
    """k + 1 prompts, two slots, a server that never answers: every prompt's deadline starts when
    ``complete`` is called, so the prompts still waiting for a slot when the first two time out
    have no time left and are never sent (before, each waited its turn and then got its own
    full timeout: the call took (k + 1) / 2 times --timeout)."""
    async with hostile_server() as srv:
        async with HTTPBackend(f"{srv.base}/never", timeout=0.5, max_concurrency=2) as b:
            out = await b.complete([f"x{i} = " for i in range(K + 1)])
    assert all(isinstance(o, BackendTimeout) for o in out)
    assert srv.hits["never"] == 2


async def test_a_server_that_drips_forever_times_out() -> None:
    async with hostile_server() as srv:
        async with HTTPBackend(f"{srv.base}/drip", timeout=0.5) as b:
            out = await b.complete(["x = ", "y = "])
    assert all(isinstance(o, BackendTimeout) for o in out) and srv.hits["drip"] == 2


@pytest.mark.parametrize("fault", ["huge", "huge-chunked", "bomb"])
async def test_a_huge_answer_or_a_gzip_bomb_is_refused_at_the_bound(fault: str) -> None:
    """50 MB of completion (announced, or streamed in chunks), or 1 MB of gzip that unpacks to
    1 GiB: a one-line error, and the client never holds much more than the bound."""
    gzip_bomb()  # built before measuring: the server's copy is not the client's memory
    async with hostile_server() as srv:
        async with HTTPBackend(f"{srv.base}/{fault}", timeout=30) as b:
            tracemalloc.start()
            try:
                (out,) = await b.complete(["x = "])
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    assert isinstance(out, BackendResponseError) and "larger than" in str(out), out
    assert peak < 4 * MAX_RESPONSE_BYTES


async def test_deeply_nested_json_is_a_one_line_error() -> None:
    async with hostile_server() as srv:
        async with HTTPBackend(f"{srv.base}/deep", timeout=30) as b:
            (out,) = await b.complete(["x = "])
    assert isinstance(out, BackendResponseError) and "nested too deeply" in str(out)
    assert "\n" not in str(out)


async def test_a_runaway_completion_is_cut_to_the_bound() -> None:
    async with hostile_server() as srv:
        async with HTTPBackend(f"{srv.base}/long", timeout=30) as b:
            (out,) = await b.complete(["x = "])
            bound = b.max_completion_chars
    assert isinstance(out, str) and out.startswith("1\n1\n")
    assert len(out) <= bound < 1_000_000


@pytest.mark.parametrize(
    "payload", [b"[]", b'"text"', b'{"choices": "x"}', b'{"choices": [null]}', b"1" * 5000]
)
async def test_wrong_shapes_are_one_line_errors(payload: bytes) -> None:
    async def odd(request: web.Request) -> web.Response:
        return web.Response(body=payload, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/completions", odd)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        async with HTTPBackend(f"http://127.0.0.1:{runner.addresses[0][1]}") as b:
            (out,) = await b.complete(["x = "])
    finally:
        await runner.cleanup()
    assert isinstance(out, BackendResponseError) and "\n" not in str(out)


# -- credentials in the URL ----------------------------------------------------------------------


async def _auth_server(seen: list[str | None]) -> web.AppRunner:
    async def record(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"choices": [{"text": " 1"}]})

    app = web.Application()
    app.router.add_post("/v1/completions", record)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def test_url_credentials_and_an_api_key_the_key_wins_and_no_session_leaks(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CCTEST_API_KEY", "sk-from-env")
    seen: list[str | None] = []
    runner = await _auth_server(seen)
    port = runner.addresses[0][1]
    caplog.set_level(logging.DEBUG)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            b = HTTPBackend(f"http://alice:hunter2@127.0.0.1:{port}", timeout=10)
            out = await b.complete(["x = ", "y = "])
            await b.aclose()
            del b
            gc.collect()
    finally:
        await runner.cleanup()
    assert out == [" 1", " 1"]
    assert seen == ["Bearer sk-from-env"] * 2
    assert "the user:password in the URL is not" in caplog.text and "hunter2" not in caplog.text
    assert not [w for w in caught if "Unclosed" in str(w.message)]


async def test_url_credentials_alone_are_sent_as_basic_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CCTEST_API_KEY", raising=False)
    seen: list[str | None] = []
    runner = await _auth_server(seen)
    try:
        async with HTTPBackend(f"http://alice:hunter2@127.0.0.1:{runner.addresses[0][1]}") as b:
            assert await b.complete(["x = "]) == [" 1"]
    finally:
        await runner.cleanup()
    assert seen == ["Basic " + base64.b64encode(b"alice:hunter2").decode()]


async def test_credentials_in_the_url_are_in_no_log_line_or_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with hostile_server() as srv:
        secret_url = (
            srv.base.replace("://", "://bob:pw-secret@") + "/never/v1/completions?api_key=sk-q-secret"
        )
        async with HTTPBackend(secret_url, timeout=0.3) as b:
            (out,) = await b.complete(["x = "])
            shown = b.describe()
    for text in (str(out), shown, caplog.text):
        assert "pw-secret" not in text and "sk-q-secret" not in text, text
    assert isinstance(out, BackendTimeout) and redact_url(secret_url) in str(out)
    assert shown.endswith("/never/v1/completions?api_key=REDACTED")
