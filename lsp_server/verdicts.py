"""``cctest/verdict`` notifications: the verdict of an answered request, for a client's status line.

Sent after the answer (the client reads the answer first), and again when a later verdict is in:
in monitor mode the background check's, in repair mode deciding early the one on whole
completions. A later verdict is sent only while its request is still the last one answered (the
client shows one verdict, the last answer's). ``engineMs`` (the engine's own time, model
included) is there when this request ran the engine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from cctest.types import EngineResult

from .convert import verdict_text

log = logging.getLogger("lsp_server")

VERDICT_NOTIFICATION = "cctest/verdict"


def verdict_params(
    uri: str, request_id: str, mode: str, result: EngineResult | None, fresh: bool = False
) -> dict[str, Any]:
    """The notification's params (``result`` None: monitor mode, before its check)."""
    params: dict[str, Any] = {
        "uri": uri,
        "requestId": request_id,
        "mode": mode,
        "text": verdict_text(result, mode),
    }
    if result is not None:
        params.update(outliers=len(result.outliers), total=len(result.completions), suspect=result.is_suspect)
        if fresh:
            params["engineMs"] = round(result.timings_ms["total"], 4)
    return params


class VerdictNotifier:
    """Sends ``cctest/verdict`` through ``send(method, params)`` once the current answer is out."""

    def __init__(self, send: Callable[[str, dict[str, Any]], None]) -> None:
        self._send = send
        self._answered: str | None = None  # the last request whose answer's verdict was sent

    def notify(
        self, uri: str, request_id: str, mode: str, result: EngineResult | None, fresh: bool = False
    ) -> None:
        """The verdict of a request just answered."""
        self._answered = request_id
        self._post(verdict_params(uri, request_id, mode, result, fresh))

    def notify_later(self, uri: str, request_id: str, mode: str, result: EngineResult) -> None:
        """A request's later verdict; dropped when another request has been answered since."""
        if self._answered in (None, request_id):
            self._post(verdict_params(uri, request_id, mode, result))

    def _post(self, params: dict[str, Any]) -> None:
        # after the answer, not before it: the handler returns first, this runs on the next tick
        asyncio.get_running_loop().call_later(0, self._deliver, params)

    def _deliver(self, params: dict[str, Any]) -> None:
        try:
            self._send(VERDICT_NOTIFICATION, params)
        except Exception:  # no transport, or it is gone
            log.debug("could not send the verdict", exc_info=True)


__all__ = ["VERDICT_NOTIFICATION", "VerdictNotifier", "verdict_params"]
