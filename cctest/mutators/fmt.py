"""FMT: change the layout only (ReCode's format transformations): what the model reads, not what runs.

Three rewrites, each exact for every value because the compiler produces the same code from both
texts (only line numbers after the edit move, as with GRA's and INI's inserted lines):

- ``blank``: a blank line inserted before a statement of a block (never inside brackets or a
  string: statements start at line starts, and the line goes before the statement's own leading
  comments). Unlike GRA's dead code it may go before a docstring (which stays the first
  statement) and before the line being typed (a blank line may even separate ``if`` from
  ``else``); above a module's first statement it goes below the file's header comments (a
  ``#!`` line and an encoding declaration stay on lines 1 and 2);
- ``comment``: a comment line (``#``) inserted there instead;
- ``blank2``: two blank lines inserted there (tried last, after both kinds above at every site:
  what fills the k places in a window that holds little more than a ``def`` line);
- ``wrap``: a line break inside a function's parameter list, before a parameter's name
  (``def f(a, b):`` -> ``def f(\n        a, b):``), or after the last one's name
  (``def f(a, b\n):``): inside brackets a line break between two tokens is whitespace;
- ``parens``: an ``if``/``elif``/``while``/``assert``/ternary/comprehension condition wrapped in
  parentheses (``if x > 0:`` -> ``if (x > 0):``). Parentheses around an expression change nothing
  but grouping, and a whole condition is already one group; conditions that already have their
  own parentheses are left alone.

The rewrites are splices of the source text at the offsets of the sites' nodes, so comments and
the user's own formatting elsewhere stay byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import libcst as cst

from ._analysis import NamePool
from ._sites import is_stub, node_offsets
from ._walk import BlockVisitor, Site, Walk
from .base import Analysis, Applied, Scheme, Variant
from .rtf import Conditions


def with_offsets(a: Analysis) -> Analysis:
    """``a`` with the text offsets of its sites' nodes (whole-file mode analyses without them)."""
    if a.offsets is not None:
        return a
    _, offsets = node_offsets(a.module, a.wanted, a.source)
    return dataclasses.replace(a, offsets=offsets)


class LayoutSites(BlockVisitor):
    """FMT's sites (besides the conditions, ``rtf.Conditions``): every statement a line may go
    before (the stub included, unlike GRA's), and the named parameters of every function (a line
    break may go before or after each)."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        self.lines: list[Site] = []
        self.params: list[Site] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        index = self.walk.func_index_of[id(node)]
        p = node.params
        named = (*p.posonly_params, *p.params, *p.kwonly_params)
        for i, named_param in enumerate(named):
            # "end": the closing bracket may go on a line of its own right after this name (the
            # last parameter, plain: nothing follows its name before the ')')
            end = (
                i == len(named) - 1
                and named_param.annotation is None
                and named_param.default is None
                and not isinstance(named_param.comma, cst.Comma)
                and p.star_kwarg is None
                and (named_param in p.kwonly_params or not isinstance(p.star_arg, cst.Param))
                and named_param not in p.posonly_params
            )
            self.params.append(
                self.walk.site("params", index, named_param.name, pos=i, name="end" if end else "")
            )
            self.wanted.add(id(named_param.name))

    def block(
        self, index: int, node: cst.CSTNode, body: list[cst.BaseStatement], first: int, func_body: bool
    ) -> None:
        # blank and comment lines are exact anywhere between statements, even before a docstring or
        # the stub (where the user types next); a '#!' line or an encoding declaration at the top
        # of a file is libcst's Module.header, above the first statement's text, so it stays put
        for p in range(len(body) + 1):
            # after the last statement too, where no stub closes the block (the line typed next)
            if p == len(body) and (not body or is_stub(body[-1])):
                break
            self.lines.append(self.walk.site("block", index, node, pos=p))
            if p < len(body) and is_stub(body[p]):
                break


class FMT(Scheme):
    name = "FMT"
    visitors = (Conditions, LayoutSites)
    summary = "change the layout only (a blank or comment line, parentheses around a condition)"

    def variants(self, a: Analysis) -> list[Variant]:
        layout = a.found(LayoutSites)
        tests = a.found(Conditions).sites
        parens = [Variant(self.name, (s, "parens")) for s in reversed(tests) if not s.obj.test.lpar]
        wraps = [Variant(self.name, (s, "wrap")) for s in reversed(layout.params)]
        wraps += [Variant(self.name, (s, "wrap_end")) for s in reversed(layout.params) if s.name == "end"]
        blocks = list(reversed(layout.lines))
        lines = [Variant(self.name, (s, "blank" if i % 2 == 0 else "comment")) for i, s in enumerate(blocks)]
        # nearest the cursor first, the kinds interleaved; then the other line kind at each site
        out: list[Variant] = []
        for i in range(max(len(parens), len(lines), len(wraps))):
            out += [x[i] for x in (lines, parens, wraps) if i < len(x)]
        out += [Variant(self.name, (s, "comment" if i % 2 == 0 else "blank")) for i, s in enumerate(blocks)]
        out += [Variant(self.name, (s, "blank2")) for s in blocks]
        return out

    def whole(self, a: Analysis) -> list[Variant]:
        lines = [s for s in a.found(LayoutSites).lines if s.pos < len(s.obj.body)]  # before each statement
        return [Variant(self.name, (s, "blank")) for s in lines] + [
            Variant(self.name, (s, "parens")) for s in a.found(Conditions).sites if not s.obj.test.lpar
        ]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        if not variants:
            return None
        a = with_offsets(a)
        assert a.offsets is not None
        nl = a.module.default_newline
        edits: list[tuple[int, int, str]] = []  # replace source[start:end] by text
        for v in variants:
            site, kind = v.key
            if kind in ("wrap", "wrap_end"):
                start, end = a.offsets[id(site.obj)]
                at = start if kind == "wrap" else end
                gap = at  # the spaces the line break replaces (no trailing whitespace)
                while kind == "wrap" and gap > 0 and a.source[gap - 1] in " \t":
                    gap -= 1
                indent = "".join(site.indents) + a.module.default_indent * (2 if kind == "wrap" else 0)
                edits.append((gap, at, nl + indent))
            elif kind == "parens":
                start, end = a.offsets[id(site.obj.test)]
                edits.append((start, start, "("))
                edits.append((end, end, ")"))
            else:
                body = site.obj.body
                at = a.offsets[id(body[site.pos])][0] if site.pos < len(body) else a.offsets[id(body[-1])][1]
                text = {"blank": nl, "blank2": nl + nl}.get(kind, "".join(site.indents) + "#" + nl)
                edits.append((at, at, text))
        return Applied(code=splice(a.source, edits), same_structure=True)


def splice(source: str, edits: list[tuple[int, int, str]]) -> str:
    """``source`` with each span ``[start, end)`` replaced by its text (overlapping edits: the
    first one in the text wins)."""
    out, last = [], 0
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < last:
            continue
        out += [source[last:start], text]
        last = end
    out.append(source[last:])
    return "".join(out)


SCHEME = FMT()
