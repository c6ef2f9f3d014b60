"""Half-typed code: cut the text before the cursor into a small window that can be analysed.

In an editor the prompt rarely parses: its last line is unfinished and blocks are open. Mutation
never needs the whole document, only the code near the cursor, so ``find_window`` splits the
prompt into three parts::

    head  | text before the window, sent to the model untouched
    body  | complete lines (the enclosing function, or the last few statements) that parse once
          | a stub statement closes an open block (``pass`` at the right indentation)
    tail  | the unfinished rest up to the cursor: never parsed, only renamed by a tolerant scanner

The window is found by a cheap scan backwards over lines (indentation only): the innermost
``def`` whose body holds the cursor, with its decorators. When the cursor is not inside a function
(module or class level), or the function is too long to analyse per keystroke, the window is the
last few sibling statements instead. A window that starts indented is analysed under an
``if 1:`` line, which needs no dedenting and so never touches the text of strings. The body is
made parsable by moving trailing lines into the tail, guided by ``SyntaxError.lineno`` (an
unclosed bracket is reported where it opens).

``prompt == window.head + window.body + window.tail`` always holds.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .cache import LRU

# a window larger than this is not analysed as a whole function (the cost of libcst grows with it)
MAX_FUNCTION_LINES = 150
MAX_WINDOW_CHARS = 8000
FALLBACK_LINES = 40
FALLBACK_TRIES = 4
MAX_SCAN_LINES = 600
MAX_CUTS = 12

STUB_COMMENT = "# cctest: stub"
_DEF = re.compile(r"(?:async[ \t]+)?def[ \t]")
_HEADER_COMMENT = re.compile(r"#[^'\"]*$")
_CONTINUATION_START = re.compile(r"[)\]},.]|(?:else|elif|except|finally)\b")


@dataclass(frozen=True)
class Window:
    """The part of a prompt that is analysed and mutated; see the module docstring."""

    head: str
    body: str
    tail: str
    wrapper: str = ""  # "if 1:\n" when the body starts indented
    stub: str = ""  # the statement closing an open block, or ""
    tail_in_scope: bool = False  # the tail continues the body's (first) function: renames apply to it

    @property
    def source(self) -> str:
        """The parsable text that is analysed: wrapper + body + stub."""
        return self.wrapper + self.body + self.stub


def _indent(line: str) -> int:
    return (
        len(line) - len(line.lstrip(" \t"))
        if "\t" not in line
        else len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())
    )


def _is_code(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def find_window(prompt: str) -> Window | None:
    """The window to mutate for the text before a cursor, or None when there is nothing to analyse."""
    cut = prompt.rfind("\n") + 1
    cursor_line = prompt[cut:]
    # only the last MAX_SCAN_LINES lines are ever looked at: never split the whole document
    base = cut  # the start of a line; walk back MAX_SCAN_LINES line starts
    for _ in range(MAX_SCAN_LINES):
        if base == 0:
            break
        base = prompt.rfind("\n", 0, base - 1) + 1
    lines = [x + "\n" for x in prompt[base:cut].split("\n")[:-1]]
    n = len(lines)
    if n == 0:
        return None

    # innermost enclosing def: the first def line, going backwards, that is less indented than
    # every code line after it (a less-indented line that is not a def is an enclosing block)
    min_ind = _indent(cursor_line) if cursor_line.strip() else 1 << 30
    func_start = None
    for i in range(n - 1, max(-1, n - 1 - MAX_SCAN_LINES), -1):
        line = lines[i]
        if not _is_code(line):
            continue
        ind = _indent(line)
        if ind < min_ind:
            if _DEF.match(line.lstrip(" \t")):
                func_start = i
                while (
                    func_start > 0
                    and lines[func_start - 1].lstrip(" \t").startswith("@")
                    and _indent(lines[func_start - 1]) == ind
                ):
                    func_start -= 1
                break
            min_ind = ind
            if ind == 0:
                break

    end = n
    if func_start is not None:
        small = (
            n - func_start <= MAX_FUNCTION_LINES
            and sum(len(x) for x in lines[func_start:n]) <= MAX_WINDOW_CHARS
        )
        if small:
            w = _make_window(prompt, base, lines, func_start, n, in_scope=True)
            if w is not None:
                return w
            end = func_start  # the function does not parse yet (its header is unfinished): before it
    # the farthest statement start first; a start that cannot parse (inside a multi-line string,
    # say) gives way to the next nearer one
    for start in _fallback_starts(lines, end, cursor_line)[:FALLBACK_TRIES]:
        w = _make_window(prompt, base, lines, start, end, in_scope=False)
        if w is not None:
            return w
    return None


def _fallback_starts(lines: list[str], end: int, cursor_line: str) -> list[int]:
    """Statement starts within FALLBACK_LINES before ``end`` at the block's level, farthest first."""
    min_ind = _indent(cursor_line) if cursor_line.strip() and end == len(lines) else 1 << 30
    starts: list[int] = []
    chars = 0
    for i in range(end - 1, max(-1, end - 1 - FALLBACK_LINES), -1):
        line = lines[i]
        chars += len(line)
        if chars > MAX_WINDOW_CHARS:
            break
        if not _is_code(line):
            continue
        ind = _indent(line)
        if ind <= min_ind:
            if not _CONTINUATION_START.match(line.lstrip(" \t")):
                start = i
                # a decorated definition starts at its first decorator
                while start > 0 and lines[start - 1].lstrip(" \t").startswith("@"):
                    start -= 1
                starts.append(start)
            min_ind = ind
    return sorted(set(starts))


