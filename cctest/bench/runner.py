"""Running a benchmark: the engine over every task of a dataset, tests in the sandbox, one record per task.

The run directory (``config.json``, ``results.jsonl``, resume, the lock) is every kind of run's
``store.RunStore``; this module adds what the runs share beyond it (the progress bar, the ordered
``RecordWriter``, ``--limit``/``--shuffle``, Ctrl-C) and the CCTest bench's own: its config
(``RunConfig``, read in any shape by ``run_config``) and its records (``CompletionRecord``).

Every threshold T of the list is evaluated on the same completions: the record keeps the
similarity matrix and each completion's below-median count, and Algorithm 1 and the repair choice
are applied once per T.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, Generic, NotRequired, Protocol, TypedDict, TypeVar

from .. import repair
from ..config import Settings
from ..detect import outliers_from_counts
from ..errors import BackendError, ModelLoadError
from ..model_load import loading
from ..redact import redact_settings
from ..safe_text import terminal_text
from ..types import Prompt
from .datasets import Dataset, Problem
from .kinds import FLAT_ORDER, FLAT_SETTINGS, flat_config
from .metrics import t_key
from .sandbox import Limits, check_program, close_sandbox, run_many, stop_workers, unique
from .store import R, RunStore

DEFAULT_THRESHOLDS = (1.0, 3.0, 5.0, 7.0, 9.0)
T = TypeVar("T")
log = logging.getLogger(__name__)


# -- the records (results.jsonl), one per task ------------------------------------------------


class Variant(TypedDict):
    """A mutant the engine asked (or dropped): its scheme and structural distance."""

    scheme: str
    structural_distance: float


class CompletionEntry(TypedDict):
    """One completion of a record: the original's (``source`` "original") or a mutant's."""

    source: str
    text: str
    is_result: bool
    eligible: bool  # repair may choose it
    error: str | None


class Decision(TypedDict):
    """Algorithm 1 and the repair choice at one threshold T."""

    outliers: list[int]
    chosen: int | None


class Verdicts(TypedDict):
    """A result's similarity matrix, below-median counts, and the decision per T (``t_key``)."""

    similarity: list[list[float]]
    counts: list[int]
    per_T: dict[str, Decision]


class SettledRecord(TypedDict):
    """The verdict on whole completions after an early answer (``error``: why there is none)."""

    error: str | None
    similarity: NotRequired[list[list[float]]]
    counts: NotRequired[list[int]]
    per_T: NotRequired[dict[str, Decision]]
    as_full: NotRequired[bool]  # the settled completions are the record's own
    settle_ms: NotRequired[float]


class EarlyRecord(TypedDict):
    """``--decide-after N``: the editor's repair mode deciding after ``after`` tokens (``error``:
    why it has no verdict; then only ``after`` and ``error``)."""

    after: int
    error: str | None
    decided_after: NotRequired[int | None]
    completions: NotRequired[list[str]]
    cut: NotRequired[list[int]]
    similarity: NotRequired[list[list[float]]]
    counts: NotRequired[list[int]]
    per_T: NotRequired[dict[str, Decision]]
    chosen: NotRequired[int | None]
    chosen_as_full: NotRequired[bool | None]
    timings_ms: NotRequired[dict[str, float]]
    settled: NotRequired[SettledRecord]


class TaskFields(TypedDict):
    """The task a record is of."""

    task_id: str
    index: int
    prompt: str
    ground_truth: str | None
    has_tests: bool


class CompletionRecord(TaskFields):
    """One task of a CCTest bench run (``error``: the backend's, with no completions)."""

    error: str | None
    mutants: list[Variant]
    dropped: list[Variant]
    completions: list[CompletionEntry]
    similarity: list[list[float]]
    counts: list[int]
    per_T: dict[str, Decision]
    tests: list[dict[str, Any] | None] | None  # each completion's RunResult.to_dict (None: none)
    timings_ms: dict[str, float]
    draws: NotRequired[list[dict[str, Any]]]  # --samples n: the other draws (``draws.draw``)
    early: NotRequired[EarlyRecord]  # --decide-after N


