"""The defect log: suspected defects (and, optionally, every request) in one SQLite file.

Shared by the language server, which writes it, and ``cctest defects``, which reads it. The file is
created with mode 0600 before SQLite opens it (it holds the user's code; an existing one readable
by others is tightened to 0600, and directories it must create get 0700), runs in WAL mode, and
every record is written in ONE transaction: a process killed mid-write leaves either the whole
record or nothing (``tests/unit/test_defects.py`` SIGKILLs a writer in a loop to check).

The path must name a regular file, or nothing yet: a symbolic link, a directory, a device, a pipe
or a socket is refused, and so is a file that is not a defect log (not SQLite, or SQLite without
cctest's ``defects`` table), before anything about it changes. Modes are changed through a
descriptor opened without following links, and only on a confirmed log (or the empty file just
made) that belongs to the user.

Two tables:

``defects``
    one row per recorded request: where (uri, 0-based line/col as the editor sent them), the
    prompt and suffix, the mutants, every completion, the similarity matrix, the outliers, the
    chosen and the original completion, the model and the settings (no secrets), and whether the
    user accepted the completion (``accepted`` is NULL until then).
``acceptances``
    one row per completion the user accepted, recorded or not, so the acceptance rate of repaired
    and of untouched completions can be computed (the server only logs suspect requests).

This module must not import pygls or lsprotocol: the CLI uses it without them.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from .errors import DefectLogBusy, DefectLogError
from .redact import redact_settings
from .types import EngineResult
from .userfile import write_target_problem

SCHEMA_VERSION = 1
_SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
EXPORT_FORMATS = ("jsonl", "csv")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS defects (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT UNIQUE,
    time TEXT NOT NULL,
    uri TEXT,
    line INTEGER,
    col INTEGER,
    mode TEXT,
    prompt TEXT NOT NULL,
    suffix TEXT NOT NULL,
    mutants TEXT NOT NULL,
    completions TEXT NOT NULL,
    similarity TEXT NOT NULL,
    outliers TEXT NOT NULL,
    suspect INTEGER NOT NULL,
    chosen INTEGER,
    chosen_completion TEXT NOT NULL,
    original_completion TEXT NOT NULL,
    model TEXT,
    settings TEXT NOT NULL,
    timings TEXT NOT NULL,
    accepted INTEGER,
    accepted_time TEXT
);
CREATE INDEX IF NOT EXISTS defects_uri ON defects(uri);
CREATE INDEX IF NOT EXISTS defects_time ON defects(time);
CREATE TABLE IF NOT EXISTS acceptances (
    request_id TEXT PRIMARY KEY,
    time TEXT NOT NULL,
    uri TEXT,
    suspect INTEGER NOT NULL,
    repaired INTEGER NOT NULL,
    defect_id INTEGER REFERENCES defects(id) ON DELETE SET NULL
);
"""


@dataclass(frozen=True)
class DefectRecord:
    """One row of the ``defects`` table, JSON columns decoded."""

    id: int
    request_id: str | None
    time: str
    uri: str | None
    line: int | None
    col: int | None
    mode: str | None
    prompt: str
    suffix: str
    mutants: list[Any]
    completions: list[Any]
    similarity: list[list[float]]
    outliers: list[int]
    suspect: bool
    chosen: int | None
    chosen_completion: str
    original_completion: str
    model: str | None
    settings: dict[str, Any]
    timings: dict[str, float]
    accepted: bool | None
    accepted_time: str | None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def repaired(self) -> bool:
        """The completion served differs from the original one."""
        return self.chosen_completion != self.original_completion


_JSON_COLUMNS = ("mutants", "completions", "similarity", "outliers", "settings", "timings")
_COLUMNS = tuple(f.name for f in fields(DefectRecord))


def now_iso() -> str:
    """The current UTC time, ISO 8601 with microseconds (sorts as text)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def safe_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings fit to be stored: URLs lose their credentials (``cctest.redact``).

    >>> safe_settings({"model": "http://me:pw@host:8000/v1?api_key=sk-1", "mutants": 3})
    {'model': 'http://host:8000/v1?api_key=REDACTED', 'mutants': 3}
    """
    return redact_settings(settings)


