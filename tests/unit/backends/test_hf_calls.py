"""The HF backend's out-of-memory halving (``_calls.generate_safe``), without a model: a batch
that does not fit is split between its groups (whole prompts to each half), down to single
prompts, and ``on_step`` hears each half's rows at their place in the whole call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cctest.backends import _calls
from cctest.backends.base import GenerationOptions
from cctest.backends.loaded import Generation
from cctest.errors import BackendOutOfMemory


def _fits_up_to(limit: int, seen: list[tuple[list[str], Any]]) -> Any:
    """A ``generate`` that runs out of memory above ``limit`` rows, recording each batch."""

    def generate(
        view: Any, prompts: list[str], opts: Any, suffixes: Any, deciding: Any, groups: Any, on_step: Any
    ):
        seen.append((prompts, groups))
        if len(prompts) > limit:
            raise BackendOutOfMemory("too big")
        if on_step is not None:
            on_step(0, prompts, [None] * len(prompts), len(prompts))
        return [Generation(p.upper(), "stop", 1, 1) for p in prompts], None, None

    return generate


def test_a_batch_too_big_is_halved_between_its_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str], Any]] = []
    monkeypatch.setattr(_calls, "generate", _fits_up_to(3, seen))
    told: list[tuple[int, Sequence[str]]] = []

    def on_step(at: int, texts: Sequence[str], ended: Sequence[str | None], batch: int) -> list[bool]:
        told.append((at, list(texts)))
        return [False] * len(texts)

    prompts = ["a", "b", "c", "d", "e", "f"]
    out = _calls.generate_safe(None, prompts, GenerationOptions(), groups=[2, 3, 1], on_step=on_step)  # type: ignore[arg-type]
    assert [g.text for g in out if isinstance(g, Generation)] == ["A", "B", "C", "D", "E", "F"]
    # the whole call, then the first group alone and the other two, which still fit together
    assert [(p, list(g) if g else g) for p, g in seen] == [
        (prompts, [2, 3, 1]),
        (["a", "b"], [2]),
        (["c", "d", "e", "f"], [3, 1]),
        (["c", "d", "e"], [3]),
        (["f"], [1]),
    ]
    assert told == [(0, ["a", "b"]), (2, ["c", "d", "e"]), (5, ["f"])]


def test_a_prompt_that_never_fits_gets_the_error_in_its_place(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str], Any]] = []
    monkeypatch.setattr(_calls, "generate", _fits_up_to(0, seen))
    out = _calls.generate_safe(None, ["a", "b", "c"], GenerationOptions())  # type: ignore[arg-type]
    assert all(isinstance(o, BackendOutOfMemory) for o in out) and len(out) == 3
    assert [p for p, _ in seen] == [["a", "b", "c"], ["a"], ["b", "c"], ["b"], ["c"]]
