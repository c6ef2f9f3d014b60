"""De-mutation: map the identifiers a mutant invented back to the user's, in code that need not parse.

Completions start mid-line and end anywhere (``Param1 + 1)\\n    return``), and the unfinished
tail of a prompt is rarely valid Python, so neither ``ast`` nor ``tokenize`` can be used. A small
tolerant scanner finds the identifiers that are *references to variables*: it skips string
literals (but looks inside the ``{...}`` fields of f-strings, which are code), comments, attribute
names after ``.``, and keyword-argument names in calls (``f(b=1)``: ``b`` names a parameter of
``f``, not a variable in scope). Unterminated strings and brackets are tolerated.

The same scanner renames the unfinished tail of a prompt (old -> new) when a mutant is made, so the
two directions always agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

_STRING_START = re.compile(r"(?:[rRuUbBfF]|[rR][bBfF]|[bBfF][rR])?(?:'''|\"\"\"|'|\")")
_NAME = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"\d[\w.]*")  # so that 1e5 or 0x1F never yields a name 'e5' / 'x1F'
_SPACE = " \t\f"


def _string_end(text: str, start: int, quote: str) -> int:
    """Index just after the string body that starts at ``start`` (tolerates unterminated strings)."""
    i, n, triple = start, len(text), len(quote) == 3
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        if ch == "\n" and not triple:
            return i  # an unterminated single-quoted string ends at the line's end
        i += 1
    return n


def _fstring_fields(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the expression part of every replacement field of an f-string body."""
    i = start
    while i < end:
        ch = text[i]
        if ch == "{":
            if text.startswith("{{", i):
                i += 2
                continue
            depth, j = 0, i + 1
            expr_end = spec_start = None
            while j < end:
                c = text[j]
                if c in "([{":
                    depth += 1
                elif c in ")]}":
                    if depth == 0:
                        break
                    depth -= 1
                elif c in "'\"":
                    m = _STRING_START.match(text, j)
                    q = m.group(0) if m else c
                    j = _string_end(text, j + len(q), q)
                    continue
                elif depth == 0 and (c == ":" or (c == "!" and text[j + 1 : j + 2] != "=")):
                    if expr_end is None:
                        expr_end = j
                    if c == ":" and spec_start is None:
                        spec_start = j + 1
                j += 1
            yield i + 1, (expr_end if expr_end is not None else j)
            if spec_start is not None:
                yield from _fstring_fields(text, spec_start, j)  # nested fields in a format spec
            i = j + 1
            continue
        if ch == "\\":
            i += 2
            continue
        i += 1


def identifiers(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every identifier in ``text`` that refers to a variable.

    >>> [("x = a.b + f(c=d, e) # g")[s:e] for s, e in identifiers("x = a.b + f(c=d, e) # g")]
    ['x', 'a', 'f', 'd', 'e']
    >>> src = 'f"{Param1!r:>{w}} {{no}}" + "Param1"'
    >>> [src[s:e] for s, e in identifiers(src)]
    ['Param1', 'w']
    """
    yield from _identifier_spans(text, 0, len(text))


def _identifier_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    brackets: list[str] = []
    prev = ""  # the last significant character before the current token
    i = start
    while i < end:
        ch = text[i]
        if ch in _SPACE or ch == "\n" or ch == "\\":
            i += 1
            continue
        if ch == "#":
            nl = text.find("\n", i, end)
            i = end if nl < 0 else nl
            continue
        m = _STRING_START.match(text, i, end)
        if m:
            quote = m.group(0).lstrip("rRuUbBfF")
            body = m.end()
            close = min(_string_end(text, body, quote), end)
            if "f" in m.group(0)[: -len(quote)].lower():
                body_end = (
                    close - len(quote)
                    if text.startswith(quote, close - len(quote)) and close - len(quote) >= body
                    else close
                )
                for fs, fe in _fstring_fields(text, body, body_end):
                    yield from _identifier_spans(text, fs, fe)
            i = close
            prev = "s"
            continue
        if ch.isdigit():
            nm = _NUMBER.match(text, i, end)
            i = nm.end() if nm else i + 1
            prev = "0"
            continue
        m = _NAME.match(text, i, end)
        if m:
            j = m.end()
            if prev != ".":
                k = j
                while k < end and text[k] in _SPACE:
                    k += 1
                is_kwarg = (
                    bool(brackets)
                    and brackets[-1] == "("
                    and text[k : k + 1] == "="
                    and text[k + 1 : k + 2] != "="
                )
                if not is_kwarg:
                    yield i, j
            i = j
            prev = "a"
            continue
        if ch in "([{":
            brackets.append(ch)
        elif ch in ")]}":
            if brackets:
                brackets.pop()
        prev = ch
        i += 1


def rename(text: str, mapping: Mapping[str, str]) -> str:
    """``text`` with every identifier that is a key of ``mapping`` replaced by its value.

    >>> rename("Param1.Param1 + f(Param1=Param1)  # Param1", {"Param1": "b"})
    'b.Param1 + f(Param1=b)  # Param1'
    """
    if not mapping or not text:
        return text
    out: list[str] = []
    last = 0
    for s, e in identifiers(text):
        new = mapping.get(text[s:e])
        if new is not None:
            out.append(text[last:s])
            out.append(new)
            last = e
    if last == 0:
        return text
    out.append(text[last:])
    return "".join(out)


def demutate(text: str, renames: Mapping[str, str]) -> str:
    """Map a mutant's invented identifiers (``renames``: new -> old) back to the user's.

    >>> demutate("Param1 + 1)\\n    return 'Param1'", {"Param1": "b"})
    "b + 1)\\n    return 'Param1'"
    """
    return rename(text, renames)


def uses_any(text: str, names: Iterable[str]) -> bool:
    """Whether ``text`` refers to any of ``names`` as a variable (not in strings, comments, attributes).

    >>> uses_any("x.TempVar + 1", {"TempVar"}), uses_any("y = TempVar", {"TempVar"})
    (False, True)
    """
    wanted = set(names)
    if not wanted:
        return False
    return any(text[s:e] in wanted for s, e in identifiers(text))


__all__ = ["demutate", "uses_any", "rename", "identifiers"]
