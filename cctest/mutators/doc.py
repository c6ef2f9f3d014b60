"""DOC: edit a comment or docstring near the cursor without changing what it says.

The text a model reads, not the code it runs:

- ``case``: the first word of a comment or docstring with its first letter's case flipped
  (``# compute the sum`` -> ``# Compute the sum``), only for a plain word (letters only, all
  lower case, or capitalised with the rest lower case; never an identifier-like ``iNode``, an
  acronym or a one-letter word);
- ``space``: a space after a comment's ``#`` (``#todo`` -> ``# todo``);
- ``reflow``: a docstring's closing quotes moved to a line of their own, or back onto the last
  line of text, only where ``inspect.cleandoc`` of both texts is the same (what
  ``inspect.getdoc`` and ``help()`` show; checked on the literal's value);
- ``sentence``: in the docstring being typed (the cursor inside it; on its lines above the
  cursor's), the space after a sentence's full stop doubled or made single (``b.  Computed`` <->
  ``b. Computed``), prose spacing that says the same. With ``case`` on its first word, these are
  ``open_docstring_tails``: that docstring is the prompt's unparsed tail, so the engine applies
  them to the tail's text.

Comments are exact for every value: the compiler never sees them. Comments that tools read are
left alone: the encoding declaration and ``#!`` line, and pragmas (``type:``, ``noqa``,
``pragma``, ``fmt:``, ``pylint:``, ``mypy:``, ``isort:``, ``pyright:``, ``nosec``). A docstring is
also a value, ``__doc__``: a docstring edit changes the raw ``__doc__`` (not what ``getdoc``
shows for ``reflow``), the one difference DOC is allowed to make, as INI's printed line is INI's.
Docstrings with doctests (``>>>``), and every docstring of a document whose text or context
mentions ``__doc__``, ``doctest``, ``pydoc``, ``getdoc`` or ``cleandoc``, are left alone; what
remains observable is a docstring read from outside the document, and ``help()``'s text.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from collections.abc import Sequence

import libcst as cst

from ..context import STUB_COMMENT
from ._analysis import NamePool
from ._walk import BlockVisitor, Site, Walk, is_docstring
from .base import Analysis, Applied, Scheme, Variant
from .fmt import splice, with_offsets

_PRAGMA = re.compile(
    r"#!|#\s*(?:type:|noqa|pragma|fmt:|pylint:|mypy:|isort:|pyright:|nosec|-\*-|vim?:|coding[:=])"
)
_FIRST_WORD = re.compile(r"[A-Za-z]+(?=[\s.,;:!?)]|$)")


def flip_case(word: str) -> str | None:
    """``compute`` -> ``Compute``, ``Compute`` -> ``compute``; None for other words."""
    if len(word) < 2 or not word.isalpha() or not word.isascii():
        return None
    if word.islower():
        return word[0].upper() + word[1:]
    if word[0].isupper() and word[1:].islower():
        return word[0].lower() + word[1:]
    return None


def _comments(source: str) -> list[tuple[int, str]]:
    """(offset, text) of every comment token of ``source``."""
    starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            starts.append(i + 1)
    out = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(source).readline):
            if t.type == tokenize.COMMENT:
                out.append((starts[t.start[0] - 1] + t.start[1], t.string))
    except (tokenize.TokenError, SyntaxError, IndexError):
        return out
    return out


def _comment_edits(offset: int, text: str, line: int) -> list[tuple[str, int, int, str]]:
    """The DOC edits of one comment: (kind, start, end, new text)."""
    if STUB_COMMENT in text or _PRAGMA.match(text) or (line <= 2 and "coding" in text):
        return []
    out = []
    body = text[1:]
    m = _FIRST_WORD.match(body.lstrip(" "))
    if m is not None:
        new = flip_case(m[0])
        if new is not None:
            at = offset + 1 + (len(body) - len(body.lstrip(" "))) + m.start()
            out.append(("case", at, at + len(m[0]), new))
    if body[:1].isalpha():
        out.append(("space", offset + 1, offset + 1, " "))
    return out


def _docstring_edits(a: Analysis, stmt: cst.SimpleStatementLine) -> list[tuple[str, int, int, str]]:
    assert a.offsets is not None
    expr = stmt.body[0]
    node = expr.value if isinstance(expr, cst.Expr) else None
    if not isinstance(node, cst.SimpleString) or ">>>" in node.value:
        return []
    start, end = a.offsets[id(stmt)]
    at = a.source.find(node.value, start, end)
    while at >= 0 and a.source[a.source.rfind("\n", 0, at) + 1 : at].strip(" \t;") != "":
        at = a.source.find(node.value, at + 1, end)  # a leading comment quoting the same text
    if at < 0:
        return []
    prefix = len(node.prefix)
    quote = node.quote
    inner_start = at + prefix + len(quote)
    inner_end = at + len(node.value) - len(quote)
    inner = a.source[inner_start:inner_end]
    out = []
    lead = len(inner) - len(inner.lstrip())
    m = _FIRST_WORD.match(inner[lead:])
    if m is not None and (new := flip_case(m[0])) is not None:
        out.append(("case", inner_start + lead, inner_start + lead + len(m[0]), new))
    if len(quote) == 3 and inner.strip() and not inner.rstrip(" \t").endswith("\\"):
        line_start = a.source.rfind("\n", 0, at) + 1
        indent = a.source[line_start:at]
        indent = indent[: len(indent) - len(indent.lstrip(" \t"))]
        stripped = inner.rstrip(" \t")
        nl = a.module.default_newline
        if "\n" not in inner or not stripped.endswith("\n"):
            # the closing quotes onto a line of their own
            cut = inner_start + len(stripped)
            out.append(("reflow", cut, inner_end, nl + indent))
        else:
            # the closing quotes back onto the last line of text
            text = stripped.rstrip("\r\n")
            if text.strip():
                cut = inner_start + len(text)
                out.append(("reflow", cut, inner_end, ""))
    # a reflow only where inspect.getdoc (and help()) reads the same text before and after
    return [e for e in out if e[0] != "reflow" or _same_doc(a.source[at : at + len(node.value)], at, e)]


def _same_doc(literal: str, at: int, edit: tuple[str, int, int, str]) -> bool:
    _, start, end, text = edit
    changed = literal[: start - at] + text + literal[end - at :]
    try:
        return inspect.cleandoc(ast.literal_eval(literal)) == inspect.cleandoc(ast.literal_eval(changed))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


_OPEN_DOC = re.compile(r"[ \t]*([rRuU]?)(\"\"\"|''')")
_SENTENCE = re.compile(r"(?<=[a-z]\.)( {1,2})(?=[A-Z][a-z])")


def open_docstring_tails(tail: str) -> list[str]:
    """DOC's edits of a docstring being typed: ``tail`` (the unparsed rest of a prompt, right after a
    ``def``/``class`` header, ``Window.tail``) with one edit each, nearest the cursor first.

    Only a plain (or raw, or ``u``) triple-quoted string that is still open, with no doctest
    (``>>>``), no literal block (``::``) and no escape in it: the first word's case and the space
    after the last full stop that ends a sentence of prose (``word.`` then one or two spaces then
    a capitalised word), both on lines above the one being typed, which stays as it is.
    """
    m = _OPEN_DOC.match(tail)
    if m is None:
        return []
    inner_start = m.end()
    inner = tail[inner_start:]
    if m[2] in inner or ">>>" in inner or "::" in inner or "\\" in inner:
        return []
    out = []
    typed = tail.rfind("\n") - inner_start  # the line being typed (from here on) stays as it is
    lead = len(inner) - len(inner.lstrip())
    w = _FIRST_WORD.match(inner[lead:])
    if w is not None and lead + w.end() < typed and (new := flip_case(w[0])) is not None:
        at = inner_start + lead
        out.append(tail[:at] + new + tail[at + len(w[0]) :])
    gaps = [g for g in _SENTENCE.finditer(inner) if g.end() < typed]
    if gaps:
        g = gaps[-1]
        at = inner_start + g.start()
        out.append(tail[:at] + (" " if len(g[1]) == 2 else "  ") + tail[inner_start + g.end() :])
    return out


class DocstringSites(BlockVisitor):
    """DOC's docstring sites: each block's docstring statement (``obj``); comments are found in
    the source's tokens instead."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        self.sites: list[Site] = []

    def block(
        self, index: int, node: cst.CSTNode, body: list[cst.BaseStatement], first: int, func_body: bool
    ) -> None:
        if body and is_docstring(body[0]):
            self.sites.append(self.walk.site("doc", index, body[0]))


