"""Reading a file a user names: a regular file only, up to a size limit, one sentence otherwise.

Every path the CLI reads on a user's word (a source file, ``--context``, a dataset or task file,
``@FILE`` arguments, a run directory's records) goes through :func:`read_user_bytes`. A device
(``/dev/zero`` never ends), a named pipe (``open`` waits for a writer) or a socket is refused
before a byte is read, and so is a file over the limit, so a wrong path costs neither memory nor
a hang. Gzip files (``.gz``) are unpacked under the same limit, so a small file that unpacks to
gigabytes is refused too.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from pathlib import Path

from .errors import CCTestError, InputError

MAX_SOURCE_BYTES = 4 * 1024 * 1024  # a Python file this large is not written by hand
MAX_DATA_BYTES = 512 * 1024 * 1024  # a dataset or task file, unpacked


def _size(n: int) -> str:
    """``n`` bytes in words: ``4 MiB``, ``512 MiB``, ``100 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} bytes"


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
        try:
            data = f.read() if limit is None else f.read(limit + 1)  # it may have grown since
        except OSError as exc:
            raise error(f"{p} cannot be read: {exc.strerror or exc}.") from None
    if limit is not None and len(data) > limit:
        raise error(f"{p} is larger than {_size(limit)}, the limit for a {what}.")
    return data


def _check(p: Path, st: os.stat_result, limit: int | None, what: str, error: type[CCTestError]) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{p} is a directory; give a {what}.")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{p} is not a regular file (a device, a pipe or a socket); give a {what}.")
    if limit is not None and st.st_size > limit:
        raise error(f"{p} is larger than {_size(limit)}, the limit for a {what}.")


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
        raise error(f"{p} unpacks to more than {_size(limit)}, the limit for a {what}.")
    return out


__all__ = ["MAX_DATA_BYTES", "MAX_SOURCE_BYTES", "read_user_bytes", "read_user_text"]