@dataclass(frozen=True)
class RunConfig:
    """What a run is; two runs with equal configs produce comparable records.

    ``config.json`` holds the run's own fields and, under ``"settings"``, the engine's settings as
    ``Settings`` writes them (``recorded_settings``); ``run_config`` reads either shape."""

    dataset: str  # the --dataset argument
    dataset_source: str  # the file or directory it resolved to
    tasks: int  # how many tasks the run covers (after --limit)
    thresholds: list[float]
    limit: int | None
    shuffle: bool
    # the engine's settings, their schemes named (the ones used: none given, all of them)
    settings: Settings
    sandbox: dict[str, Any] = field(default_factory=dict)
    infill: int | None = None  # --infill N: N masked lines of the --dataset directory
    # --decide-after N: each prompt also asked as the editor's repair mode asks it, the verdict
    # made on every completion's first N tokens (0: not asked)
    decide_after: int = 0
    # --samples N: completions drawn per prompt (temperature > 0) for pass@k; the record's own
    # completions are the first draw, the others its ``draws`` (``cctest.bench.draws``)
    samples: int = 1

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "settings"}
        return {**json.loads(json.dumps(out)), "settings": recorded_settings(self.settings)}


def recorded_settings(settings: Settings) -> dict[str, Any]:
    """The engine's settings as ``config.json`` holds them: ``Settings.to_dict``, URLs redacted
    (as the defect log stores them)."""
    return redact_settings(settings.to_dict())


def run_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config.json`` of a CCTest bench run as every reader sees it (resume's check, summary,
    headline, report, comparison), whatever its shape: the run's fields with the engine's settings
    among them, flat (``k``, ``backend``, ``model`` named as ``recorded_model`` names it, ...). A
    config written before ``"settings"`` was is that already; any other kind's is as it is
    (``RunKind.read_config``, whose default this is)."""
    return flat_config(config, FLAT_SETTINGS, FLAT_ORDER)


def select_tasks(dataset: Dataset, limit: int | None, seed: int, shuffle: bool) -> list[Problem]:
    """The tasks a run covers: the dataset's order (or a seeded shuffle), then the first ``limit``."""
    return select(dataset.tasks, limit, seed, shuffle)


def select(items: Sequence[T], limit: int | None, seed: int, shuffle: bool) -> list[T]:
    """``items`` in their order (or a seeded shuffle), then the first ``limit`` (every run's --limit)."""
    chosen = list(items)
    if shuffle:
        random.Random(seed).shuffle(chosen)
    return chosen[:limit] if limit is not None else chosen


def decide(
    matrix: Sequence[Sequence[float]], counts: Sequence[int], eligible: Sequence[bool], t: float
) -> Decision:
    """Algorithm 1 at threshold ``t`` and the repair choice, from a stored matrix and counts."""
    outliers = outliers_from_counts(counts, t)
    return {"outliers": outliers, "chosen": repair.choose(matrix, outliers, eligible)}


def _verdicts(result: Any, eligible: list[bool], thresholds: Sequence[float]) -> Verdicts:
    """A result's similarity matrix, below-median counts, and outliers and repair per T."""
    matrix = [list(row) for row in result.similarity]
    counts = list(result.verdict.counts)
    return {
        "similarity": [[round(x, 6) for x in row] for row in matrix],
        "counts": counts,
        "per_T": {t_key(t): decide(matrix, counts, eligible, t) for t in thresholds},
    }


def _record(
    task: Problem, index: int, result: Any, thresholds: Sequence[float], eligible: list[bool]
) -> CompletionRecord:
    return {
        **_task_fields(task, index),
        "error": None,
        "mutants": [
            {"scheme": m.scheme, "structural_distance": m.structural_distance} for m in result.mutants
        ],
        "dropped": [
            {"scheme": m.scheme, "structural_distance": m.structural_distance} for m in result.dropped_mutants
        ],
        "completions": [
            {
                "source": c.source,
                "text": c.text,
                "is_result": c.is_result,
                "eligible": eligible[i],
                "error": c.error,
            }
            for i, c in enumerate(result.completions)
        ],
        **_verdicts(result, eligible, thresholds),
        "tests": None,
        "timings_ms": {k: round(v, 3) for k, v in result.timings_ms.items()},
    }