class DOC(Scheme):
    name = "DOC"
    visitors = (DocstringSites,)
    summary = "edit a comment or docstring without changing what it says (case, spacing, reflow)"

    def variants(self, a: Analysis) -> list[Variant]:
        a = with_offsets(a)
        # key: (where the comment or docstring starts, whether it is a docstring, edit kind,
        # start, end, new text)
        keys: list[tuple[int, bool, str, int, int, str]] = []
        for offset, text in _comments(a.source):
            line = a.source.count("\n", 0, offset) + 1
            keys += [(offset, False, *e) for e in _comment_edits(offset, text, line)]
        if not a.reads_docs:
            for site in a.found(DocstringSites).sites:
                at = a.offsets[id(site.obj)][0]  # type: ignore[index]
                keys += [(at, True, *e) for e in _docstring_edits(a, site.obj)]
        # nearest the cursor (the end of the window) first
        keys.sort(key=lambda e: (-e[0], e[2]))
        return [Variant(self.name, k) for k in keys]

    def sites(self, v: Variant) -> frozenset[object]:
        return frozenset((v.key[0],))  # one comment or docstring

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        if not variants:
            return None
        code = splice(a.source, sorted({(v.key[3], v.key[4], v.key[5]) for v in variants}))
        # a comment is not in the AST; a docstring is, so its mutant is scored
        return Applied(code=code, same_structure=not any(v.key[1] for v in variants))


SCHEME = DOC()
