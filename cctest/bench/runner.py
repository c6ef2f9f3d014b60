"""Running a benchmark: the engine over every task of a dataset, tests in the sandbox, one record per task.

The run directory, resume and progress bar are shared by every kind of run (``kinds``): the
natural-language task runs (``cctest.tasks.run``) write the same files with their own records.

A run lives in a directory::

    RUN_DIR/config.json     what was run (dataset, thresholds, ..., the engine's settings)
    RUN_DIR/results.jsonl   one record per task, appended and fsync'd as each task finishes
    RUN_DIR/summary.json    the metrics (written at the end, rebuilt from results.jsonl)
    RUN_DIR/report.html     the report
    RUN_DIR/run.lock        locked (flock) by the run writing the directory, for its whole life

One run writes a directory at a time (``locked_run_dir``); a second is refused, and a record of a
task already recorded (two runs of an older version at once) is ignored with a warning, the first
one kept. Files other than ``results.jsonl`` are written whole through a new temporary file renamed
over the old one (``write_run_file``), which never follows a symlink planted in the directory; a
write that fails (a full disk, a read-only mount) is one sentence (``RunWriteError``) and leaves
every record already written as it was.

An interrupted run resumes with ``--resume``: the tasks already in ``results.jsonl`` are skipped, a
torn last line (the write the interruption cut short) is dropped, and a resume whose settings
differ from ``config.json`` is refused, since its records would not be comparable.

Every threshold T of the list is evaluated on the same completions: the record keeps the
similarity matrix and each completion's below-median count, and Algorithm 1 and the repair choice
are applied once per T.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import logging
import os
import random
import secrets
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .. import repair
from ..config import Settings
from ..detect import outliers_from_counts
from ..errors import BackendError, ConfigError, ModelLoadError
from ..models import BUNDLED_MODEL
from ..redact import redact_settings
from ..safe_text import terminal_text
from ..types import Prompt
from ..userfile import MAX_SOURCE_BYTES, iter_user_lines, read_user_text
from .datasets import Dataset, Problem
from .metrics import t_key
from .sandbox import Limits, check_program, close_sandbox, run_many, stop_workers, unique

DEFAULT_THRESHOLDS = (1.0, 3.0, 5.0, 7.0, 9.0)
CONFIG = "config.json"
RESULTS = "results.jsonl"
LOCK = "run.lock"
MAX_RECORD_BYTES = 256 * 1024 * 1024  # one line of results.jsonl (one task's record)
MAX_CONFIG_BYTES = 4 * MAX_SOURCE_BYTES  # config.json (a chat instruction from a file is one of its settings)
T = TypeVar("T")
log = logging.getLogger(__name__)

_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "the file size limit is reached",
    errno.EROFS: "the file system is read-only",
    errno.ELOOP: "it is a symbolic link, which cctest does not follow in a run directory",
}


class RunWriteError(ConfigError):
    """A file of a run directory could not be written (a full disk, a read-only mount, ...)."""

    def __init__(self, path: Path, exc: OSError) -> None:
        self.path = path
        self.reason = _REASONS.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
        super().__init__(f"{path} cannot be written ({self.reason}).")


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


def recorded_model(backend: Any, model: Any) -> str | None:
    """The model as a run names it: the bundled model by name (``model`` null with ``hf``)."""
    if model is None:
        return f"{BUNDLED_MODEL} (bundled)" if backend == "hf" else None
    return str(model)


# config.json's fields of the engine's settings before it embedded them (``"settings"``), as its
# readers still see them (``run_config``): field -> setting
FLAT_SETTINGS = {
    "backend": "backend",
    "model": "model",
    "k": "mutants",
    "schemes": "schemes",
    "seed": "seed",
    "max_new_tokens": "max_new_tokens",
    "temperature": "temperature",
    "max_distance": "max_distance",
    "mutant_pool": "mutant_pool",
    "spare_suffix": "spare_suffix",
    "near_sites": "near_sites",
    "fim": "fim",
    "completion_scope": "completion_scope",
}
# the fields in their order (the report lists them so), the run's own among them
_FLAT_ORDER = (
    "dataset", "dataset_source", "tasks", "backend", "model", "k", "schemes", "thresholds", "limit",
    "seed", "shuffle", "max_new_tokens", "temperature", "max_distance", "sandbox", "infill",
    "mutant_pool", "spare_suffix", "near_sites", "fim", "completion_scope", "decide_after",
)  # fmt: skip
# settings recorded only since a later version: a run recorded before was made with these
RECORDED_SINCE = {
    "mutant_pool": 1,
    "spare_suffix": False,
    "near_sites": False,
    "fim": "auto",
    "completion_scope": "block",
}


def run_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config.json`` as every reader sees it (resume's check, summary, headline, report,
    comparison), whatever its shape: the run's fields with the engine's settings among them,
    flat (``k``, ``backend``, ``model`` named as ``recorded_model`` names it, ...). A config
    written before ``"settings"`` was is that already; any other kind's is as it is."""
    settings = config.get("settings")
    if not isinstance(settings, Mapping):
        return dict(config)
    flat = {k: v for k, v in config.items() if k != "settings"}
    flat.update({name: settings.get(key) for name, key in FLAT_SETTINGS.items()})
    flat["model"] = recorded_model(settings.get("backend"), settings.get("model"))
    order = {name: i for i, name in enumerate(_FLAT_ORDER)}
    return dict(sorted(flat.items(), key=lambda item: order.get(item[0], len(order))))


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
) -> dict[str, Any]:
    """Algorithm 1 at threshold ``t`` and the repair choice, from a stored matrix and counts."""
    outliers = outliers_from_counts(counts, t)
    return {"outliers": outliers, "chosen": repair.choose(matrix, outliers, eligible)}


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one record to ``results.jsonl``: one write per line, then fsync, so a kill leaves
    at most one torn line, at the end (``read_records`` drops it). A write that fails (a full
    disk) is cut off again, so the file ends with the last whole record: ``RunWriteError``."""
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise RunWriteError(path, exc) from None
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):  # freeing space needs none
                os.ftruncate(fd, start)
            raise RunWriteError(path, exc) from None
    finally:
        os.close(fd)


def _shape(obj: Any) -> str | None:
    """What makes ``obj`` no record of a run (every kind's records), or None."""
    if not isinstance(obj, dict):
        return "it is not a JSON object"
    if not isinstance(obj.get("task_id"), str):
        return "it has no 'task_id' string"
    if "index" in obj and (not isinstance(obj["index"], int) or isinstance(obj["index"], bool)):
        return "its 'index' is not a whole number"
    return None


def read_records(path: Path, repair_tail: bool = False) -> list[dict[str, Any]]:
    """The records of ``results.jsonl``; a torn last line is ignored (and cut off if ``repair_tail``).

    Each record is written as one line ending in a newline, so whatever follows the last newline is
    a write an interruption cut short; a damaged line before it, a line that is no record, or one
    longer than ``MAX_RECORD_BYTES`` is an error. The file is read a line at a time. A second record
    of a task already read (two runs wrote the directory at once) is ignored with a warning: the
    first record of each task is the run's.
    """
    if not os.path.lexists(path):
        return []
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    duplicates, good_end, torn = 0, 0, False
    lines = iter_user_lines(
        path, limit=None, line_limit=MAX_RECORD_BYTES, what=f"run's {RESULTS}", error=ConfigError
    )
    for number, raw in enumerate(lines, start=1):
        if not raw.endswith(b"\n"):
            torn = True  # the last line: a write cut short
            break
        good_end += len(raw)
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            raise ConfigError(f"{path} line {number} is damaged; the run cannot be read from it.") from None
        problem = _shape(record)
        if problem:
            raise ConfigError(
                f"{path} line {number} is not a record of a run ({problem}); the run cannot be read from it."
            )
        if record["task_id"] in seen:
            duplicates += 1
            continue
        seen.add(record["task_id"])
        records.append(record)
    if duplicates:
        log.warning(
            "cctest bench: %s holds %d more record(s) of tasks already recorded (two runs wrote it at "
            "once); the first record of each task is used.",
            path,
            duplicates,
        )
    if repair_tail and torn:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.ftruncate(fd, good_end)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise RunWriteError(path, exc) from None
    return records


def write_run_file(path: Path, text: str) -> None:
    """``text`` as the file ``path`` of a run directory, whole or not at all: written to a new
    temporary file beside it (created exclusively: never through a link) and renamed over ``path``
    (which replaces a symlink planted there, never follows it). ``RunWriteError`` if it fails."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise RunWriteError(path, exc) from None
    try:
        try:
            view = memoryview(text.encode("utf-8"))
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise RunWriteError(path, exc) from None


def read_config(path: Path) -> dict[str, Any]:
    """A run's ``config.json``: a JSON object, or one sentence saying what it is instead."""
    text = read_user_text(path, limit=MAX_CONFIG_BYTES, what=f"run's {CONFIG}", error=ConfigError)
    try:
        config = json.loads(text)
    except ValueError:
        raise ConfigError(f"{path} is not valid JSON; the run cannot be read from it.") from None
    if not isinstance(config, dict):
        raise ConfigError(
            f"{path} is not a JSON object, as a run's {CONFIG} is; the run cannot be read from it."
        )
    return config


def make_dir(out: Path) -> None:
    """``out`` as a directory (made with its parents if missing), or one sentence why it cannot be."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(f"{out} exists and is not a directory; choose another --out.") from None
    except NotADirectoryError:
        above = next((p for p in out.parents if os.path.lexists(p) and not p.is_dir()), out.parent)
        raise ConfigError(
            f"{out} is under {above}, which is not a directory; choose another --out."
        ) from None
    except OSError as exc:
        raise RunWriteError(out, exc) from None


@contextlib.contextmanager
def locked_run_dir(out: Path, create: bool = True) -> Iterator[None]:
    """Hold the run directory ``out`` (made if ``create``) for one run: an exclusive ``flock`` on
    its ``run.lock``, kept until the block ends and released by the kernel if the process dies. A
    directory another run holds is refused with one sentence naming that run's pid. Without
    ``create``, a path that is no directory is left to ``prepare_run_dir`` to refuse."""
    if create:
        make_dir(out)
    elif not out.is_dir():
        yield
        return
    path = out / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise RunWriteError(path, exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            who = f" (pid {pid})" if pid.isdigit() else ""
            raise ConfigError(
                f"{out} is being written by another run{who}; wait for it to end or choose another --out."
            ) from None
        with contextlib.suppress(OSError):  # a full disk: the lock holds without its pid
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)


class _Config(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def prepare_run_dir(out: Path, config: _Config, resume: bool) -> list[dict[str, Any]]:
    """Create or reopen the run directory for ``config`` (any run config with ``to_dict``);
    returns the records already there (resume)."""
    cfg_path = out / CONFIG
    if resume:
        if not cfg_path.is_file():
            raise ConfigError(
                f"there is no run to resume in {out} (no {CONFIG}); start one with --out {out}."
            )
        old = run_config(read_config(cfg_path))
        # the same JSON round trip as the stored one
        new = run_config(json.loads(json.dumps(config.to_dict())))
        # a setting recorded only since a later version: an older run was made with its default
        recorded: tuple[Field[Any], ...] = fields(config) if is_dataclass(config) else ()
        since = {f.name: f.default for f in recorded if f.default is not MISSING} | RECORDED_SINCE
        for name, default in since.items():
            if name not in old and name in new:
                old[name] = json.loads(json.dumps(default))
        diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        if diff:
            raise ConfigError(
                f"the run in {out} was made with different settings ({', '.join(diff)}); "
                "resume it with the same ones or choose another --out."
            )
        return read_records(out / RESULTS, repair_tail=True)
    if (out / RESULTS).exists() or cfg_path.exists():
        raise ConfigError(f"{out} already holds a run; add --resume to continue it, or choose another --out.")
    make_dir(out)
    write_run_file(cfg_path, json.dumps(config.to_dict(), indent=2) + "\n")
    return []


def _verdicts(result: Any, eligible: list[bool], thresholds: Sequence[float]) -> dict[str, Any]:
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
) -> dict[str, Any]:
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
    full: dict[str, Any], result: Any, after: int, thresholds: Sequence[float]
) -> dict[str, Any]:
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


async def _ask_early(early: Any, task: Problem, record: dict[str, Any], config: RunConfig) -> dict[str, Any]:
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
    full: dict[str, Any], early: dict[str, Any], settling: Any, thresholds: Sequence[float]
) -> dict[str, Any]:
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


def _task_fields(task: Problem, index: int) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "index": index,
        "prompt": task.prompt,
        "ground_truth": task.ground_truth,
        "has_tests": bool(task.tests),
    }


def _error_record(task: Problem, index: int, error: str, thresholds: Sequence[float]) -> dict[str, Any]:
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
    out: Path,
    *,
    done: Sequence[dict[str, Any]] = (),
    limits: Limits | None = None,
    workers: int = 2,
    batch_prompts: int = 8,
    backend_factory: Callable[[Settings], Any] | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run every task not already in ``done``; returns all records (old and new), in task order.

    ``batch_prompts`` prompts at a time go through ``Engine.run_many``: all their variants in one
    backend call (greedy completions do not depend on the grouping). Records are appended as their
    batch finishes, shortest prompts first; readers order them by task."""
    from ..backends import create_backend
    from ..engine import Engine, eligible_mask
    from ..model_load import load
    from .draws import draw, judge_draws

    limits = limits or Limits()
    finished = {r["task_id"] for r in done}
    todo = [(i, t) for i, t in enumerate(tasks) if t.task_id not in finished]
    records = list(done)
    results_path = out / RESULTS
    thresholds = config.thresholds
    factory = backend_factory or create_backend
    if not todo:
        return in_task_order(records, tasks)

    async def tested(task: Problem, record: dict[str, Any]) -> list[dict[str, Any]]:
        if task.tests and record["completions"]:
            texts = [c["text"] if c["is_result"] else None for c in record["completions"]]
            record["tests"] = await asyncio.to_thread(execute_tests, task, texts, limits, workers)
            if record.get("draws"):
                await asyncio.to_thread(judge_draws, task, record["draws"], limits, workers)
        return [record]

    # the model loads (told on stderr) before the bar starts: its clock and rate are the prompts'
    backend = load(factory, settings)
    bar = progress_bar(len(tasks), len(tasks) - len(todo), "cctest bench", progress)
    pending = RecordWriter(results_path, records, bar)
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
    Ctrl-C exits at once. Outside the main thread (no signal handler there) it does nothing."""
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
    try:
        yield
    except asyncio.CancelledError:
        if not interrupted:
            raise
        _abandon_threads_at_exit()
        raise KeyboardInterrupt from None
    finally:
        loop.remove_signal_handler(signal.SIGINT)


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
            print("cctest: the model call in flight was abandoned.", file=sys.stderr)
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


def in_task_order(records: Sequence[dict[str, Any]], tasks: Sequence[_HasId]) -> list[dict[str, Any]]:
    """Records sorted into the order of ``tasks`` (they are written in the order they finish)."""
    order = {t.task_id: i for i, t in enumerate(tasks)}
    return sorted(records, key=lambda r: order.get(r["task_id"], len(order)))


class RecordWriter:
    """Appends records to ``results.jsonl`` (and ``records``, and the progress bar) as background
    work (tests, judging) finishes, in the order the work was started, while the caller goes on
    (the model's next batch)."""

    def __init__(self, path: Path, records: list[dict[str, Any]], bar: Any) -> None:
        self.path, self.records, self.bar = path, records, bar
        self._last: asyncio.Task[None] | None = None

    def add(self, work: Awaitable[list[dict[str, Any]]]) -> None:
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
                append_record(self.path, record)
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


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(config, records) of a finished or interrupted run; the config as ``run_config`` reads it."""
    cfg_path = run_dir / CONFIG
    if not cfg_path.is_file():
        raise ConfigError(f"{run_dir} is not a cctest bench run (no {CONFIG}).")
    config = run_config(read_config(cfg_path))
    records = read_records(run_dir / RESULTS)
    return config, sorted(records, key=lambda r: r.get("index", 0))  # task order, as run_benchmark returns
