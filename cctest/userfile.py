"""Files a user names: read as a regular file only, up to a size limit; written only where no
special file is; one sentence otherwise.

Every path the CLI reads on a user's word (a source file, ``--context``, a dataset or task file,
``@FILE`` arguments, a run directory's records) goes through :func:`read_user_bytes`. A device
(``/dev/zero`` never ends), a named pipe (``open`` waits for a writer) or a socket is refused
before a byte is read, and so is a file over the limit, so a wrong path costs neither memory nor
a hang. Gzip files (``.gz``) are unpacked under the same limit, so a small file that unpacks to
gigabytes is refused too.

A JSONL file (a dataset, a task file, a run's records) is read a line at a time
(:func:`read_user_lines`, :func:`iter_user_lines`), each line up to a bound of its own, so memory
holds one line, never the whole file: a file of one endless line is refused after its first
``MAX_LINE_BYTES``.

Every path cctest writes on a user's word (``bench export --out``, a run directory's files, a
comparison, the defect log and its exports, ``--answers-cache``, a log file) is checked first with
:func:`check_write_target`: a device, a named pipe, a socket or a directory there is refused with
one sentence. A file is written whole through a temporary file renamed over the path, and a rename
replaces whatever the path names: without the check, ``--out /dev/null`` would put a regular file
in the place of the system's ``/dev/null``.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import os
import re
import stat
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from .errors import CCTestError, InputError

MAX_SOURCE_BYTES = 4 * 1024 * 1024  # a Python file this large is not written by hand
MAX_DATA_BYTES = 512 * 1024 * 1024  # a dataset or task file, unpacked
MAX_LINE_BYTES = 64 * 1024 * 1024  # one line of a dataset or task file (one task)


def human_size(n: int) -> str:
    """``n`` bytes in words: ``4 MiB``, ``512 MiB``, ``100 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} bytes"


@contextmanager
def _open_checked(p: Path, limit: int | None, what: str, error: type[CCTestError]) -> Iterator[BinaryIO]:
    """The regular file at ``p``, open for reading in binary, checked before it is opened and again
    once open (``error``'s one sentence otherwise); reading it is the caller's."""
    try:
        before = os.stat(p)  # refuse a device before opening it: opening one can have effects
    except FileNotFoundError:
        raise error(f"{p}: no such file.") from None
    except OSError as exc:
        raise error(f"{p} cannot be read: {exc.strerror or exc}.") from None
    _check(p, before, limit, what, error)
    try:
        # O_NONBLOCK: should the path have become a named pipe meanwhile, opening it does not wait
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"{p} cannot be read: {exc.strerror or exc}.") from None
    with os.fdopen(fd, "rb") as f:
        _check(p, os.fstat(fd), limit, what, error)  # what was opened, not what the path names now
        yield f