def _early_record(
    full: CompletionRecord, result: Any, after: int, thresholds: Sequence[float]
) -> EarlyRecord:
    """The verdict of the editor's repair mode deciding after ``after`` tokens (``result``: that
    request's ``EngineResult``), per T, beside the run's record ``full`` of the same variants:
    the outliers among the completions' first tokens and the row repair chooses, whose whole
    completion (and its tests) is ``full``'s row of that index."""
    from ..engine import eligible_mask

    schemes = [m.scheme for m in result.mutants]
    if schemes != [m["scheme"] for m in full["mutants"]]:  # not the same variants: no comparison
        return {"after": after, "error": f"other mutants ({', '.join(schemes)})"}
    chosen = result.verdict.chosen
    whole = result.completions[chosen].text if chosen is not None else None
    return {
        "after": after,
        "error": None,
        "decided_after": result.decided_after,  # None: every row ended within ``after`` tokens
        "completions": [c.text for c in result.completions],  # the first tokens; the chosen one whole
        "cut": [i for i, c in enumerate(result.completions) if c.cut],
        **_verdicts(result, eligible_mask(result.mutants, result.completions), thresholds),
        # the row the request chose at the run's own threshold, finished alone: the same text as
        # the whole batch gives that row (greedy), checked here on every run
        "chosen": chosen,
        "chosen_as_full": None if chosen is None else whole == full["completions"][chosen]["text"],
        "timings_ms": {k: round(v, 3) for k, v in result.timings_ms.items()},
    }


async def _ask_early(early: Any, task: Problem, record: CompletionRecord, config: RunConfig) -> EarlyRecord:
    """The editor's repair mode on ``task`` (``early``: an engine deciding after
    ``config.decide_after`` tokens) beside the run's ``record``: the early verdict, and when the
    decision cut completions, the settled one (``"settled"``) on those completions run on to
    their ends (the verdict for a defect log, after the answer). No ``"settled"``: nothing was cut
    (or the backend cannot run cut rows on), so the early verdict is the only one."""
    after, thresholds = config.decide_after, config.thresholds
    try:
        asked, settling = await early.run_settling(
            Prompt(text=task.prompt, suffix=task.suffix),
            k=config.settings.mutants,
            schemes=config.settings.schemes,
        )
    except BackendError as exc:
        return {"after": after, "error": str(exc)}
    out = _early_record(record, asked, after, thresholds)
    if settling is not None:
        try:
            if out["error"] is None:
                out["settled"] = await _settled_record(record, out, settling, thresholds)
        finally:
            settling.close()
    return out


async def _settled_record(
    full: CompletionRecord, early: EarlyRecord, settling: Any, thresholds: Sequence[float]
) -> SettledRecord:
    """The verdict on whole completions after the early answer (``settling``: its ``Settling``):
    the outliers among the whole completions, with each T's choice the early record's (the answer
    the editor got), and whether those completions are the run's record ``full``'s texts."""
    from ..engine import eligible_mask

    try:
        settled = await settling.result()
    except BackendError as exc:
        return {"error": str(exc)}
    if settled is None:  # closed before it ran: only the early verdict
        return {"error": "closed"}
    verdicts = _verdicts(settled, eligible_mask(settled.mutants, settled.completions), thresholds)
    for t, v in verdicts["per_T"].items():
        v["chosen"] = early["per_T"][t]["chosen"]
    texts = [c.text for c in settled.completions]
    return {
        "error": None,
        **verdicts,
        "as_full": texts == [c["text"] for c in full["completions"]],
        "settle_ms": round(settled.timings_ms.get("settle", 0.0), 3),
    }


def _task_fields(task: Problem, index: int) -> TaskFields:
    return {
        "task_id": task.task_id,
        "index": index,
        "prompt": task.prompt,
        "ground_truth": task.ground_truth,
        "has_tests": bool(task.tests),
    }


def _error_record(task: Problem, index: int, error: str, thresholds: Sequence[float]) -> CompletionRecord:
    return {
        **_task_fields(task, index),
        "error": error,
        "mutants": [],
        "dropped": [],
        "completions": [],
        "similarity": [],
        "counts": [],
        "per_T": {t_key(t): {"outliers": [], "chosen": None} for t in thresholds},
        "tests": None,
        "timings_ms": {},
    }


def execute_tests(
    task: Problem, texts: Sequence[str | None], limits: Limits, workers: int
) -> list[dict[str, Any] | None]:
    """Each completion's outcome on the task's tests (None where there is no completion).

    Identical completions (common after de-mutation) are run once.
    """
    assert task.tests
    programs = {
        i: check_program(task.prompt, t + task.suffix, task.tests, task.entry_point)
        for i, t in enumerate(texts)
        if t is not None
    }
    distinct = unique(programs.values())
    results = dict(zip(distinct, run_many(distinct, limits, workers=workers), strict=True))
    return [results[programs[i]].to_dict() if i in programs else None for i in range(len(texts))]


