"""RTF: write a boolean condition another equivalent way.

The slides' ``if ignore == (b == b):`` is not equivalent (``ignore = 5`` or ``b = nan`` break it).
Two forms are used instead, in test positions only (``if``/``elif``/``while``/``assert``/ternary
and comprehension conditions), where only the truth of the value matters:

- ``if not not (cond):``: ``not`` asks ``cond`` for its truth exactly once, as ``if cond:`` does,
  and negating a ``bool`` runs no user code; exceptions from ``__bool__`` are the same;
- ``if bool(cond):``: the same single truth test, used only while ``bool`` is not rebound
  anywhere in the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from ._analysis import NamePool
from ._sites import PrunedTransformer, code_at
from ._walk import Site, SiteVisitor, Walk
from .base import Analysis, Applied, Scheme, Variant

_LOOSE = (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)


def rewrite(test: cst.BaseExpression, form: str) -> cst.BaseExpression:
    if form == "bool":
        return cst.Call(func=cst.Name("bool"), args=[cst.Arg(value=test)])
    inner = test
    if isinstance(test, _LOOSE) and not test.lpar:  # binds more loosely than 'not'
        inner = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.UnaryOperation(
        operator=cst.Not(), expression=cst.UnaryOperation(operator=cst.Not(), expression=inner)
    )


# the whitespace between each keyword and its condition: 'while(x):' has none, which 'not not'
# and 'bool' need
_GAP = {
    cst.If: "whitespace_before_test",
    cst.While: "whitespace_after_while",
    cst.IfExp: "whitespace_after_if",
    cst.Assert: "whitespace_after_assert",
    cst.CompIf: "whitespace_before_test",
}


def _no_gap(node: cst.CSTNode) -> bool:
    ws = getattr(node, _GAP[type(node)])
    return isinstance(ws, cst.SimpleWhitespace) and ws.value == ""


class ConditionTransformer(PrunedTransformer):
    def __init__(self, targets: Mapping[int, str], sites: Sequence[Site], full: bool = False) -> None:
        super().__init__([s.path for s in sites], full)
        self.targets = targets  # id(node) -> form

    def _leave(self, original, updated):  # type: ignore[no-untyped-def]
        form = self.targets.get(id(original))
        if not form:
            return updated
        changes = {"test": rewrite(updated.test, form)}
        if _no_gap(updated):
            changes[_GAP[type(updated)]] = cst.SimpleWhitespace(" ")
        return updated.with_changes(**changes)

    leave_If = leave_While = leave_IfExp = leave_Assert = leave_CompIf = _leave  # type: ignore[assignment]


class Conditions(SiteVisitor):
    """Every condition in a test position (RTF rewrites it, FMT parenthesises it)."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        self.sites: list[Site] = []

    def _test(self, node: cst.If | cst.While | cst.IfExp | cst.Assert | cst.CompIf) -> None:
        self.sites.append(self.walk.site("test", len(self.sites), node))
        self.wanted.add(id(node.test))

    visit_If = visit_While = visit_IfExp = visit_Assert = visit_CompIf = _test  # type: ignore[assignment]


class RTF(Scheme):
    name = "RTF"
    visitors = (Conditions,)
    summary = "write a condition another equivalent way (not not (c), bool(c))"

    def variants(self, a: Analysis) -> list[Variant]:
        forms = ["not"] if "bool" in a.shadowed else ["not", "bool"]
        sites = list(reversed(a.found(Conditions).sites))
        # every site in both forms: first alternating, then the other form of each
        out = [Variant(self.name, (s, forms[i % len(forms)])) for i, s in enumerate(sites)]
        if len(forms) == 2:
            out += [Variant(self.name, (s, forms[(i + 1) % 2])) for i, s in enumerate(sites)]
        return out

    def whole(self, a: Analysis) -> list[Variant]:
        return [Variant(self.name, (s, "not")) for s in a.found(Conditions).sites]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        targets = {v.key[0].node: v.key[1] for v in variants}
        if not targets:
            return None
        if a.offsets is not None and not full:
            edits = [
                (
                    v.key[0].obj.test,
                    (" " if _no_gap(v.key[0].obj) else "")
                    + code_at(a.module, rewrite(v.key[0].obj.test, v.key[1]), v.key[0].indents),
                )
                for v in variants
            ]
            return Applied(code=a.splice(edits))  # type: ignore[arg-type]
        t = ConditionTransformer(targets, [v.key[0] for v in variants], full)
        return Applied(code=a.module.visit(t).code)


SCHEME = RTF()
