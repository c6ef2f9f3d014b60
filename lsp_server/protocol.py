"""pygls's LSP protocol with the answers a hostile or early client is owed, and without a leak.

What ``CCTestProtocol`` changes in ``LanguageServerProtocol`` (pygls 2.1):

- a request whose params cannot be read gets an InvalidParams answer (pygls logs it and never
  answers, which leaves the client waiting);
- a request before ``initialize`` gets -32002 ServerNotInitialized (pygls answers -32603 with a
  traceback), and a notification before it is dropped, as the specification says (``exit`` aside);
- no answer carries a traceback: pygls puts one in the ``data`` of every internal error; the
  server's log has it, the client gets the one-line message;
- a message that is JSON but not a JSON-RPC object (``[]``, ``5``, ``{}``) is logged and dropped;
- the future of each notification pygls runs stays in ``_request_futures`` for good (only a
  request's answer removes its entry): a finished handler's entry is removed here, which keeps
  memory flat over a long session of edits.

The public hooks carry the rest (``protocol_cls``, ``structure_message``, ``handle_message``), but
pygls 2 has none for its answers or its handler futures, so three internals of
``JsonRPCProtocol`` are used: ``_send_response`` (overridden to drop the traceback, and called to
answer), ``_execute_handler`` (overridden to forget each finished future) and the
``_request_futures`` dict it fills. ``tests/unit/lsp/test_pygls_contract.py`` fails if pygls
changes any of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcServerNotInitialized
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("lsp_server")

_ANSWERED = object()  # a malformed request this protocol already answered with an error


class CCTestProtocol(LanguageServerProtocol):
    """``LanguageServerProtocol`` with the answers listed in the module's docstring."""

    initialize_seen = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                log.warning("malformed %s request %s: %s", data.get("method"), data.get("id"), exc.__cause__)
                detail = str(exc.__cause__ or exc).splitlines()[0]
                error = JsonRpcInvalidParams(message=f"Invalid params for {data['method']}: {detail}")
                self._send_response(data["id"], error=error.to_response_error())
                return _ANSWERED
            raise

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        method = getattr(message, "method", None)
        if not hasattr(message, "jsonrpc") or (method is None and not hasattr(message, "id")):
            log.warning("a message that is not a JSON-RPC object was dropped: %.200r", message)
            return
        if method is not None and not self.initialize_seen and not self._before_initialize(message):
            return
        super().handle_message(message)

    def _before_initialize(self, message: Any) -> bool:
        """Whether a message that came before ``initialize`` may be handled (and answer it if not)."""
        if message.method == lsp.INITIALIZE:
            self.initialize_seen = True
            return True
        if message.method == lsp.EXIT:
            return True
        if getattr(message, "id", None) is None:
            log.info("%s before initialize: dropped", message.method)
            return False
        error = JsonRpcServerNotInitialized(message=f"{message.method} before initialize.")
        self._send_response(message.id, error=error.to_response_error())
        return False

    def _send_response(
        self, msg_id: Any, result: Any | None = None, error: lsp.ResponseError | None = None
    ) -> None:
        if error is not None and error.data is not None:
            # pygls's internal errors carry {"traceback": [...]}: the log has it, the client does not
            error = lsp.ResponseError(code=error.code, message=error.message.splitlines()[0])
        super()._send_response(msg_id, result=result, error=error)

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Callable[..., Any],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(lambda done: self._forget(msg_id, done))

    def _forget(self, msg_id: Any, future: Any) -> None:
        if self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]


__all__ = ["CCTestProtocol"]
