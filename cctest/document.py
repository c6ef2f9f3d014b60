"""Documents and cursors: read a source file safely and split it at a 1-based LINE:COL cursor."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import InputError, PositionError
from .types import Prompt
from .userfile import MAX_SOURCE_BYTES, read_user_bytes

_LOCATION = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+)$")


def parse_location(spec: str) -> tuple[str, int, int]:
    """Split ``FILE:LINE:COL`` (1-based LINE and COL).

    >>> parse_location("src/a.py:3:5")
    ('src/a.py', 3, 5)
    """
    m = _LOCATION.match(spec)
    if not m:
        raise InputError(f"'{spec}' is not a cursor location; write it as FILE:LINE:COL, e.g. main.py:12:5.")
    line, col = int(m["line"]), int(m["col"])
    if line < 1 or col < 1:
        raise PositionError(f"'{spec}': LINE and COL are 1-based, so both must be at least 1.")
    return m["path"], line, col


def read_source(path: str | Path) -> str:
    """The text of a UTF-8 source file, or an InputError saying in one sentence why not.

    Only a regular file of at most ``MAX_SOURCE_BYTES`` (``cctest.userfile``): not ``/dev/zero``,
    not a named pipe.
    """
    p = Path(path)
    data = read_user_bytes(p, limit=MAX_SOURCE_BYTES, what="Python source file")
    if b"\x00" in data:
        raise InputError(f"{p} is a binary file, not Python source.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{p} is not valid UTF-8 (byte {exc.start}); cctest reads UTF-8 source only."
        ) from exc
    # the editor's view of the text: universal newlines
    return text.replace("\r\n", "\n").replace("\r", "\n")


PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")


def looks_like_python(path: str | Path, text: str) -> bool:
    """Whether a file says it is Python: its suffix, or a ``#!`` line that runs python.

    >>> looks_like_python("notes.md", "# Title\\n"), looks_like_python("tool", "#!/usr/bin/env python3\\n")
    (False, True)
    """
    if Path(path).suffix.lower() in PYTHON_SUFFIXES:
        return True
    first = text.split("\n", 1)[0]
    return first.startswith("#!") and "python" in first


def offset_of(text: str, line: int, col: int) -> int:
    """Character offset of a 1-based cursor; COL may be one past the end of its line.

    >>> offset_of("ab\\ncd\\n", 2, 3)
    5
    """
    lines = text.split("\n")
    if line < 1 or line > len(lines):
        raise PositionError(f"line {line} is outside the document, which has {len(lines)} lines.")
    length = len(lines[line - 1])
    if col < 1 or col > length + 1:
        raise PositionError(
            f"column {col} is outside line {line}, which has {length} characters "
            f"(the last cursor column is {length + 1})."
        )
    return sum(len(x) + 1 for x in lines[: line - 1]) + col - 1


def prompt_at(text: str, line: int, col: int, path: str | None = None) -> Prompt:
    """The prompt (text before the cursor) and suffix (text after it) at a 1-based cursor."""
    off = offset_of(text, line, col)
    return Prompt(text=text[:off], suffix=text[off:], path=path, line=line, col=col)
