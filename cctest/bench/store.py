"""The run store: one run directory and its files, for every kind of run.

Every benchmark (the CCTest bench, a task file, each suite, ``evaluate``) writes its run through a
``RunStore``; none opens the files itself::

    RUN_DIR/config.json     what was run (the run's fields and the engine's settings)
    RUN_DIR/results.jsonl   one record per task, appended and fsync'd as each task finishes
    RUN_DIR/summary.json    the metrics (written at the end, rebuilt from results.jsonl)
    RUN_DIR/report.html     the report
    RUN_DIR/run.lock        locked (flock) by the run writing the directory, for its whole life

One run writes a directory at a time (``RunStore.locked``); a second is refused with one sentence
naming its pid, and a record of a task already recorded (two runs of an older version at once) is
ignored with a warning, the first one kept. Files other than ``results.jsonl`` are written whole
through a new temporary file renamed over the old one (``write_file``), which never follows a
symlink planted in the directory; a write that fails (a full disk, a read-only mount) is one
sentence (``RunWriteError``) and leaves every record already written as it was.

An interrupted run resumes (``RunStore.prepare(config, resume=True)``): the tasks already in
``results.jsonl`` are its records, a torn last line (the write the interruption cut short) is cut
off, and a config that differs from ``config.json`` is refused, since its records would not be
comparable. ``config.json`` is read as its kind reads it (``RunKind.read_config``: a shape an older
version wrote included), so a resume's check, the summary and the reports see one shape.

A store is typed by its kind's record (``RunStore[CompletionRecord]``, ...): what it appends and
reads back is that ``TypedDict``, checked by mypy where the record is written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, Field, fields, is_dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

from ..errors import ConfigError
from ..userfile import MAX_SOURCE_BYTES, check_write_target, iter_user_lines, load_json, read_user_text
from .kinds import kind_of

CONFIG = "config.json"
RESULTS = "results.jsonl"
SUMMARY = "summary.json"
REPORT = "report.html"
LOCK = "run.lock"
MAX_RECORD_BYTES = 256 * 1024 * 1024  # one line of results.jsonl (one task's record)
MAX_CONFIG_BYTES = 4 * MAX_SOURCE_BYTES  # config.json (a chat instruction from a file is one of its settings)
log = logging.getLogger(__name__)

# a kind's record (a TypedDict); every record has a "task_id" string, most an "index"
R = TypeVar("R", bound=Mapping[str, object])

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


class StoredConfig(Protocol):
    """A run's config (``RunConfig``, ``TaskRunConfig``, ...): what ``config.json`` holds."""

    def to_dict(self) -> dict[str, Any]: ...


