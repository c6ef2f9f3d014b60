"""The backend holder: one backend for the current settings, built off the event loop, rebuilt
when a setting that concerns it changes, and closed when replaced.

A build that loads a local model is told through ``tell``: ``{state: "loading", model, text}``
when it starts and ``{state: "ready" | "failed", model, seconds, text}`` when it ends (``text``:
``cctest: loading model bundled… done (14.8 s)``, as the command line says it), which the server
logs and sends as ``cctest/model``.

A build is a task of its own, shielded from the requests that wait for it: a request cancelled
while a model loads must not abandon the load (the next one would start another). A build that
failed is not retried for the same settings for ``RETRY_S`` seconds (each request would
otherwise pay for it again); its message is raised at once instead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from cctest.backends import create_backend
from cctest.backends.base import Backend
from cctest.config import Settings, backend_key
from cctest.errors import BackendError, CCTestError
from cctest.model_load import loaded_text, loading_text, model_label

from .background import Spawn

log = logging.getLogger("lsp_server")

RETRY_S = 10.0  # a backend that failed to be built is not rebuilt sooner for the same settings

Tell = Callable[[dict[str, Any]], None]


def load_params(label: str, seconds: float | None = None, failed: bool = False) -> dict[str, Any]:
    """What ``tell`` gets: a load of model ``label`` started (``seconds`` None) or ended."""
    if seconds is None:
        return {"state": "loading", "model": label, "text": loading_text(label)}
    text = f"{loading_text(label)} failed ({seconds:.1f} s)" if failed else loaded_text(label, seconds)
    return {
        "state": "failed" if failed else "ready",
        "model": label,
        "seconds": round(seconds, 1),
        "text": text,
    }


class BackendHolder:
    """The backend for ``settings_now()``; counts ``backend_builds`` into ``counters``."""

    def __init__(
        self,
        settings_now: Callable[[], Settings],
        spawn: Spawn,
        counters: Counter[str],
        build: Callable[[Settings], Backend] = create_backend,
        tell: Tell | None = None,
    ) -> None:
        self.settings_now = settings_now
        self.spawn = spawn
        self.counters = counters
        self.build = build
        self.tell = tell
        self.current: Backend | None = None
        self._key: tuple[Any, ...] | None = None
        self._building: tuple[tuple[Any, ...], asyncio.Future[Backend]] | None = None
        self._failure: tuple[tuple[Any, ...], float, str] | None = None

    async def get(self) -> Backend:
        """The backend for the current settings, built on first use."""
        settings = self.settings_now()
        key = backend_key(settings)
        if self.current is not None and self._key == key:
            return self.current
        if self._building is None or self._building[0] != key:
            failure = self._failure
            if failure and failure[0] == key and time.monotonic() - failure[1] < RETRY_S:
                raise BackendError(failure[2])
            task = asyncio.ensure_future(self._build(settings, key))
            # a build nobody waits for any more must not warn "exception never retrieved"
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
            self._building = (key, task)
        return await asyncio.shield(self._building[1])

    def describe(self) -> str | None:
        return self.current.describe() if self.current is not None else None

    async def aclose(self) -> None:
        """Close the current backend (the server is ending); a later ``get`` builds a new one."""
        backend, self.current, self._key = self.current, None, None
        if backend is not None:
            await close(backend)

    async def _build(self, settings: Settings, key: tuple[Any, ...]) -> Backend:
        label = model_label(settings) if self.tell is not None else None
        self._tell(label)
        t0 = time.perf_counter()
        try:
            # building may load a model from disk: seconds of work, in a thread
            backend = await asyncio.to_thread(self.build, settings)
            self.counters["backend_builds"] += 1
        except Exception as exc:
            self._tell(label, time.perf_counter() - t0, failed=True)
            message = describe_failure(exc)
            self._failure = (key, time.monotonic(), message)
            if not isinstance(exc, CCTestError):
                log.exception("building the %s backend failed", settings.backend)
            raise BackendError(message) from exc
        finally:
            if self._building is not None and self._building[0] == key:
                self._building = None
        self._tell(label, time.perf_counter() - t0)
        if key != backend_key(self.settings_now()):  # the settings moved on while it was built
            self.spawn(close(backend))
            return backend
        self._failure = None
        old, self.current, self._key = self.current, backend, key
        if old is not None:
            self.spawn(close(old))
        log.info("backend ready: %s", backend.describe())
        return backend

    def _tell(self, label: str | None, seconds: float | None = None, failed: bool = False) -> None:
        if label is None or self.tell is None:
            return
        try:
            self.tell(load_params(label, seconds, failed))
        except Exception:  # telling must never fail a build
            log.warning("telling of the model load failed", exc_info=True)


async def close(backend: Backend) -> None:
    try:
        await backend.aclose()
    except Exception:
        log.warning("closing the old backend failed", exc_info=True)


def describe_failure(exc: BaseException) -> str:
    """One sentence: the exception's text (or its type's name), with a full stop."""
    text = str(exc).strip() or type(exc).__name__
    return text if text.endswith(".") else text + "."


__all__ = ["RETRY_S", "BackendHolder", "Tell", "describe_failure", "load_params"]
