"""The pygls internals that ``lsp_server`` relies on, one test each: it fails when pygls changes one.

pygls is pinned below 3 (pyproject.toml), but a 2.x release may still rename or reshape a private
method or attribute. Each test below names the internal in its docstring and says what breaks in
the server if it changes; each checks the shape the server expects (``inspect.signature``, the
attribute on a real instance) and then that the override really acts in a real run: a
``CCTestServer`` served by its own ``start_io`` over a pair of OS pipes (or ``start_tcp`` over a
socket), driven by a raw client that writes LSP frames and reads the answers.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

import pytest
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol, default_converter
from pygls.server import JsonRPCServer

from lsp_server.framing import FrameParser
from lsp_server.protocol import CCTestProtocol
from lsp_server.server import CCTestServer

LIMIT_S = 30.0  # a hang guard, not a timing threshold
INITIALIZE = {"id": "init", "method": "initialize", "params": {"capabilities": {}}}


def frame(message: Any) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message} if isinstance(message, dict) else message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def parameters(function: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]


def make_server() -> CCTestServer:
    """A server without cctest's handlers (no backend), and three of the test's own."""
    server = CCTestServer()

    @server.feature("test/boom")
    def boom(params: Any) -> None:
        raise ValueError("boom")

    @server.feature("test/noteBoom")
    def note_boom(params: Any) -> None:
        raise ValueError("note boom")

    @server.feature("test/ping")
    async def ping(params: Any) -> str:
        await asyncio.sleep(0)
        return "pong"

    @server.feature("test/note")
    async def note(params: Any) -> None:
        await asyncio.sleep(0)

    return server


class PipeSession:
    """``server.start_io`` in a thread over real pipes; frames out, parsed messages in."""

    def __init__(self, server: CCTestServer) -> None:
        self.server = server
        to_server, self._to_server = os.pipe()
        self._from_server, from_server = os.pipe()
        self._server_in: BinaryIO = os.fdopen(to_server, "rb", buffering=0)
        self._server_out: BinaryIO = os.fdopen(from_server, "wb")
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=server.start_io, args=(self._server_in, self._server_out))
        self.thread.start()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        parser = FrameParser()
        while data := os.read(self._from_server, 65536):
            for body in parser.feed(data):
                assert isinstance(body, bytes), body
                self.messages.put(json.loads(body))

    def send(self, *messages: Any) -> None:
        os.write(self._to_server, b"".join(frame(m) for m in messages))

    def wait_for(self, found: Any) -> dict[str, Any]:
        """The first message (seen or to come) for which ``found(message)`` is true."""
        for message in self.seen:
            if found(message):
                return message
        while True:
            message = self.messages.get(timeout=LIMIT_S)
            self.seen.append(message)
            if found(message):
                return message

    def answer(self, msg_id: object) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m)

    def close(self) -> None:
        os.close(self._to_server)  # end of stream: the read loop ends, start_io returns
        self.thread.join(LIMIT_S)
        assert not self.thread.is_alive(), "start_io did not return at the end of its input"
        self._server_in.close()
        self._server_out.close()  # the server's ends: the reader sees the end of the stream
        self._reader.join(LIMIT_S)
        os.close(self._from_server)


@pytest.fixture
def session() -> Iterator[PipeSession]:
    running = PipeSession(make_server())
    try:
        yield running
    finally:
        running.close()


def test_send_response(session: PipeSession) -> None:
    """``JsonRPCProtocol._send_response(msg_id, result=None, error=None)``: overridden and called.

    Every answer pygls sends goes through it, so ``CCTestProtocol`` overrides it to strip the
    traceback pygls puts in an internal error's ``data``, and calls it to answer the requests
    pygls never answers (bad params, before ``initialize``). If pygls renames it or sends answers
    another way, clients get tracebacks again (or this override raises on every answer).
    """
    expected = [("self", inspect.Parameter.empty), ("msg_id", inspect.Parameter.empty)]
    assert parameters(JsonRPCProtocol._send_response) == [*expected, ("result", None), ("error", None)]
    assert LanguageServerProtocol._send_response is JsonRPCProtocol._send_response

    session.send(INITIALIZE, {"id": 2, "method": "test/boom", "params": {}})
    error = session.answer(2)["error"]
    assert error == {"code": -32603, "message": "ValueError: boom"}  # pygls's answer, no traceback


def test_execute_handler_and_request_futures(session: PipeSession) -> None:
    """``JsonRPCProtocol._execute_handler(msg_id, handler, callback, args, kwargs)`` and the
    ``_request_futures`` dict it fills, keyed by ``msg_id``.

    pygls keeps the future of every notification it runs in ``_request_futures`` for good;
    ``CCTestProtocol._execute_handler`` calls pygls's, then removes that entry when the future is
    done. If pygls renames either, or stores the future under another key, memory grows with
    every keystroke again (or every notification raises ``AttributeError``).
    """
    expected = ["self", "msg_id", "handler", "callback", "args", "kwargs"]
    assert [name for name, _ in parameters(JsonRPCProtocol._execute_handler)] == expected
    assert parameters(JsonRPCProtocol._execute_handler)[-2:] == [("args", None), ("kwargs", None)]
    assert isinstance(session.server.protocol._request_futures, dict)

    uri = "file:///work/example.py"
    opened = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
    change = {
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "text": "#",
    }
    session.send(INITIALIZE, {"method": "initialized", "params": {}})
    session.send({"method": "textDocument/didOpen", "params": {"textDocument": opened}})
    for version in range(2, 102):
        doc = {"uri": uri, "version": version}
        session.send(
            {"method": "textDocument/didChange", "params": {"textDocument": doc, "contentChanges": [change]}}
        )
        session.send({"method": "test/note", "params": {}})
    session.send({"id": "last", "method": "test/ping", "params": {}})
    assert session.answer("last")["result"] == "pong"
    assert session.server.workspace.get_text_document(uri).source.startswith("#" * 100)
    futures = session.server.protocol._request_futures
    deadline = time.monotonic() + LIMIT_S
    while futures and time.monotonic() < deadline:  # the last notes' tasks may still be finishing
        time.sleep(0.01)
    assert len(futures) == 0  # pygls alone keeps one per notification: 200 here


def test_structure_message_raises_for_bad_params(session: PipeSession) -> None:
    """``JsonRPCProtocol.structure_message(data)`` raises a ``JsonRpcException`` whose
    ``__cause__`` is the cattrs error, for a request whose params do not fit its method.

    ``CCTestProtocol.structure_message`` catches that to answer ``InvalidParams`` (pygls logs it
    and never answers, and the client waits for good). If pygls stops raising there, or raises
    something else, the request goes unanswered again.
    """
    assert [name for name, _ in parameters(JsonRPCProtocol.structure_message)] == ["self", "data"]
    assert CCTestProtocol.structure_message is not JsonRPCProtocol.structure_message

    bad = {"textDocument": 5, "position": {"line": 0, "character": 0}}
    session.send(INITIALIZE, {"id": 2, "method": "textDocument/completion", "params": bad})
    error = session.answer(2)["error"]
    assert error["code"] == -32602 and error["message"].startswith(
        "Invalid params for textDocument/completion"
    )
    assert "data" not in error


def test_handle_message_sees_typed_messages(session: PipeSession) -> None:
    """``JsonRPCProtocol.handle_message(message)`` gets the structured message: an object with
    ``jsonrpc``, ``method`` and (for a request) ``id`` attributes; JSON without ``jsonrpc``
    reaches it as the plain value.

    ``CCTestProtocol.handle_message`` reads those to answer -32002 to a request before
    ``initialize`` and to drop JSON that is not a JSON-RPC message. If pygls hands it something
    else, early requests get pygls's -32603 with a traceback, or junk raises in the read loop.
    """
    assert [name for name, _ in parameters(JsonRPCProtocol.handle_message)] == ["self", "message"]

    session.send({"id": "early", "method": "shutdown"}, [], 5, {"just": "json"}, INITIALIZE)
    error = session.answer("early")["error"]
    assert error == {"code": -32002, "message": "shutdown before initialize."}
    assert session.answer("init")["result"]["capabilities"]
    session.send({"id": "after", "method": "shutdown"})
    assert session.answer("after")["result"] is None


def test_report_server_error_gets_handler_errors(session: PipeSession) -> None:
    """``JsonRPCServer.report_server_error(error, source)``: public, overridden by ``CCTestServer``
    and called by ``lsp_server.transport`` for a message the read loop cannot handle (in place of
    pygls's private ``_report_server_error``, which only adds a guard against raising).

    pygls routes a failing notification handler to it with the source
    ``FeatureNotificationError``, and the read loop a notification whose params do not fit its
    method; ``CCTestServer`` tells the client in a ``window/logMessage``. If the signature
    changes, those errors are lost (or raise into the read loop).
    """
    assert [name for name, _ in parameters(JsonRPCServer.report_server_error)] == ["self", "error", "source"]

    def logged(text: str) -> Any:
        return lambda m: m.get("method") == "window/logMessage" and text in m["params"]["message"]

    session.send(INITIALIZE, {"method": "test/noteBoom", "params": {}})
    assert session.wait_for(logged("note boom"))  # from pygls, through _report_server_error
    session.send({"method": "textDocument/didOpen", "params": {"textDocument": 5}})
    assert session.wait_for(logged("handled: Invalid Params"))  # from the read loop (transport)
    session.send({"id": "still", "method": "shutdown"})
    assert session.answer("still")["result"] is None


def test_stop_event() -> None:
    """``JsonRPCServer._stop_event``: ``lsp_server.transport`` puts the read loop's
    ``threading.Event`` there, as pygls's own ``start_io`` does, because pygls's public
    ``shutdown()`` stops a server by setting it.

    If pygls renames it, ``shutdown()`` no longer stops ``start_io``: the loop reads on.
    """
    fresh = JsonRPCServer(JsonRPCProtocol, default_converter)
    assert fresh._stop_event is None
    fresh._stop_event = threading.Event()
    fresh.shutdown()
    assert fresh._stop_event.is_set()

    running = PipeSession(make_server())
    running.send(INITIALIZE)
    assert running.answer("init")["result"]["capabilities"]
    running.server.shutdown()  # from another thread, as a host program would
    running.send({"id": "woken", "method": "shutdown"})  # the loop is waiting in read(): wake it
    running.thread.join(LIMIT_S)
    assert not running.thread.is_alive(), "shutdown() did not stop start_io while its input is open"
    running.close()


def test_tcp_listener_in_server_attribute() -> None:
    """``JsonRPCServer._server``: ``lsp_server.transport`` puts the TCP listener there, as pygls's
    own ``start_tcp`` does, because pygls's public ``shutdown()`` closes it.

    When the client leaves, ``serve_tcp`` calls ``shutdown()``; if pygls renames ``_server``, the
    listener stays open and ``start_tcp`` never returns.
    """
    fresh = JsonRPCServer(JsonRPCProtocol, default_converter)
    assert fresh._server is None

    server = make_server()
    where: queue.Queue[str] = queue.Queue()
    thread = threading.Thread(target=server.start_tcp, args=("127.0.0.1", 0, where.put))
    thread.start()
    host, port = where.get(timeout=LIMIT_S).rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=LIMIT_S) as client:
        client.sendall(frame(INITIALIZE))
        parser = FrameParser()
        answers: list[dict[str, Any]] = []
        while not answers:
            answers = [json.loads(b) for b in parser.feed(client.recv(65536)) if isinstance(b, bytes)]
        assert answers[0]["id"] == "init" and answers[0]["result"]["capabilities"]
    thread.join(LIMIT_S)
    assert not thread.is_alive(), "shutdown() did not close the TCP listener"
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=LIMIT_S).close()