def read_user_bytes(
    path: str | Path,
    *,
    limit: int | None,
    what: str = "file",
    error: type[CCTestError] = InputError,
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them (None: no limit).

    ``what`` names the file the user should give instead (``"Python source file"``); ``error`` is
    the one-sentence exception raised otherwise (missing, a directory, not a regular file, too
    large, unreadable).
    """
    p = Path(path)
    with _open_checked(p, limit, what, error) as f:
        try:
            data = f.read() if limit is None else f.read(limit + 1)  # it may have grown since
        except OSError as exc:
            raise error(f"{p} cannot be read: {exc.strerror or exc}.") from None
    if limit is not None and len(data) > limit:
        raise error(f"{p} is larger than {human_size(limit)}, the limit for a {what}.")
    return data


def _check(p: Path, st: os.stat_result, limit: int | None, what: str, error: type[CCTestError]) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{p} is a directory; give a {what}.")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{p} is not a regular file (a device, a pipe or a socket); give a {what}.")
    if limit is not None and st.st_size > limit:
        raise error(f"{p} is larger than {human_size(limit)}, the limit for a {what}.")


def write_target_problem(st: os.stat_result, *, link_ok: bool = False) -> str | None:
    """What is wrong with writing a file where something whose own status (``lstat``) is ``st``
    already is (None: nothing, a regular file to replace). A symbolic link is a problem unless
    ``link_ok`` (a writer that replaces the link itself, never writing through it)."""
    if stat.S_ISLNK(st.st_mode):
        return None if link_ok else "is a symbolic link"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a device, a pipe or a socket)"
    return None


def check_write_target(
    path: str | Path,
    *,
    what: str = "file",
    error: type[CCTestError] = InputError,
    link_ok: bool = False,
) -> None:
    """Refuse, with ``error``'s one sentence, to write the file ``path`` (a ``what``) when something
    other than a regular file is there (``write_target_problem``); nothing there is fine."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
        raise error(f"cannot write the {what} {p}: {reason}.") from None
    problem = write_target_problem(st, link_ok=link_ok)
    if problem is not None:
        raise error(f"cannot write the {what} {p}: it {problem}; give the path of a regular file.")


def read_user_text(
    path: str | Path,
    *,
    limit: int | None = MAX_DATA_BYTES,
    what: str = "file",
    error: type[CCTestError] = InputError,
) -> str:
    """The UTF-8 text of a file a user names (``.gz``: unpacked, within the same ``limit``).

    Newlines are read as a text file reads them (``\\r\\n`` and ``\\r`` become ``\\n``).
    """
    data = read_user_bytes(path, limit=limit, what=what, error=error)
    if str(path).endswith(".gz"):
        data = _gunzip(Path(path), data, limit, what, error)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{path} is not valid UTF-8 (byte {exc.start}); cctest reads UTF-8 text only.") from None
    return io.StringIO(text, newline=None).read()


def _gunzip(p: Path, data: bytes, limit: int | None, what: str, error: type[CCTestError]) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read() if limit is None else f.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise error(f"{p} is not a readable gzip file ({exc}).") from None
    if limit is not None and len(out) > limit:
        raise error(f"{p} unpacks to more than {human_size(limit)}, the limit for a {what}.")
    return out


# a run of lines that hold nothing but whitespace (what ``str.isspace`` counts as such in ASCII),
# up to the last line end of the run
_BLANK_RUN = re.compile(rb"[\t\n\x0b\x0c\r\x1c-\x1f ]*\n")


def iter_user_lines(
    path: str | Path,
    *,
    limit: int | None,
    line_limit: int = MAX_LINE_BYTES,
    what: str = "file",
    error: type[CCTestError] = InputError,
    blank_runs: bool = False,
) -> Iterator[bytes]:
    """The lines of the regular file at ``path`` (``.gz``: unpacked), one at a time, each with its
    ``\\n`` (the last one may lack it). Only one line is in memory at a time: a line longer than
    ``line_limit`` bytes (its newline not counted) is ``error`` once ``line_limit`` bytes of it are
    read, and so is a file (unpacked) over ``limit`` bytes (None: no limit).

    ``blank_runs``: lines holding only whitespace come several at once, as one item of whole lines
    (as much of the run as the reader holds): a file of millions of blank lines costs its reading
    and a few steps per buffer, not a step per line."""
    p = Path(path)
    packed = str(path).endswith(".gz")
    with _open_checked(p, limit, what, error) as f:
        stream: BinaryIO = gzip.GzipFile(fileobj=f) if packed else f  # type: ignore[assignment]
        total, number = 0, 0
        while True:
            try:
                run = _BLANK_RUN.match(stream.peek(1)) if blank_runs else None  # type: ignore[attr-defined]
                line = stream.read(run.end()) if run else stream.readline(line_limit + 1)
            except (OSError, EOFError, zlib.error) as exc:
                if packed:
                    raise error(f"{p} is not a readable gzip file ({exc}).") from None
                raise error(f"{p} cannot be read: {getattr(exc, 'strerror', None) or exc}.") from None
            if not line:
                return
            number += line.count(b"\n") if run else 1
            if len(line) > line_limit and not line.endswith(b"\n"):
                raise error(
                    f"{p} line {number} is longer than {human_size(line_limit)}, "
                    f"the limit for a line of a {what}."
                )
            total += len(line)
            if limit is not None and total > limit:
                grown = "unpacks to more than" if packed else "is larger than"
                raise error(f"{p} {grown} {human_size(limit)}, the limit for a {what}.")
            yield line


def read_user_lines(
    path: str | Path,
    *,
    limit: int | None = MAX_DATA_BYTES,
    line_limit: int = MAX_LINE_BYTES,
    what: str = "file",
    error: type[CCTestError] = InputError,
    skip_blank: bool = False,
) -> Iterator[tuple[int, str]]:
    """``(number, text)`` of each line of a UTF-8 text file a user names, one line in memory at a
    time (``iter_user_lines``: the same bounds), numbered and split as ``read_user_text`` splits
    (``\\n``, ``\\r\\n`` and a lone ``\\r`` end a line), without its line end.

    ``skip_blank``: lines holding only whitespace are not given (the others keep their numbers),
    and runs of them are passed over a buffer at a time (``iter_user_lines``' ``blank_runs``)."""
    number, offset = 0, 0
    lines = iter_user_lines(
        path, limit=limit, line_limit=line_limit, what=what, error=error, blank_runs=skip_blank
    )
    for raw in lines:
        if skip_blank and raw.count(b"\n") > 1:  # (a run of blank lines: each line end, each lone \r)
            number += raw.count(b"\n") + raw.count(b"\r") - raw.count(b"\r\n")
            offset += len(raw)
            continue
        start = len(codecs.BOM_UTF8) if offset == 0 and raw.startswith(codecs.BOM_UTF8) else 0
        try:
            text = raw[start:].decode("utf-8")
        except UnicodeDecodeError as exc:
            byte = offset + start + exc.start
            raise error(f"{path} is not valid UTF-8 (byte {byte}); cctest reads UTF-8 text only.") from None
        offset += len(raw)
        body = text[:-1] if text.endswith("\n") else text
        if text.endswith("\r\n"):
            body = body[:-1]
        for piece in body.split("\r"):
            number += 1
            if not skip_blank or piece.strip():
                yield number, piece


def load_json(text: str | bytes) -> Any:
    """``json.loads``, with a value nested too deeply for the parser (``[`` a hundred thousand
    times) a ``json.JSONDecodeError`` like any other malformed JSON, not a ``RecursionError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text if isinstance(text, str) else "", 0) from None


__all__ = [
    "MAX_DATA_BYTES",
    "MAX_LINE_BYTES",
    "MAX_SOURCE_BYTES",
    "check_write_target",
    "iter_user_lines",
    "load_json",
    "read_user_bytes",
    "read_user_lines",
    "read_user_text",
    "write_target_problem",
]