def config_view(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config.json`` (or a config's ``to_dict()``) as every reader sees it (a resume's check,
    the summary, headline, report and comparison): as its kind reads it, whatever its shape."""
    return kind_of(config).read_config(config)


def write_file(path: Path, text: str, what: str = "file") -> None:
    """``text`` as the file ``path`` (of a run directory, a comparison, an export), whole or not at
    all: written to a new temporary file beside it (created exclusively: never through a link) and
    renamed over ``path`` (which replaces a symlink planted there, never follows it).
    ``RunWriteError`` if it fails; a device, a pipe, a socket or a directory at ``path`` (``what``,
    for the sentence) is refused before anything is written, since the rename would replace it."""
    check_write_target(path, what=what, error=ConfigError, link_ok=True)
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


def json_line(record: Any) -> str:
    """``record`` as one line of JSON, with its newline, that UTF-8 can carry: as it is, or, where
    it holds a lone surrogate (a sample's code, say), with JSON's escapes for what is not ASCII."""
    line = json.dumps(record, ensure_ascii=False) + "\n"
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record) + "\n"
    return line


RUN_FILES = (CONFIG, RESULTS, SUMMARY, REPORT, LOCK)


def is_run_file(path: Path) -> bool:
    """``path`` names one of a run directory's own files (in a directory, however named, that holds
    a run: a ``config.json``, ``results.jsonl`` or ``run.lock``), which another file written there
    would replace."""
    if path.name not in RUN_FILES:
        return False
    try:
        directory = path.parent.resolve()
    except (OSError, RuntimeError):
        return False
    return any(os.path.lexists(directory / name) for name in (CONFIG, RESULTS, LOCK))


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


def _shape(obj: Any) -> str | None:
    """What makes ``obj`` no record of a run (every kind's records), or None."""
    if not isinstance(obj, dict):
        return "it is not a JSON object"
    if not isinstance(obj.get("task_id"), str):
        return "it has no 'task_id' string"
    if "index" in obj and (not isinstance(obj["index"], int) or isinstance(obj["index"], bool)):
        return "its 'index' is not a whole number"
    return None


class RunStore(Generic[R]):
    """One run directory: its lock, ``config.json``, the records of ``results.jsonl`` (of type
    ``R``, the kind's record) and ``summary.json``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r})"

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY

    @property
    def lock_path(self) -> Path:
        return self.path / LOCK

    # -- the lock -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, create: bool = True) -> Iterator[RunStore[R]]:
        """Hold the directory (made if ``create``) for one run: an exclusive ``flock`` on its
        ``run.lock``, kept until the block ends and released by the kernel if the process dies. A
        directory another run holds is refused with one sentence naming that run's pid. Without
        ``create``, a path that is no directory is left to ``prepare`` to refuse."""
        out = self.path
        if create:
            make_dir(out)
        elif not out.is_dir():
            yield self
            return
        path = self.lock_path
        check_write_target(path, what=f"run's {LOCK}", error=ConfigError, link_ok=True)
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
            yield self
        finally:
            os.close(fd)

    # -- config.json ----------------------------------------------------------------------------

    def prepare(self, config: StoredConfig, resume: bool) -> list[R]:
        """Create the run for ``config`` (``config.json`` written), or reopen it (``resume``:
        ``config.json`` must say the same, read as its kind reads it); returns the records
        already there."""
        out, cfg_path = self.path, self.config_path
        if resume:
            if not cfg_path.is_file():
                raise ConfigError(
                    f"there is no run to resume in {out} (no {CONFIG}); start one with --out {out}."
                )
            old = config_view(self.read_config())
            # the same JSON round trip as the stored one
            new = config_view(json.loads(json.dumps(config.to_dict())))
            # a setting recorded only since a later version: an older run was made with its default
            recorded: tuple[Field[Any], ...] = fields(config) if is_dataclass(config) else ()
            since = {f.name: f.default for f in recorded if f.default is not MISSING}
            since |= kind_of(new).recorded_since
            for name, default in since.items():
                if name not in old and name in new:
                    old[name] = json.loads(json.dumps(default))
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            if diff:
                raise ConfigError(
                    f"the run in {out} was made with different settings ({', '.join(diff)}); "
                    "resume it with the same ones or choose another --out."
                )
            return self.records(repair_tail=True)
        if self.results_path.exists() or cfg_path.exists():
            raise ConfigError(
                f"{out} already holds a run; add --resume to continue it, or choose another --out."
            )
        make_dir(out)
        write_file(cfg_path, json.dumps(config.to_dict(), indent=2) + "\n")
        return []

    def read_config(self) -> dict[str, Any]:
        """``config.json`` as written: a JSON object, or one sentence saying what it is instead."""
        path = self.config_path
        text = read_user_text(path, limit=MAX_CONFIG_BYTES, what=f"run's {CONFIG}", error=ConfigError)
        try:
            config = load_json(text)
        except ValueError:
            raise ConfigError(f"{path} is not valid JSON; the run cannot be read from it.") from None
        if not isinstance(config, dict):
            raise ConfigError(
                f"{path} is not a JSON object, as a run's {CONFIG} is; the run cannot be read from it."
            )
        return config

    # -- results.jsonl --------------------------------------------------------------------------

    def append(self, record: R) -> None:
        """Append one record to ``results.jsonl``: one write per line, then fsync, so a kill leaves
        at most one torn line, at the end (``records`` drops it). A write that fails (a full disk)
        is cut off again, so the file ends with the last whole record: ``RunWriteError``."""
        path = self.results_path
        line = json_line(record).encode("utf-8")
        check_write_target(path, what=f"run's {RESULTS}", error=ConfigError, link_ok=True)
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

    def records(self, repair_tail: bool = False) -> list[R]:
        """The records of ``results.jsonl`` in the order written; a torn last line is ignored (and
        cut off if ``repair_tail``).

        Each record is written as one line ending in a newline, so whatever follows the last
        newline is a write an interruption cut short; a damaged line before it, a line that is no
        record, or one longer than ``MAX_RECORD_BYTES`` is an error. The file is read a line at a
        time. A second record of a task already read (two runs wrote the directory at once) is
        ignored with a warning: the first record of each task is the run's."""
        path = self.results_path
        if not os.path.lexists(path):
            return []
        records: list[R] = []
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
                record = load_json(raw)
            except ValueError:
                raise ConfigError(
                    f"{path} line {number} is damaged; the run cannot be read from it."
                ) from None
            problem = _shape(record)
            if problem:
                raise ConfigError(
                    f"{path} line {number} is not a record of a run ({problem}); "
                    "the run cannot be read from it."
                )
            if record["task_id"] in seen:
                duplicates += 1
                continue
            seen.add(record["task_id"])
            records.append(cast(R, record))  # its kind's shape: its reports say when it is not
        if duplicates:
            log.warning(
                "cctest bench: %s holds %d more record(s) of tasks already recorded (two runs wrote it "
                "at once); the first record of each task is used.",
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

    # -- summary.json and reading a run back ----------------------------------------------------

    def write_summary(self, summary: Mapping[str, object]) -> None:
        """``summary.json``, written whole or not at all (``write_file``)."""
        write_file(self.summary_path, json.dumps(summary, indent=2) + "\n")

    def load(self) -> tuple[dict[str, Any], list[R]]:
        """(config, records) of a finished or interrupted run: the config as its kind reads it
        (``config_view``), the records in task order."""
        if not self.config_path.is_file():
            raise ConfigError(f"{self.path} is not a cctest bench run (no {CONFIG}).")
        config = config_view(self.read_config())
        records = self.records()
        return config, sorted(records, key=lambda r: _index(r.get("index")))


def _index(value: object) -> int:
    return value if isinstance(value, int) else 0


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(config, records) of the run in ``run_dir`` of any kind (``RunStore.load``)."""
    store: RunStore[dict[str, Any]] = RunStore(run_dir)
    return store.load()