def _make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and each missing directory above it with mode 0700; touch nothing else.

    (``Path.mkdir(parents=True, mode=…)`` gives the mode to the last directory only: the ones
    above it, ``~/.cache`` on a fresh account, would get 0755.) Only a directory this call made is
    chmodded, through a descriptor opened without following a symbolic link.
    """
    missing = []
    d = directory
    while not d.exists():
        missing.append(d)
        if d.parent == d:
            break
        d = d.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made by another process meanwhile: its mode is its own
        except OSError as exc:
            raise DefectLogError(
                f"cannot create the defect log directory {d}: {exc.strerror or exc}."
            ) from exc
        try:
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:  # replaced (by a link) since it was made: leave it alone
            raise DefectLogError(
                f"the defect log directory {d} changed while it was made: {exc.strerror or exc}."
            ) from exc
        try:
            os.fchmod(fd, 0o700)  # mkdir's mode passes through the umask, which may not be 077
        finally:
            os.close(fd)


def log_path(path: str | Path, what: str = "the defect log path") -> Path:
    """``path`` (``what``, for the message) with ``~`` expanded; a ``~user`` that names no home
    directory is one sentence.

    >>> log_path("/tmp/d.sqlite3")
    PosixPath('/tmp/d.sqlite3')
    """
    try:
        return Path(path).expanduser()
    except RuntimeError as exc:  # Path.expanduser: no such user
        raise DefectLogError(f"cannot use {what} {path}: its '~' names no user's home directory.") from exc


def _lstat(path: Path) -> os.stat_result | None:
    """``path``'s own status (a link's, not its target's); None when nothing is there."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise DefectLogError(f"cannot use the defect log path {path}: {_reason(exc)}.") from exc


def _reason(exc: Exception) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def _check_kind(path: Path, st: os.stat_result) -> None:
    """Refuse anything at ``path`` but a regular file: a link, a directory, a device, a pipe (the
    check of every path cctest writes)."""
    problem = write_target_problem(st)
    if problem is not None:
        raise DefectLogError(f"the defect log path {path} {problem}; give the path of a regular file.")


def _open_regular(path: Path) -> int:
    """A read-only descriptor on the regular file at ``path``, which must not be a link.

    O_NONBLOCK: should the path have become a named pipe since it was checked, opening it does not
    wait; the descriptor's own status is checked again, so what is changed later is what was opened.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            st = _lstat(path)
            if st is not None:
                _check_kind(path, st)
        raise DefectLogError(f"cannot read the defect log {path}: {_reason(exc)}.") from exc
    try:
        _check_kind(path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_empty_or_sqlite(path: Path, fd: int) -> bool:
    """True for an empty file (a log about to be made), False for an SQLite database; otherwise
    the file is refused, unread beyond its first bytes and unchanged."""
    try:
        head = os.pread(fd, len(_SQLITE_HEADER), 0)
    except OSError as exc:
        raise DefectLogError(f"cannot read the defect log {path}: {_reason(exc)}.") from exc
    if not head:
        return True
    if head != _SQLITE_HEADER:
        raise DefectLogError(f"{path} is not a cctest defect log (not an SQLite database).")
    return False


def _sidecars(path: Path) -> tuple[Path, Path]:
    """SQLite's files beside the log: its write-ahead log and shared-memory index."""
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def _check_sidecars(path: Path) -> None:
    for p in _sidecars(path):
        st = _lstat(p)
        if st is not None:
            _check_kind(p, st)


def _tighten(p: Path, fd: int, *, dry_run: bool = False) -> None:
    """Make the file open at ``fd`` readable by its owner only, if it is the user's own (``dry_run``:
    only say whether that cannot be done)."""
    st = os.fstat(fd)
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o077:
        return
    try:
        if st.st_uid != os.geteuid():
            raise PermissionError(errno.EPERM, "it belongs to another user")
        if not dry_run:
            os.fchmod(fd, mode & 0o700)
    except OSError as exc:
        raise DefectLogError(
            f"the defect log {p} can be read by other users (mode {mode:04o}) and cannot be made "
            f"private ({exc.strerror or exc}); chmod 600 it or use another defect log."
        ) from exc


