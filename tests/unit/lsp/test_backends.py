"""The backend holder with a fake backend: one build per settings, shared, shielded, cached failures."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections import Counter
from typing import Any

import pytest

from cctest.config import Settings
from cctest.errors import BackendError
from lsp_server.backends import BackendHolder


class FakeBackend:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.closed = False

    def describe(self) -> str:
        return f"fake {self.settings.model_name}"

    async def aclose(self) -> None:
        self.closed = True


class World:
    """Settings that tests change, builds that tests gate, tasks the holder spawns."""

    def __init__(self, fail: bool = False) -> None:
        self.settings = Settings()
        self.gate = threading.Event()
        self.gate.set()
        self.fail = fail
        self.built: list[FakeBackend] = []
        self.attempts = 0
        self.spawned: list[asyncio.Task[Any]] = []
        self.told: list[dict[str, Any]] = []
        self.holder = BackendHolder(
            lambda: self.settings, self.spawn, Counter(), build=self.build, tell=self.told.append
        )

    def build(self, settings: Settings) -> Any:
        self.gate.wait(30)
        self.attempts += 1
        if self.fail:
            raise RuntimeError("no model here")
        self.built.append(FakeBackend(settings))
        return self.built[-1]

    def spawn(self, coro: Any) -> None:
        self.spawned.append(asyncio.ensure_future(coro))


async def test_one_build_shared_by_concurrent_requests() -> None:
    world = World()
    world.gate.clear()
    waiting = [asyncio.ensure_future(world.holder.get()) for _ in range(3)]
    await asyncio.sleep(0.05)
    waiting[0].cancel()  # a cancelled request does not abandon the build
    world.gate.set()
    results = await asyncio.gather(*waiting[1:])
    assert results[0] is results[1] is world.built[0] and len(world.built) == 1
    assert await world.holder.get() is world.built[0]
    assert world.holder.counters["backend_builds"] == 1


async def test_a_backend_setting_rebuilds_and_closes_the_old_one() -> None:
    world = World()
    first = await world.holder.get()
    world.settings = dataclasses.replace(world.settings, mutants=3)  # not a backend setting
    assert await world.holder.get() is first
    world.settings = dataclasses.replace(world.settings, model_name="other")
    second = await world.holder.get()
    await asyncio.gather(*world.spawned)
    assert second is not first and first.closed and not second.closed
    assert world.holder.describe() == "fake other"


async def test_a_failed_build_is_not_retried_at_once() -> None:
    world = World(fail=True)
    with pytest.raises(BackendError, match="no model here"):
        await world.holder.get()
    with pytest.raises(BackendError, match="no model here"):
        await world.holder.get()
    assert world.attempts == 1  # the second request got the first one's failure
    assert world.holder.current is None and world.holder.counters["backend_builds"] == 0


async def test_a_local_models_load_is_told_when_it_starts_and_ends() -> None:
    world = World()  # the default settings: backend hf, the bundled model
    world.gate.clear()
    waiting = asyncio.ensure_future(world.holder.get())
    while not world.told:  # the build started (and waits at the gate)
        await asyncio.sleep(0)
    assert world.told == [{"state": "loading", "model": "bundled", "text": "cctest: loading model bundled…"}]
    world.gate.set()
    await waiting
    [_, ready] = world.told
    assert (ready["state"], ready["model"]) == ("ready", "bundled") and ready["seconds"] >= 0
    assert ready["text"] == f"cctest: loading model bundled… done ({ready['seconds']:.1f} s)"


async def test_a_failed_load_is_told_and_a_backend_without_a_model_tells_nothing() -> None:
    world = World(fail=True)
    with pytest.raises(BackendError):
        await world.holder.get()
    assert [(t["state"], t["model"]) for t in world.told] == [("loading", "bundled"), ("failed", "bundled")]
    assert world.told[1]["text"].startswith("cctest: loading model bundled… failed (")
    world = World()
    world.settings = dataclasses.replace(world.settings, backend="rules")
    await world.holder.get()
    assert world.told == []
