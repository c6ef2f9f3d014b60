"""Each backend's capabilities are the protocols it has, as the engine tests them (``isinstance``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from cctest.backends.base import (
    Backend,
    ChatModel,
    CompletesInGroups,
    DecidesEarly,
    FimLayout,
    InstructionModel,
    Outcome,
)
from cctest.backends.hf import HFBackend
from cctest.backends.http import HTTPBackend
from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import Engine


def test_each_backend_has_the_capabilities_it_implements(hf_model: HFBackend) -> None:
    caps = (FimLayout, DecidesEarly, CompletesInGroups, ChatModel, InstructionModel)
    assert all(isinstance(hf_model, c) for c in caps)
    http = HTTPBackend("http://127.0.0.1:9/v1")
    assert [isinstance(http, c) for c in caps] == [True, True, False, True, False]  # decides over streams
    assert [isinstance(RuleBackend(), c) for c in caps] == [False, False, False, False, False]


class OnlyComplete(Backend):
    """The core alone: ``complete`` takes prompts and suffixes, nothing else."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        self.calls.append(list(prompts))
        return [f"x{i}\n" for i, _ in enumerate(prompts)]


def test_the_engine_uses_only_the_core_of_a_backend_without_capabilities() -> None:
    backend = OnlyComplete()
    engine = Engine(backend, Settings(mutants=3, decide_after=4, spare_suffix=True))
    prompt = "def area(width, height):\n    total = width * height\n    "
    result = asyncio.run(engine.run(prompt))
    assert result.decided_after is None and len(backend.calls) == 1  # no early decision: one call
    many = asyncio.run(engine.run_many([prompt, prompt]))  # no groups: one call of all the rows
    assert len(backend.calls) == 2 and all(not isinstance(r, Exception) for r in many)
