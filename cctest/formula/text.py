"""Equations written in the comments and docstrings of Python code (half-typed code included).

``find_equations(code)`` returns where each equation in the formula grammar is written inside a
comment or a string literal, so the PSC scheme ``FORM`` can rewrite it (M1–M5) and the engine's
``reduce_formulas`` setting can send the model its reduced form (``reduce_in_code``). An equation
counts when it has the variable ``x``, at least one coefficient and an operator: ``Solve
a*x**2 + b*x + c = 0 for x.`` holds one; ``total = a + b`` does not.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import FormulaError

if TYPE_CHECKING:
    from .grammar import Equation

_MATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ .*+-/^()")
_EQUALS = re.compile(r"(?<![=<>!:+\-*/%&|^@])=(?![=>])")
_X = re.compile(r"(?<![A-Za-z0-9_])x(?![A-Za-z0-9_])")
MAX_SIDE = 160
MAX_REGION = 20_000


@dataclass(frozen=True)
class Found:
    start: int  # character offsets of the equation in the code
    end: int
    equation: Equation


_STATEMENT_START = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)


def _regions(code: str) -> Iterator[tuple[int, int]]:
    """Character spans of the comments and docstrings of ``code`` (a docstring: a string that is a
    statement of its own; other strings are data, which a rewrite could change the behaviour of).
    An unterminated docstring at the end (the cursor inside it) runs to the end."""
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        return starts[pos[0] - 1] + pos[1] if pos[0] - 1 < len(starts) else len(code)

    tokens: list[tokenize.TokenInfo] = []
    unterminated: int | None = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            tokens.append(tok)
    except tokenize.TokenError as exc:
        where = exc.args[1] if len(exc.args) > 1 else None
        if "string" in str(exc.args[0]) and isinstance(where, tuple):
            unterminated = offset(where)
    except (SyntaxError, ValueError):  # tabs and spaces mixed, a bad character: no more regions
        pass
    significant = [t for t in tokens if t.type != tokenize.COMMENT]
    for i, tok in enumerate(significant):
        if tok.type != tokenize.STRING:
            continue
        before = significant[i - 1].type if i else tokenize.NEWLINE
        after = significant[i + 1].type if i + 1 < len(significant) else tokenize.ENDMARKER
        if before in _STATEMENT_START and after in (tokenize.NEWLINE, tokenize.ENDMARKER):
            yield offset(tok.start), offset(tok.end)
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            yield offset(tok.start), offset(tok.end)
    last = significant[-1].type if significant else tokenize.NEWLINE
    if unterminated is not None and last in _STATEMENT_START:
        yield unterminated, len(code)


def _longest(text: str, starts: list[int], from_left: bool) -> str | None:
    from .grammar import parse_expression

    for cut in starts:
        side = text[cut:] if from_left else text[:cut]
        side = side.strip()
        if not side or side.endswith("."):
            continue
        try:
            parse_expression(side)
        except FormulaError:
            continue
        return side
    return None


def _at(region: str, eq_at: int) -> tuple[int, int, Equation] | None:
    lo = eq_at
    while lo > 0 and region[lo - 1] in _MATH and eq_at - lo < MAX_SIDE:
        lo -= 1
    hi = eq_at + 1
    while hi < len(region) and region[hi] in _MATH and hi - eq_at < MAX_SIDE:
        hi += 1
    left_text, right_text = region[lo:eq_at], region[eq_at + 1 : hi]
    if not _X.search(region[lo:hi]):
        return None  # no variable: not an equation, and SymPy need not be loaded to say so
    # a side starts at a word boundary: try the longest first
    left_starts = [i for i in range(len(left_text)) if i == 0 or left_text[i - 1] in " ("]
    right_ends = [i for i in range(len(right_text), 0, -1) if i == len(right_text) or right_text[i] in " )."]
    left = _longest(left_text, left_starts, from_left=True)
    right = _longest(right_text, right_ends, from_left=False)
    if left is None or right is None:
        return None
    from .grammar import parse_equation

    try:
        eq = parse_equation(f"{left} = {right}")
    except FormulaError:
        return None
    if not eq.coefficients or eq.size < 5:
        return None
    start = lo + left_text.index(left)
    end = eq_at + 1 + right_text.index(right) + len(right)
    return start, end, eq


def find_equations(code: str) -> list[Found]:
    """Every equation in a comment or string literal of ``code``, in order. Never raises."""
    out: list[Found] = []
    for r0, r1 in sorted(_regions(code)):
        if r1 - r0 > MAX_REGION:
            continue
        region = code[r0:r1]
        for m in _EQUALS.finditer(region):
            found = _at(region, m.start())
            if found is not None:
                start, end, eq = found
                if not out or out[-1].end <= r0 + start:
                    out.append(Found(r0 + start, r0 + end, eq))
    return out


def rewrite_equations(code: str, edit: Callable[[Equation], str | None]) -> str:
    """``code`` with each equation ``edit`` returns a text for replaced by that text."""
    parts: list[str] = []
    last = 0
    for f in find_equations(code):
        new = edit(f.equation)
        if new is not None:
            parts += [code[last : f.start], new]
            last = f.end
    return "".join(parts) + code[last:] if parts else code


def reduce_in_code(code: str) -> str:
    """``code`` with every equation in its comments and docstrings replaced by its reduced form."""
    from .reductions import reduce

    return rewrite_equations(code, lambda eq: reduce(eq).equation.text)
