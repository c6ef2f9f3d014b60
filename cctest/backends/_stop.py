"""Where a code completion should end, shared by every backend (local model and HTTP servers).

A completion model keeps writing past the code the user is typing: the next function, the next
class, the rest of the file. Both backends cut a completion at the first of

* a stop sequence the user configured (``Settings.stop``), the sequence itself excluded;
* a line that leaves the block the cursor is in: a non-blank line indented less than that block
  (the "floor", inferred from the prompt's last line);
* a new top-level ``def`` / ``class`` / ``async def`` / decorator at column 0, once the
  completion has written something else before it (so a completion that *starts* a function at
  the top level is kept whole);

then drop the blank lines left before the cut. The local backend runs the same check on each
row's decoded text after every generated token (``BoundaryStopper.stop_index``) so a row stops
as soon as its boundary appears; the HTTP backend applies it to what a server returned. Fitting a
completion to the code after the cursor and to the completion scope is the engine's
(``cctest/fit.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..fit import drop_trailing_blank_lines

_TOP_LEVEL = re.compile(r"(?:async[ \t]+def|def|class)[ \t(:]|@")
_OPENS_BLOCK = re.compile(r":[ \t]*(?:#.*)?$")


def indent_width(line: str) -> int:
    """Columns of leading whitespace, tabs expanded to multiples of 8 (Python's rule)."""
    width = 0
    for ch in line:
        if ch == " ":
            width += 1
        elif ch == "\t":
            width = (width // 8 + 1) * 8
        elif ch == "\f":
            width = 0
        else:
            break
    return width


def block_floor(prompt: str) -> int:
    """The least indentation a completion line may have and still belong to the cursor's block.

    >>> block_floor("def f(x):\\n    return ")       # inside the body: stay at 4 or deeper
    4
    >>> block_floor("def f(x):\\n")                  # a body is about to start: deeper than 0
    1
    >>> block_floor("class A:\\n    def f(self):\\n        x = 1\\n")
    8
    >>> block_floor("import os\\n")                  # top level: nothing is a dedent
    0
    """
    head, _, last = prompt.rpartition("\n")
    if last.strip():  # the cursor is on a line that already has code: its block is that line's
        return indent_width(last)
    if last:  # the user typed indentation only: trust it
        return indent_width(last)
    # at column 0 of an empty line: take the block of the last line with code
    for line in reversed(head.split("\n")):
        if line.strip() and not line.lstrip().startswith("#"):
            width = indent_width(line)
            return width + 1 if _OPENS_BLOCK.search(line) else width
    return 0


class BoundaryStopper:
    """Finds the cut point of completions of one prompt (its floor is computed once)."""

    def __init__(self, prompt: str, stop: Sequence[str] = (), *, boundaries: bool = True) -> None:
        self.floor = block_floor(prompt)
        self.stop = tuple(s for s in stop if s)
        self.boundaries = boundaries
        # the completion's first line continues the cursor's line unless the cursor is at column 0
        self.starts_line = prompt == "" or prompt.endswith("\n")

    def stop_index(self, text: str) -> int | None:
        """Index in ``text`` where the completion ends, or None while it may go on."""
        cut: int | None = None
        for s in self.stop:
            i = text.find(s)
            if i >= 0 and (cut is None or i < cut):
                cut = i
        if self.boundaries:
            b = self._boundary(text if cut is None else text[:cut])
            if b is not None:
                cut = b
        return cut

    def _boundary(self, text: str) -> int | None:
        pos = 0
        first = True
        wrote_code = False  # a non-blank, non-decorator line seen before
        for line in text.split("\n"):
            start, pos = pos, pos + len(line) + 1
            candidate = self.starts_line or not first
            first = False
            if not line.strip():
                continue
            if candidate:
                # a line is judged once its first character of code is there
                if indent_width(line) < self.floor:
                    return start
                if indent_width(line) == 0 and _TOP_LEVEL.match(line) and wrote_code:
                    return start
            wrote_code = wrote_code or not line.lstrip().startswith("@")
        return None

    def trim(self, text: str) -> str:
        """``text`` cut at its stop point, without the blank lines left before the cut."""
        cut = self.stop_index(text)
        if cut is None:
            return text
        # without boundaries this is a plain stop-sequence cut (OpenAI's): the text before it, as is
        return drop_trailing_blank_lines(text[:cut]) if self.boundaries else text[:cut]


def trim_completion(prompt: str, text: str, stop: Sequence[str] = (), *, boundaries: bool = True) -> str:
    """Cut one completion of ``prompt`` at its natural end (see the module docstring).

    >>> trim_completion("def f(x):\\n    return ", "x + 1\\n\\n\\ndef g():\\n    pass\\n")
    'x + 1\\n'
    >>> trim_completion("def f(x):\\n", "    y = x\\n    return y\\nprint(f(1))\\n")
    '    y = x\\n    return y\\n'
    >>> trim_completion("x = ", "foo(1)  # END rest", stop=["# END"])
    'foo(1)'
    """
    return BoundaryStopper(prompt, stop, boundaries=boundaries).trim(text)


__all__ = [
    "BoundaryStopper",
    "block_floor",
    "indent_width",
    "trim_completion",
]
