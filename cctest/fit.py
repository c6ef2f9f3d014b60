"""Fitting a completion to where it goes: the engine's last step on every backend's text.

``fit_completion`` cuts a completion where it starts repeating the code after the cursor (a model
that does not see that code, or sees it and writes it again, duplicates it), then to the
completion scope: ``line`` keeps its first line only (``auto``: one line when the cursor is inside
an unfinished line, a block on an empty one). The engine applies it to every completion, after the
backend cut each at its natural end (``cctest/backends/_stop.py``, which takes
``drop_trailing_blank_lines`` from here: this module imports nothing of cctest, so it sits below
both).
"""

from __future__ import annotations


def drop_trailing_blank_lines(text: str) -> str:
    """``text`` without the blank lines at its end, keeping the newline that ends its last line."""
    body = text.rstrip(" \t\r\n\f")
    if body != text and "\n" in text[len(body) :]:
        return body + "\n"
    return text if body == text else body


_REPEAT_LINES = 2  # this many of the suffix's first code lines, written again, mark a repeat


def cut_repeat(prompt: str, text: str, suffix: str) -> str:
    """``text`` cut where it starts repeating ``suffix`` (the code after the cursor).

    A repeat is the rest of the cursor's line written at the end of the completion's first line,
    or a completion line from which the suffix's first non-blank lines follow (two of them, or
    the one the completion ends with), compared without their indentation.

    >>> cut_repeat("print(f(", "x))", "))")
    'x'
    >>> cut_repeat("def f(x):\\n", "    y = x + 1\\n    return y\\n", "    return y\\n\\nf(1)\\n")
    '    y = x + 1\\n'
    """
    if not suffix.strip():
        return text
    rest_of_line = suffix.split("\n", 1)[0]
    lines = text.split("\n")
    if rest_of_line.strip() and lines[0].rstrip().endswith(rest_of_line.strip()):
        head = lines[0].rstrip()
        return head[: len(head) - len(rest_of_line.strip())].rstrip()
    wanted = [ln.strip() for ln in suffix.split("\n") if ln.strip()][:_REPEAT_LINES]
    starts_line = prompt == "" or prompt.endswith("\n") or not prompt.split("\n")[-1].strip()
    pos = 0
    for j, line in enumerate(lines):
        start, pos = pos, pos + len(line) + 1
        if j == 0 and not starts_line:
            continue
        if not line.strip():
            continue
        following = [ln.strip() for ln in lines[j:] if ln.strip()][: len(wanted)]
        if following == wanted or (following and following == wanted[: len(following)] and j > 0):
            return drop_trailing_blank_lines(text[:start])
    return text


def fit_completion(prompt: str, text: str, suffix: str = "", scope: str = "block") -> str:
    """``text`` cut where it repeats the code after the cursor, then to the completion ``scope``:
    ``line`` keeps its first line, ``block`` all of it, ``auto`` one line when the cursor is
    inside an unfinished line (code before it on its line) and a block otherwise.

    >>> fit_completion("x = foo(", "1)\\ny = 2\\n", "", "auto")
    '1)'
    >>> fit_completion("def f():\\n    ", "a = 1\\n    return a\\n", "", "auto")
    'a = 1\\n    return a\\n'
    """
    text = cut_repeat(prompt, text, suffix)
    if scope == "auto":
        scope = "line" if prompt.split("\n")[-1].strip() else "block"
    if scope == "line":
        first = text.lstrip("\n") if not text.split("\n")[0].strip() else text
        return first.split("\n", 1)[0]
    return text


__all__ = ["cut_repeat", "drop_trailing_blank_lines", "fit_completion"]
