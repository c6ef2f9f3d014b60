"""GRA_R / GRA_C: insert dead code, ``if False: TempVar = a`` (or ``Add_TempVar`` from ``add``).

The slides' GRA_C condition ``if (b != b):`` calls ``b.__ne__``, user code that may have side
effects or raise, so both variants use ``if False:``, which never runs (CPython drops the block at
compile time) and which no one can rebind (``False`` is a keyword). The dead assignment still
makes ``TempVar`` a local name of the function at compile time, which is why the name is fresh
(it occurs nowhere in the document). The assigned value is a parameter of the function (certainly
in scope, and never declared ``global``) or ``0``. Statements are inserted before existing ones,
never before a docstring (that would change ``__doc__``) or a ``from __future__`` import.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ._analysis import NamePool, context_prefix
from ._insert import InsertTransformer, insert_by_splice
from ._sites import is_stub
from ._walk import BlockVisitor, Site, Walk
from .base import Analysis, Applied, Scheme, Variant


def dead_code(name: str, value: str) -> cst.If:
    v: cst.BaseExpression = cst.Name(value) if value else cst.Integer("0")
    return cst.If(
        test=cst.Name("False"),
        body=cst.SimpleStatementSuite(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=v)]),
    )


class DeadCodeSites(BlockVisitor):
    """GRA's sites: before each statement of a block but a docstring, a ``from __future__`` import
    and the stub (the value of the dead assignment: the function's first parameter, or ``0``)."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        self.sites: list[Site] = []

    def block(
        self, index: int, node: cst.CSTNode, body: list[cst.BaseStatement], first: int, func_body: bool
    ) -> None:
        own = self.walk.own
        value_name = own.first_param or "" if own is not None else ""
        for p in range(first, len(body)):
            if is_stub(body[p]):
                break
            self.sites.append(
                self.walk.site("block", index, node, pos=p, name=value_name, start=func_body and p == first)
            )


class GRA(Scheme):
    visitors = (DeadCodeSites,)

    def __init__(self, name: str, style: str, summary: str) -> None:
        self.name = name
        self.style = style
        self.summary = summary

    def variants(self, a: Analysis) -> list[Variant]:
        # nearest the cursor first: a row of the batch is read from its first change on, so dead
        # code at the start of a long function (the paper's place) costs the whole function
        found = a.found(DeadCodeSites).sites
        if not a.near:  # the start of a function body first (as in the paper), the last function first
            sites = sorted(found, key=lambda s: (not s.start, -s.func, -s.index, -s.pos))
        elif a.offsets is None:
            sites = sorted(found, key=lambda s: (-s.func, -s.index, -s.pos))
        else:
            sites = sorted(found, key=lambda s: -_offset(a, s))
        return [Variant(self.name, (s,)) for s in sites]

    def whole(self, a: Analysis) -> list[Variant]:
        starts = [Variant(self.name, (s,)) for s in a.found(DeadCodeSites).sites if s.start]
        return starts or self.variants(a)[:1]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        inserts: list[tuple[Site, cst.BaseStatement]] = []
        introduced = set()
        for v in variants:
            site = v.key[0]
            func, value = site.func, site.name
            if self.style == "R":
                new = pool.fresh("TempVar")
            else:
                ctx = context_prefix(a.functions[func].name) if func >= 0 else "Module"
                new = pool.fresh(f"{ctx}_TempVar")
            introduced.add(new)
            inserts.append((site, dead_code(new, value)))
        if not inserts:
            return None
        if a.offsets is not None and not full:
            code = insert_by_splice(a, inserts)
        else:
            code = a.module.visit(InsertTransformer(inserts, full)).code
        key = tuple(sorted((v.key[0].node, v.key[0].pos, v.key[0].name) for v in variants))
        return Applied(code=code, introduced=frozenset(introduced), structure_key=("GRA", key))


def _offset(a: Analysis, site: Site) -> int:
    """Where the dead code goes in the analysed source (as ``insert_by_splice`` puts it)."""
    assert a.offsets is not None
    body = site.obj.body
    return a.offsets[id(body[site.pos])][0] if site.pos < len(body) else a.offsets[id(body[-1])][1]


GRA_R = GRA("GRA_R", "R", "insert dead code with a generic name (if False: TempVar = a)")
GRA_C = GRA("GRA_C", "C", "insert dead code with a name from its context (if False: Add_TempVar = a)")
