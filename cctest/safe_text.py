"""Text from outside cctest made safe: once where a model's text enters, and where text reaches a terminal.

A model's answer is text cctest did not write. JSON allows a lone surrogate (``"\\ud800"``), which no
UTF-8 file, database or terminal can hold: every backend passes what a model wrote through
:func:`model_text` where it enters (the HTTP backend's parsed answers and error details, the hf
backend's decoded tokens; the proxy's parsed requests and upstream answers, through
:func:`model_json`), so everything after it (the engine, the suites' records, the defect log,
the terminal) sees valid text.

A model's answer, a task id or a benchmark's exception may also hold control characters (a screen
clear ``\\x1b[2J``, a window-title change ``\\x1b]0;…\\x07``, a hyperlink ``\\x1b]8;;…``).
:func:`terminal_text` shows them as visible escapes; it is applied to what is written to a terminal
(:func:`for_stream`) and to every log line (:class:`cctest.redact.RedactingFormatter`). Output to a
pipe or a file is written exactly.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

REPLACEMENT = "\ufffd"

# C0 controls but tab and newline, DEL, and C1 controls (\x9b is a terminal's one-byte CSI)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def model_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD; everything else kept.

    >>> model_text("a\\ud800b") == "a\\ufffdb"
    True
    >>> model_text("\\ud83d\\ude00 é") == "\\U0001f600 é"  # a pair in order is its character
    True
    >>> model_text("\\ude00\\ud83d") == "\\ufffd\\ufffd"  # a pair split or reversed is not
    True
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def model_json(value: Any) -> Any:
    """Parsed JSON from outside cctest with :func:`model_text` applied to every string in it (keys
    included); everything else kept. Walked with a stack of its own, not by recursion, so a value
    nested as deeply as ``json.loads`` reads (a thousand levels) is made safe too.

    >>> model_json({"id": "a\\ud800", "n": [1, "\\udfff"]}) == {"id": "a\\ufffd", "n": [1, "\\ufffd"]}
    True
    >>> model_json([[["\\ud800"]]]) == [[["\\ufffd"]]]
    True
    """
    if not isinstance(value, (list, dict)):
        return model_text(value) if isinstance(value, str) else value
    out: list[Any] | dict[Any, Any] = [] if isinstance(value, list) else {}
    stack: list[tuple[Any, Any]] = [(value, out)]
    while stack:
        source, copy = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, (list, dict)):
                made: Any = [] if isinstance(item, list) else {}
                stack.append((item, made))  # filled in later, in place
            else:
                made = model_text(item) if isinstance(item, str) else item
            if isinstance(copy, dict):
                copy[model_text(key) if isinstance(key, str) else key] = made
            else:
                copy.append(made)
    return out


def terminal_text(text: str) -> str:
    """``text`` with its control characters but newline and tab shown as ``\\xNN`` escapes.

    >>> print(terminal_text("x = 1\\x1b[2J\\x1b]0;owned\\x07\\ny\\r"))
    x = 1\\x1b[2J\\x1b]0;owned\\x07
    y\\x0d
    """
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def for_stream(text: str, stream: TextIO) -> str:
    """``text`` as it is written to ``stream``: escaped (:func:`terminal_text`) when the stream is a
    terminal, exact otherwise (a pipe, a file)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        tty = False
    return terminal_text(text) if tty else text


__all__ = ["REPLACEMENT", "for_stream", "model_json", "model_text", "terminal_text"]