async def run_benchmark(
    tasks: Sequence[Problem],
    settings: Settings,
    config: RunConfig,
    store: RunStore[CompletionRecord],
    *,
    done: Sequence[CompletionRecord] = (),
    limits: Limits | None = None,
    workers: int = 2,
    batch_prompts: int = 8,
    backend_factory: Callable[[Settings], Any] | None = None,
    progress: bool = True,
) -> list[CompletionRecord]:
    """Run every task not already in ``done``; returns all records (old and new), in task order.

    ``batch_prompts`` prompts at a time go through ``Engine.run_many``: all their variants in one
    backend call (greedy completions do not depend on the grouping). Records are appended as their
    batch finishes, shortest prompts first; readers order them by task."""
    from ..backends import create_backend
    from ..engine import Engine, eligible_mask
    from ..model_load import load_in_thread
    from .draws import draw, judge_draws

    limits = limits or Limits()
    finished = {r["task_id"] for r in done}
    todo = [(i, t) for i, t in enumerate(tasks) if t.task_id not in finished]
    records = list(done)
    thresholds = config.thresholds
    factory = backend_factory or partial(create_backend, steady=True)
    if not todo:
        return in_task_order(records, tasks)

    async def tested(task: Problem, record: CompletionRecord) -> list[CompletionRecord]:
        if task.tests and record["completions"]:
            texts = [c["text"] if c["is_result"] else None for c in record["completions"]]
            record["tests"] = await asyncio.to_thread(execute_tests, task, texts, limits, workers)
            if record.get("draws"):
                await asyncio.to_thread(judge_draws, task, record["draws"], limits, workers)
        return [record]

    # the model loads (told on stderr) before the bar starts: its clock and rate are the prompts'
    backend = await load_in_thread(factory, settings)
    bar = progress_bar(len(tasks), len(tasks) - len(todo), "cctest bench", progress)
    pending = RecordWriter(store, records, bar)
    try:
        async with stop_on_interrupt(), backend:
            engine = Engine(backend, settings)
            # the editor's repair mode, deciding early: finishing the chosen row only (the run's
            # completions are every row whole)
            early = Engine(backend, settings.replace(decide_after=config.decide_after))
            for group in batches(todo, batch_prompts):
                # the model works on this batch while the previous batch's tests run
                # --samples n: each prompt n times in the one call, n draws (seeded as the
                # backend seeds a call's rows); the first is the record's own
                n = config.samples
                drawn = await engine.run_many(
                    [Prompt(text=task.prompt, suffix=task.suffix) for _, task in group for _ in range(n)],
                    k=config.settings.mutants,
                    schemes=config.settings.schemes,
                )
                results = drawn[::n]
                for g, ((index, task), result) in enumerate(zip(group, results, strict=True)):
                    if isinstance(result, ModelLoadError):
                        raise result
                    if isinstance(result, BackendError):
                        record = _error_record(task, index, str(result), thresholds)
                    elif isinstance(result, Exception):
                        # a bug on one prompt must not end a long run: recorded (and counted as an
                        # engine error in the summary), the message naming the prompt for the report
                        record = _error_record(task, index, f"{type(result).__name__}: {result}", thresholds)
                        bar.write(  # a task id or an exception's text: no raw control characters
                            terminal_text(
                                f"cctest: {task.task_id}: the engine failed "
                                f"({type(result).__name__}: {result})."
                            ),
                            file=sys.stderr,
                        )
                    else:
                        eligible = eligible_mask(result.mutants, result.completions)
                        record = _record(task, index, result, thresholds, eligible)
                        if n > 1:
                            record["draws"] = [draw(r, thresholds) for r in drawn[g * n + 1 : (g + 1) * n]]
                        if config.decide_after:
                            record["early"] = await _ask_early(early, task, record, config)
                    pending.add(tested(task, record))
            await pending.drain()
    finally:
        pending.cancel()
        bar.close()
    return in_task_order(records, tasks)


