"""IRR: write arithmetic another equivalent way, only where the operands are evidently ints.

``a += b`` and ``a = a + b`` differ when ``a`` is a list aliased elsewhere (``+=`` extends it in
place), and ``x + 1`` and ``1 + x`` call different methods of a user class. For ``int`` operands
all of these are exact, so IRR rewrites only where ``_analysis`` proves the operands are ints
(int literals, ``len(...)``, ``range`` loop variables, locals only ever bound to such values):

- ``n += e``  <->  ``n = n + (e)`` (and the other int operators),
- ``i + 1``  ->  ``1 + i``, ``2 * n``  ->  ``n * 2`` (one side a literal, so no side effect or
  ``NameError`` changes order).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ._analysis import NamePool
from ._sites import AUG_TO_BIN, BIN_TO_AUG, PrunedTransformer, Site
from .base import Analysis, Applied, Scheme, Variant

_NEEDS_PARENS = (cst.BinaryOperation, cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.Comparison, cst.NamedExpr)


def _paren(e: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(e, _NEEDS_PARENS) and not e.lpar:
        return e.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return e


class ArithmeticTransformer(PrunedTransformer):
    def __init__(self, sites: Sequence[Site], full: bool = False) -> None:
        super().__init__([s.path for s in sites], full)
        self.targets = {s.node for s in sites}

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign) -> cst.BaseSmallStatement:
        if id(original) not in self.targets or not isinstance(updated.target, cst.Name):
            return updated
        op = AUG_TO_BIN[type(updated.operator)]()
        value = cst.BinaryOperation(left=cst.Name(updated.target.value), operator=op, right=_paren(updated.value))
        return cst.Assign(targets=[cst.AssignTarget(target=updated.target)], value=value, semicolon=updated.semicolon)

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.BaseSmallStatement:
        v = updated.value
        if (
            id(original) not in self.targets
            or not isinstance(v, cst.BinaryOperation)
            or not isinstance(v.left, cst.Name)
            or not isinstance(updated.targets[0].target, cst.Name)
            or v.left.value != updated.targets[0].target.value
        ):
            return updated
        return cst.AugAssign(
            target=updated.targets[0].target, operator=BIN_TO_AUG[type(v.operator)](), value=v.right, semicolon=updated.semicolon
        )

    def leave_BinaryOperation(self, original: cst.BinaryOperation, updated: cst.BinaryOperation) -> cst.BaseExpression:
        if id(original) not in self.targets:
            return updated
        return updated.with_changes(left=updated.right, right=updated.left)


class IRR(Scheme):
    name = "IRR"
    summary = "write int arithmetic another equivalent way (n += 1 <-> n = n + 1, i + 1 -> 1 + i)"

    def variants(self, a: Analysis) -> list[Variant]:
        return [Variant(self.name, (s,)) for s in reversed(a.sites.irr)]

    def apply(self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False) -> Applied | None:
        if not variants:
            return None
        return Applied(code=a.module.visit(ArithmeticTransformer([v.key[0] for v in variants], full)).code)


SCHEME = IRR()
