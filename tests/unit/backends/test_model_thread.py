"""Every local model call runs on one thread (``cctest.backends._worker``): loading, ``generate``
from blocking code, ``complete`` and ``complete_deciding`` from async code."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from typing import Any

import pytest

from cctest.backends import _generate, _worker, run_on_model_thread
from cctest.backends.hf import HFBackend


def _ident() -> int:
    return threading.get_ident()


def test_run_and_arun_use_one_thread_from_any_caller() -> None:
    seen: list[int] = []
    callers = [threading.Thread(target=lambda: seen.append(_worker.run(_ident))) for _ in range(3)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    seen.append(asyncio.run(_worker.arun(_ident)))
    seen.append(run_on_model_thread(_ident))
    assert len(set(seen)) == 1
    assert seen[0] != threading.get_ident()  # not the caller's


def test_waiting_counts_the_calls_queued_and_not_started() -> None:
    """What work that can wait asks between its steps; a call cancelled in the queue leaves it."""
    started, release = threading.Event(), threading.Event()

    def block() -> int:
        started.set()
        release.wait(10)
        return 1

    async def go() -> list[int]:
        seen = []
        first = asyncio.ensure_future(_worker.arun(block))
        while not started.is_set():
            await asyncio.sleep(0.01)
        seen.append(_worker.waiting())  # the running call is not waiting
        second = asyncio.ensure_future(_worker.arun(_ident))
        third = asyncio.ensure_future(_worker.arun(_ident))
        await asyncio.sleep(0.01)
        seen.append(_worker.waiting())
        third.cancel()
        await asyncio.sleep(0.01)
        seen.append(_worker.waiting())
        release.set()
        await first
        await second
        seen.append(_worker.waiting())
        return seen

    assert asyncio.run(go()) == [0, 2, 1, 0]
    with _worker.requesting():  # a request under way counts as one waiting
        assert _worker.waiting() == 1
    assert _worker.waiting() == 0


def test_a_call_from_the_model_thread_runs_at_once() -> None:
    def outer() -> tuple[int, int, bool]:
        inner = _worker.run(_ident)  # would wait for itself forever if it were queued
        return threading.get_ident(), inner, _worker.on_model_thread()

    outer_id, inner_id, on = _worker.run(outer)
    assert outer_id == inner_id and on
    assert not _worker.on_model_thread()


def test_exceptions_reach_the_caller() -> None:
    def fail() -> None:
        raise ValueError("from the model thread")

    with pytest.raises(ValueError, match="from the model thread"):
        _worker.run(fail)
    with pytest.raises(ValueError, match="from the model thread"):
        asyncio.run(_worker.arun(fail))
    assert _worker.run(_ident)  # the thread survives a failed call


def _in_child(queue: Any) -> None:
    queue.put(_worker.run(lambda: 42))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this OS")
def test_a_forked_child_gets_its_own_model_thread() -> None:
    _worker.run(_ident)  # the parent's thread exists; a child forked now does not have it
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_in_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == 42


def test_the_hf_backend_loads_and_generates_on_the_model_thread(
    hf_model: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, int]] = []
    real = _generate.run_batch

    def spy(*args: Any, **kwargs: Any) -> Any:  # the real generation, recorded
        calls.append(("generate", threading.get_ident()))
        return real(*args, **kwargs)

    monkeypatch.setattr(_generate, "run_batch", spy)
    model_thread = _worker.run(_ident)
    view = hf_model.with_options(boundaries=True)
    text = view.generate(["def add(a, b):\n    return"])[0].text
    outcomes = asyncio.run(view.complete(["def sub(a, b):\n    return", "def sub(x, b):\n    return"]))
    decided = asyncio.run(
        view.complete_deciding(
            ["def mul(a, b):\n    return", "def mul(x, b):\n    return"], after=2, decide=lambda texts: 0
        )
    )
    assert text.strip() and all(isinstance(o, str) for o in outcomes) and decided.chosen in (0, None)
    assert [name for name, _ in calls] == ["generate"] * 3
    assert {ident for _, ident in calls} == {model_thread}


def test_loading_runs_on_the_model_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from cctest.backends import loaded

    loaded_on: list[int] = []
    real = loaded.LoadedModel.__init__

    def spy(self: Any, *args: Any, **kwargs: Any) -> None:  # the real load, recorded
        loaded_on.append(threading.get_ident())
        real(self, *args, **kwargs)

    monkeypatch.setattr(loaded.LoadedModel, "__init__", spy)
    backend = HFBackend(None, threads=1)
    assert backend.tokenizer is not None
    assert loaded_on == [_worker.run(_ident)]


def test_cuda_calls_leave_cudnn_attention_out_and_restore_the_setting() -> None:
    """cuDNN's SDPA builds a plan per new sequence length (about 1.3 s a keystroke on an H100);
    a call on CUDA runs without it, and the process's own setting is back afterwards. The flags
    are global booleans, so this holds without a GPU."""
    import torch

    from cctest.backends.loaded import attention_kernels

    before = torch.backends.cuda.cudnn_sdp_enabled()
    with attention_kernels(torch.device("cuda")):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with attention_kernels(torch.device("cpu")):  # on a CPU nothing changes
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