def _make_private(path: Path, fd: int) -> None:
    """Make the defect log (open at ``fd``), and SQLite's files beside it, readable by their owner only.

    An existing log readable by others (an older cctest, a copy) is tightened to 0600 rather than
    refused: it holds the user's code. If it cannot be (it is someone else's), that is an error.
    Each mode is changed through a descriptor opened without following a link, on a regular file.
    """
    _tighten(path, fd)
    for p in _sidecars(path):
        if _lstat(p) is None:
            continue
        side = _open_regular(p)
        try:
            _tighten(p, side)
        finally:
            os.close(side)


def _create_private_file(path: Path) -> None:
    """Create the database file with mode 0600 (and missing directories with 0700) if missing."""
    parent = path.parent
    if not parent.exists():
        _make_private_dirs(parent)
    elif not parent.is_dir():
        raise DefectLogError(f"cannot create the defect log: {parent} is not a directory.")
    try:
        # O_EXCL | O_NOFOLLOW: never open, or create through, whatever appeared at the path meanwhile
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return  # made meanwhile (another server): checked like any existing file
    except IsADirectoryError as exc:
        raise DefectLogError(f"the defect log path {path} is a directory; give a file path.") from exc
    except OSError as exc:
        raise DefectLogError(f"cannot create the defect log {path}: {exc.strerror or exc}.") from exc
    os.close(fd)


def _sql_error(exc: sqlite3.Error, what: str) -> DefectLogError:
    """``what`` failed with ``exc``, in one sentence: ``DefectLogBusy`` when another process held
    the log locked past the connection's wait (worth trying again), ``DefectLogError`` otherwise."""
    code = getattr(exc, "sqlite_errorcode", None)
    busy = code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return (DefectLogBusy if busy else DefectLogError)(f"{what}: {exc}.")


