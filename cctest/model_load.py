"""A local model's load, made visible: ``cctest: loading model bundled…`` when it starts and
``cctest: loading model bundled… done (14.8 s)`` when it ends.

Loading the bundled model takes seconds to a minute on a CPU; the command-line faces
(``complete``, ``serve``, every ``bench`` suite) build their backend through ``load`` so the
user sees it happen, and a run's progress bar starts after it. On a terminal the two lines are
one, finished in place; to a pipe or a file they are two plain lines. stdout is never touched.

Only a backend that loads a local model (``hf``) is announced: ``model_label`` is None for the
others, and ``load`` then just builds. The language server reports the same load through its
log and a ``cctest/model`` notification (``lsp_server.backends``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TextIO, TypeVar

from .config import Settings

B = TypeVar("B")


def model_label(settings: Settings) -> str | None:
    """The model a backend for ``settings`` loads, as the user named it: ``bundled`` or the
    directory given; None when the backend loads no local model (``http``, ``rules``) or the
    directory is no model's."""
    if settings.backend != "hf":
        return None
    if settings.model is None:
        return "bundled"
    return str(settings.model) if _looks_loadable(settings.model) else None


def _looks_loadable(model: str) -> bool:
    """A directory with a model's config: what the backend then spends seconds loading. Anything
    else it refuses at once, in one sentence that no announced load should precede."""
    try:
        return (Path(model).expanduser() / "config.json").is_file()
    except (OSError, ValueError):  # a name too long, a NUL: the backend says what is wrong
        return False


def loading_text(label: str) -> str:
    return f"cctest: loading model {label}…"


def loaded_text(label: str, seconds: float) -> str:
    return f"{loading_text(label)} done ({seconds:.1f} s)"


class LoadReport(Protocol):
    """Told when a load starts and when it ends (``seconds`` None: it failed)."""

    def started(self, label: str) -> None: ...

    def ended(self, label: str, seconds: float | None) -> None: ...


class StderrReport:
    """The two lines on ``stream`` (stderr by default): one line finished in place on a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    def _tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # closed
            return False

    def started(self, label: str) -> None:
        self.stream.write(loading_text(label) + ("" if self._tty() else "\n"))
        self.stream.flush()

    def ended(self, label: str, seconds: float | None) -> None:
        if self._tty():  # the line started above, finished (a failure's message follows on its own)
            self.stream.write(" failed\n" if seconds is None else f" done ({seconds:.1f} s)\n")
        elif seconds is not None:
            self.stream.write(loaded_text(label, seconds) + "\n")
        self.stream.flush()


def load(build: Callable[[Settings], B], settings: Settings, report: LoadReport | None = None) -> B:
    """``build(settings)``, announced through ``report`` (default: stderr) when it loads a local model."""
    label = model_label(settings)
    if label is None:
        return build(settings)
    report = report if report is not None else StderrReport()
    report.started(label)
    t0 = time.perf_counter()
    global _loading
    _loading += 1
    try:
        backend = build(settings)
    except BaseException:
        report.ended(label, None)
        raise
    finally:
        _loading -= 1
    report.ended(label, time.perf_counter() - t0)
    return backend


async def load_in_thread(
    build: Callable[[Settings], B], settings: Settings, report: LoadReport | None = None
) -> B:
    """``load``, awaited while the model thread does it (``cctest.backends.arun_on_model_thread``,
    where the model would be loaded anyway) when it loads a local model: the event loop stays free
    meanwhile, so a run's Ctrl-C handler (``cctest.bench.runner.stop_on_interrupt``) is heard
    during a load of seconds to a minute, not after it. Cancelled, the await ends at once and the
    load goes on (a run that stops abandons it at exit, as it abandons a model call). A backend
    that loads nothing is built here, at once."""
    if model_label(settings) is None:
        return load(build, settings, report)
    from .backends import arun_on_model_thread

    return await arun_on_model_thread(load, build, settings, report)


def loading() -> bool:
    """Whether a local model's load (``load``) is under way in this process."""
    return _loading > 0


_loading = 0  # loads under way


__all__ = [
    "LoadReport",
    "StderrReport",
    "load",
    "load_in_thread",
    "loading",
    "loaded_text",
    "loading_text",
    "model_label",
]