@contextlib.asynccontextmanager
async def stop_on_interrupt() -> AsyncIterator[None]:
    """Ctrl-C (SIGINT) ends the block at once, as ``KeyboardInterrupt``: the task running it is
    cancelled (a model call in flight is abandoned, not awaited), the samples under test are
    killed with their workers, and the process will not wait at exit for the threads still busy
    (the model's, which cannot be stopped mid-call). Records already appended stay whole: each is
    written by the event loop between two awaits, which a cancellation cannot split. A second
    Ctrl-C exits at once. Outside the main thread (no signal handler there), or inside another
    such block (whose task, cancelled, cancels this one's), it does nothing."""
    global _stopping_on_interrupt
    if _stopping_on_interrupt:
        yield
        return
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        if interrupted:
            _exit_abandoning_threads()
        interrupted = True
        stop_workers(for_good=True)  # the samples in flight end now, and no new one starts
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals
        yield
        return
    _stopping_on_interrupt = True
    try:
        yield
    except asyncio.CancelledError:
        if not interrupted:
            raise
        _abandon_threads_at_exit()
        raise KeyboardInterrupt from None
    finally:
        _stopping_on_interrupt = False
        loop.remove_signal_handler(signal.SIGINT)


_stopping_on_interrupt = False  # a stop_on_interrupt block is under way (it holds SIGINT)


def _exit_abandoning_threads(code: int = 130) -> None:
    """End the process now with ``code``: flush the standard streams, remove the sandbox's
    directories, and leave the threads still busy (a model call) behind instead of joining them."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        close_sandbox()
    os._exit(code)


def _abandon_threads_at_exit() -> None:
    """At interpreter exit, before Python joins the threads (a model call in flight would hold it
    for its whole duration), exit with 130 if any is still busy. Registered with the hooks that
    run before that join (the thread pools' own are among them, called after this one)."""

    def at_exit() -> None:
        busy = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
        if busy:
            what = "load" if loading() else "call"
            print(f"cctest: the model {what} in flight was abandoned.", file=sys.stderr)
            _exit_abandoning_threads(130)

    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        register(at_exit)


def batches(todo: Sequence[tuple[int, Problem]], size: int) -> list[list[tuple[int, Problem]]]:
    """The tasks in groups of ``size`` whose variants go to the model in one call. Tasks are
    taken shortest prompt first, so a group's rows need little padding to a common length."""
    return batches_by_length(todo, size, lambda task: len(task.prompt))


def batches_by_length(
    todo: Sequence[tuple[int, T]], size: int, length: Callable[[T], int]
) -> list[list[tuple[int, T]]]:
    """``(index, item)`` pairs in groups of ``size``, shortest ``length`` first (ties by index)."""
    ordered = sorted(todo, key=lambda pair: (length(pair[1]), pair[0]))
    size = max(1, size)
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def progress_bar(total: int, initial: int, desc: str, enabled: bool = True) -> Any:
    """The progress bar every run shows on stderr (a tqdm bar; disabled: it counts silently)."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit="prompt",
        file=sys.stderr,
        disable=not enabled,
        dynamic_ncols=True,
    )


class _HasId(Protocol):
    @property
    def task_id(self) -> str: ...


def in_task_order(records: Sequence[R], tasks: Sequence[_HasId]) -> list[R]:
    """Records sorted into the order of ``tasks`` (they are written in the order they finish)."""
    order = {t.task_id: i for i, t in enumerate(tasks)}
    return sorted(records, key=lambda r: order.get(str(r["task_id"]), len(order)))


class RecordWriter(Generic[R]):
    """Appends records to the run's store (and ``records``, and the progress bar) as background
    work (tests, judging) finishes, in the order the work was started, while the caller goes on
    (the model's next batch)."""

    def __init__(self, store: RunStore[R], records: list[R], bar: Any) -> None:
        self.store, self.records, self.bar = store, records, bar
        self._last: asyncio.Task[None] | None = None

    def add(self, work: Awaitable[list[R]]) -> None:
        previous = self._last
        if previous is not None and previous.done() and not previous.cancelled():
            failed = previous.exception()  # a write that failed (a full disk): stop before more work
            if failed is not None:
                raise failed

        async def run() -> None:
            new = await work
            if previous is not None:
                await previous
            for record in new:
                self.store.append(record)
                self.records.append(record)
                self.bar.update(1)

        self._last = asyncio.create_task(run())

    async def drain(self) -> None:
        """Wait until everything added is written."""
        if self._last is not None:
            await self._last
            self._last = None

    def cancel(self) -> None:
        if self._last is not None and not self._last.done():
            self._last.cancel()
