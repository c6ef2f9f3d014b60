"""Completion backends, chosen by ``Settings.backend``: ``hf`` (a local transformers model, the
bundled one by default), ``http`` (a completion server), ``rules`` (deterministic, model-free).

``run_on_model_thread(fn, ...)`` (``arun_on_model_thread``, awaited): the thread every local
model's call runs on (``_worker``); a program that runs torch work of its own beside a model runs
it there too, so PyTorch's CPU threads stay in their fast regime."""

from __future__ import annotations

from ..config import Settings
from ..errors import ConfigError
from ._worker import arun as arun_on_model_thread
from ._worker import run as run_on_model_thread
from .base import Backend, GenerationOptions, Outcome, generation_options


def create_backend(settings: Settings, *, retry_unavailable: bool = False, steady: bool = False) -> Backend:
    """The backend the settings name. Heavy libraries are imported only for the one chosen.
    ``retry_unavailable``: a server that refuses or drops a connection is tried again like one
    that answers 5xx (``http``; for long unattended runs, not an editor's requests). ``steady``:
    a local model keeps torch's default threads for ``threads`` 0 instead of fitting them to the
    idle cores before each call (``hf``; for benchmarks, whose completions must not depend on the
    machine's load)."""
    if settings.backend == "rules":
        from .rules import RuleBackend

        return RuleBackend.from_spec(settings.model)
    if settings.backend == "hf":
        from .hf import HFBackend

        return HFBackend.from_settings(settings, adapt_threads=not steady)
    if settings.backend == "http":
        from .http import HTTPBackend

        return HTTPBackend.from_settings(settings, retry_unavailable=retry_unavailable)
    raise ConfigError(f"unknown backend '{settings.backend}'; choose hf, http or rules.")


__all__ = [
    "Backend",
    "GenerationOptions",
    "Outcome",
    "arun_on_model_thread",
    "create_backend",
    "generation_options",
    "run_on_model_thread",
]
