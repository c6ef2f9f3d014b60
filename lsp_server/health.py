"""Whether the backend answers: ONE message to the user per failure streak, and one when it
answers again (a message per failed keystroke would flood the editor's log)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

from lsprotocol import types as lsp

from .backends import describe_failure

log = logging.getLogger("lsp_server")

Report = Callable[[str, lsp.MessageType], None]


class BackendHealth:
    """Counts ``failures`` into ``counters``; tells the user through ``report`` when the backend
    named by ``backend_name()`` starts failing and when it recovers."""

    def __init__(self, counters: Counter[str], report: Report, backend_name: Callable[[], str]) -> None:
        self.counters = counters
        self._report = report
        self._backend_name = backend_name
        self.healthy = True

    def failed(self, exc: BaseException) -> None:
        """A request (or the warm-up) failed with ``exc``."""
        self.counters["failures"] += 1
        if self.healthy:
            self.healthy = False
            self._report(
                f"cctest: the {self._backend_name()} backend failed: {describe_failure(exc)} "
                "Completions are empty until it answers again.",
                lsp.MessageType.Error,
            )
        else:
            log.info("backend still failing: %s", exc)

    def ok(self) -> None:
        """The backend answered."""
        if not self.healthy:
            self.healthy = True
            self._report(f"cctest: the {self._backend_name()} backend answers again.", lsp.MessageType.Info)


__all__ = ["BackendHealth"]