def _is_defect_log(db: sqlite3.Connection) -> bool:
    """The database has cctest's ``defects`` table, with every column this version reads."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(defects)")}
    return set(_COLUMNS) <= columns


class DefectStore:
    """The defect log at one path. Thread-safe: one connection behind a lock.

    ``create=False`` opens an existing log only (the CLI: a missing file is an error, not an empty
    log left behind).
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = log_path(path)
        self._lock = threading.Lock()
        st = _lstat(self.path)
        if st is not None:
            _check_kind(self.path, st)
        elif create:
            _create_private_file(self.path)
        else:
            raise DefectLogError(
                f"no defect log at {self.path}; the language server creates it when it records a defect."
            )
        _check_sidecars(self.path)
        fd = _open_regular(self.path)
        try:
            self._db = self._open(fd, create)
        finally:
            os.close(fd)

    def _open(self, fd: int, create: bool) -> sqlite3.Connection:
        """The connection to the log open at ``fd``, once it is known to be a defect log (or an
        empty file to make one in, when ``create``): nothing is changed before that."""
        empty = _is_empty_or_sqlite(self.path, fd)
        if empty and not create:
            raise DefectLogError(f"{self.path} is not a cctest defect log (it is empty).")
        _tighten(self.path, fd, dry_run=True)  # someone else's log, open to all: refused unread
        db: sqlite3.Connection | None = None
        try:
            # isolation_level=None: no implicit transactions; each write is one explicit BEGIN..COMMIT
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
            # SQLite opened the path by name: it must still be the file checked, not a link put there since
            opened, now = os.fstat(fd), _lstat(self.path)
            if now is None or (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
                raise DefectLogError(f"the defect log {self.path} was replaced while it was opened.")
            if not empty and not _is_defect_log(db):
                raise DefectLogError(f"{self.path} is not a cctest defect log.")
            _make_private(self.path, fd)
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed transaction survives the process being killed (the OS
            # holds the data); only a power loss can roll back the last few commits
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            if create:
                # IMMEDIATE: the write lock is taken (waited for, as long as the connection's timeout)
                # at BEGIN; a deferred transaction that reads first is refused at once when it would
                # write while another process holds the lock
                script = _SCHEMA + f"PRAGMA user_version={SCHEMA_VERSION};"
                db.executescript("BEGIN IMMEDIATE;" + script + "COMMIT;")
        except sqlite3.Error as exc:
            if db is not None:
                db.close()
            raise _sql_error(exc, f"cannot open the defect log {self.path}") from exc
        except BaseException:
            if db is not None:
                db.close()
            raise
        return db

    # -- plumbing -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise DefectLogError(f"cannot read the defect log {self.path}: {exc}.") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> DefectStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------------
    def add(
        self,
        result: EngineResult,
        *,
        request_id: str | None = None,
        uri: str | None = None,
        line: int | None = None,
        col: int | None = None,
        mode: str | None = None,
        model: str | None = None,
        settings: Mapping[str, Any] | None = None,
        accepted: Sequence[str] = (),
    ) -> int:
        """Record one engine result in one transaction; returns the record id.

        ``accepted``: request ids whose acceptance was stored before this record (the answer was
        accepted before its verdict was recorded): their ``acceptances`` rows are linked to the
        record and take its verdict, and the record is marked accepted at the first one's time.
        """
        columns = {
            "request_id": request_id,
            "time": now_iso(),
            "uri": uri,
            "line": line,
            "col": col,
            "mode": mode,
            "prompt": result.prompt.text,
            "suffix": result.prompt.suffix,
            **self._verdict(result),
            "model": model,
            "settings": json.dumps(safe_settings(settings or {}), ensure_ascii=False, default=str),
        }
        try:
            with self._transaction() as db:
                cur = db.execute(
                    f"INSERT INTO defects ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    tuple(columns.values()),
                )
                record_id = int(cur.lastrowid or 0)
                if accepted and self._verdict_of_acceptances(
                    db, result, "defect_id IS NULL AND", accepted, link=record_id
                ):
                    db.execute(
                        "UPDATE defects SET accepted = 1, accepted_time ="
                        " (SELECT MIN(time) FROM acceptances WHERE defect_id = ?) WHERE id = ?",
                        (record_id, record_id),
                    )
                return record_id
        except sqlite3.Error as exc:
            raise _sql_error(exc, f"cannot write the defect log {self.path}") from exc

    @staticmethod
    def _verdict(result: EngineResult) -> dict[str, Any]:
        """The columns of a record that hold its verdict (what a settled verdict replaces)."""
        d = result.to_dict()
        return {
            "mutants": json.dumps(d["mutants"], ensure_ascii=False),
            "completions": json.dumps(d["completions"], ensure_ascii=False),
            "similarity": json.dumps(d["similarity"]),
            "outliers": json.dumps(d["outliers"]),
            "suspect": int(result.is_suspect),
            "chosen": result.chosen,
            "chosen_completion": result.completion,
            "original_completion": result.original_completion,
            "timings": json.dumps(d["timings_ms"]),
        }

    @staticmethod
    def _verdict_of_acceptances(
        db: sqlite3.Connection, result: EngineResult, where: str, request_ids: Sequence[str], link: int | None
    ) -> int:
        """Give the acceptances of ``request_ids`` (``where`` narrows them) ``result``'s verdict, and
        ``link`` them to that record when given; how many there were."""
        ids = list(dict.fromkeys(request_ids))
        cur = db.execute(
            "UPDATE acceptances SET suspect = ?, repaired = ?, defect_id = COALESCE(?, defect_id)"
            f" WHERE {where} request_id IN ({', '.join('?' * len(ids))})",
            (int(result.is_suspect), int(result.completion != result.original_completion), link, *ids),
        )
        return cur.rowcount

    def mark_accepted(
        self,
        request_id: str,
        *,
        uri: str | None = None,
        suspect: bool = False,
        repaired: bool = False,
        defect_id: int | None = None,
    ) -> int | None:
        """Store that the user accepted the completion served for ``request_id``.

        Updates the defect record (found by ``defect_id`` or by request id) and adds a row to
        ``acceptances``, in one transaction. Returns the defect record id, if there is one.
        Accepting twice changes nothing.
        """
        when = now_iso()
        try:
            with self._transaction() as db:
                if defect_id is None:
                    row = db.execute("SELECT id FROM defects WHERE request_id = ?", (request_id,)).fetchone()
                    defect_id = row[0] if row else None
                if defect_id is not None:
                    row = db.execute(
                        "SELECT suspect, chosen_completion != original_completion FROM defects WHERE id = ?",
                        (defect_id,),
                    ).fetchone()
                    if row is None:
                        defect_id = None
                    else:
                        suspect, repaired = bool(row[0]), bool(row[1])
                        db.execute(
                            "UPDATE defects SET accepted = 1, accepted_time = ?"
                            " WHERE id = ? AND accepted IS NULL",
                            (when, defect_id),
                        )
                db.execute(
                    "INSERT OR IGNORE INTO acceptances (request_id, time, uri, suspect, repaired, defect_id)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (request_id, when, uri, int(suspect), int(repaired), defect_id),
                )
        except sqlite3.Error as exc:
            raise _sql_error(exc, f"cannot write the defect log {self.path}") from exc
        return defect_id

    def settle(self, record_id: int | None, result: EngineResult, *, accepted: Sequence[str] = ()) -> bool:
        """A later verdict on an answer already recorded or accepted (repair mode's verdict on whole
        completions): record ``record_id`` now holds ``result``'s verdict (whether and when it was
        accepted are kept), and so do its acceptances and those of the request ids ``accepted``.
        One transaction. False when the record is gone (the log was cleared meanwhile).
        """
        verdict = self._verdict(result)
        try:
            with self._transaction() as db:
                found = False
                if record_id is not None:
                    cur = db.execute(
                        f"UPDATE defects SET {', '.join(f'{c} = ?' for c in verdict)} WHERE id = ?",
                        (*verdict.values(), record_id),
                    )
                    found = cur.rowcount > 0
                if found:
                    db.execute(
                        "UPDATE acceptances SET suspect = ?, repaired = ? WHERE defect_id = ?",
                        (verdict["suspect"], int(result.completion != result.original_completion), record_id),
                    )
                if accepted:
                    self._verdict_of_acceptances(db, result, "", accepted, link=None)
        except sqlite3.Error as exc:
            raise _sql_error(exc, f"cannot write the defect log {self.path}") from exc
        return found

    def clear(self) -> int:
        """Delete every record and acceptance; returns how many records were deleted."""
        try:
            with self._transaction() as db:
                n = db.execute("SELECT COUNT(*) FROM defects").fetchone()[0]
                db.execute("DELETE FROM acceptances")
                db.execute("DELETE FROM defects")
        except sqlite3.Error as exc:
            raise _sql_error(exc, f"cannot clear the defect log {self.path}") from exc
        return int(n)

    # -- reading --------------------------------------------------------------------------------
    @staticmethod
    def _record(row: tuple[Any, ...]) -> DefectRecord:
        values = dict(zip(_COLUMNS, row, strict=True))
        for name in _JSON_COLUMNS:
            values[name] = json.loads(values[name])
        # records written by older versions may hold a URL's credentials: never show or export them
        values["settings"] = safe_settings(values["settings"])
        values["suspect"] = bool(values["suspect"])
        values["accepted"] = None if values["accepted"] is None else bool(values["accepted"])
        return DefectRecord(**values)

    def list(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        uri: str | None = None,
        since: str | None = None,
        suspect_only: bool = False,
    ) -> tuple[list[DefectRecord], int]:
        """Records, newest first, and the total that matches the filter (for pagination).

        ``since``: an ISO 8601 time; only records at or after it.
        """
        where, args = [], []
        if uri is not None:
            where.append("uri = ?")
            args.append(uri)
        if since is not None:
            where.append("time >= ?")
            args.append(normalise_time(since))
        if suspect_only:
            where.append("suspect = 1")
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        total = self._query("SELECT COUNT(*) FROM defects" + clause, tuple(args))[0][0]
        rows = self._query(
            f"SELECT {', '.join(_COLUMNS)} FROM defects{clause} ORDER BY id DESC LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return [self._record(r) for r in rows], int(total)

    def iter_all(self) -> Iterator[DefectRecord]:
        """Every record, oldest first."""
        for row in self._query(f"SELECT {', '.join(_COLUMNS)} FROM defects ORDER BY id"):
            yield self._record(row)

    def get(self, record_id: int) -> DefectRecord | None:
        rows = self._query(f"SELECT {', '.join(_COLUMNS)} FROM defects WHERE id = ?", (record_id,))
        return self._record(rows[0]) if rows else None

    def get_by_request(self, request_id: str) -> DefectRecord | None:
        rows = self._query(f"SELECT {', '.join(_COLUMNS)} FROM defects WHERE request_id = ?", (request_id,))
        return self._record(rows[0]) if rows else None

    def stats(self) -> dict[str, int]:
        """Totals over the whole log (every session)."""
        records, suspect, accepted = self._query(
            "SELECT COUNT(*), COALESCE(SUM(suspect), 0), COALESCE(SUM(accepted), 0) FROM defects"
        )[0]
        acc, acc_repaired, acc_suspect = self._query(
            "SELECT COUNT(*), COALESCE(SUM(repaired), 0), COALESCE(SUM(suspect), 0) FROM acceptances"
        )[0]
        return {
            "records": int(records),
            "suspect_records": int(suspect),
            "accepted_records": int(accepted),
            "acceptances": int(acc),
            "acceptances_repaired": int(acc_repaired),
            "acceptances_suspect": int(acc_suspect),
        }

    # -- export ---------------------------------------------------------------------------------
    def export(self, out: IO[str], fmt: str = "jsonl") -> int:
        """Write every record to ``out`` as JSON lines or CSV (JSON columns as JSON text)."""
        if fmt not in EXPORT_FORMATS:
            raise DefectLogError(f"unknown export format '{fmt}'; choose jsonl or csv.")
        n = 0
        if fmt == "jsonl":
            for rec in self.iter_all():
                out.write(json.dumps(rec.to_dict(), ensure_ascii=False) + "\n")
                n += 1
            return n
        writer = csv.writer(out)
        writer.writerow(_COLUMNS)
        for rec in self.iter_all():
            d = rec.to_dict()
            writer.writerow(
                [
                    json.dumps(d[c], ensure_ascii=False)
                    if c in _JSON_COLUMNS
                    else ("" if d[c] is None else d[c])
                    for c in _COLUMNS
                ]
            )
            n += 1
        return n

    def export_to(self, path: str | Path, fmt: str = "jsonl") -> int:
        """Export to a file, written next to it first and renamed, so a crash leaves no half file.

        An existing ``path`` must be a regular file: a link, a directory or a device is refused.
        """
        target = log_path(path, "the export path")
        if fmt not in EXPORT_FORMATS:
            raise DefectLogError(f"unknown export format '{fmt}'; choose jsonl or csv.")
        if not target.parent.is_dir():
            raise DefectLogError(f"cannot export to {target}: {target.parent} is not a directory.")
        st = _lstat(target)
        problem = None if st is None else write_target_problem(st)
        if problem is not None:  # replacing it would change what it is, or what it names
            raise DefectLogError(f"cannot export to {target}: it {problem}; give the path of a regular file.")
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                n = self.export(fh, fmt)
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise DefectLogError(f"cannot export to {target}: {exc.strerror or exc}.") from exc
        return n


def normalise_time(value: str | float | int) -> str:
    """An ISO 8601 time (or Unix seconds) as the UTC text the log stores, for ``since`` filters.

    >>> normalise_time("2026-01-02T03:04:05Z")
    '2026-01-02T03:04:05.000000+00:00'
    >>> normalise_time(0)
    '1970-01-01T00:00:00.000000+00:00'
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        dt = datetime.fromtimestamp(float(value), timezone.utc)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise DefectLogError(f"'{value}' is not an ISO 8601 time such as 2026-01-31T12:00:00Z.") from exc
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
    else:
        raise DefectLogError(f"{value!r} is not a time; give ISO 8601 text or Unix seconds.")
    return dt.astimezone(timezone.utc).isoformat(timespec="microseconds")


__all__ = [
    "DefectRecord",
    "DefectStore",
    "EXPORT_FORMATS",
    "log_path",
    "normalise_time",
    "now_iso",
    "safe_settings",
]