def _stub_for(body_lines: list[str]) -> str:
    for line in reversed(body_lines):
        if not _is_code(line):
            continue
        code = _HEADER_COMMENT.sub("", line).rstrip()
        if code.endswith(":"):
            prefix = line[: len(line) - len(line.lstrip(" \t"))]
            return prefix + ("\t" if "\t" in prefix else "    ") + "pass  " + STUB_COMMENT + "\n"
        return ""
    return ""


_parse_cache: LRU[str, SyntaxError | None] = LRU(256)


def _parses(source: str) -> SyntaxError | None:
    """The SyntaxError of ``source``, or None; remembered, since successive keystrokes in the
    unfinished line ask about the same complete lines again."""
    return _parse_cache.get_or_compute(source, lambda: _compile_error(source))


def _compile_error(source: str) -> SyntaxError | None:
    try:
        compile(source, "<window>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, MemoryError, RecursionError) as exc:  # null bytes, absurd nesting
        return SyntaxError(str(exc))
    return None


def _make_window(
    prompt: str, base: int, lines: list[str], start: int, end: int, *, in_scope: bool
) -> Window | None:
    """Cut lines[start:end] until it parses (with a stub); the rest of the prompt becomes the tail.

    ``lines`` are the prompt's complete lines from offset ``base`` on."""
    head_len = base + sum(len(x) for x in lines[:start])
    first = next((x for x in lines[start:end] if _is_code(x)), "")
    wrapper = "if 1:\n" if first[:1] in (" ", "\t") else ""
    offset = 1 if wrapper else 0
    for _ in range(MAX_CUTS):
        body_lines = lines[start:end]
        if not any(_is_code(x) for x in body_lines):
            return None
        if body_lines[-1][-1:] != "\n":  # only complete lines belong to the body
            end -= 1
            continue
        stub = _stub_for(body_lines)
        body = "".join(body_lines)
        err = _parses(wrapper + body + stub)
        if err is None:
            return Window(
                head=prompt[:head_len],
                body=body,
                tail=prompt[head_len + len(body) :],
                wrapper=wrapper,
                stub=stub,
                tail_in_scope=in_scope,
            )
        bad = (err.lineno or 0) - 1 - offset  # index into body_lines of the line the error names
        end = start + bad if 0 < bad < len(body_lines) - 1 else end - 1
        if end <= start:
            return None
    return None


__all__ = ["Window", "find_window", "STUB_COMMENT", "MAX_FUNCTION_LINES"]
