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

from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from ._analysis import NamePool
from ._sites import AUG_TO_BIN, BIN_TO_AUG, PrunedTransformer, Site, code_at
from .base import Analysis, Applied, Scheme, Variant

_NEEDS_PARENS = (
    cst.BinaryOperation,
    cst.BooleanOperation,
    cst.IfExp,
    cst.Lambda,
    cst.Comparison,
    cst.NamedExpr,
)


def _paren(e: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(e, _NEEDS_PARENS) and not e.lpar:
        return e.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return e


class ArithmeticTransformer(PrunedTransformer):
    def __init__(self, sites: Sequence[Site], full: bool = False) -> None:
        super().__init__([s.path for s in sites], full)
        self.targets = {s.node for s in sites}

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign) -> cst.BaseSmallStatement:
        return expand(updated) if id(original) in self.targets else updated

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.BaseSmallStatement:
        return contract(updated) if id(original) in self.targets else updated

    def leave_BinaryOperation(
        self, original: cst.BinaryOperation, updated: cst.BinaryOperation
    ) -> cst.BaseExpression:
        return swap(updated) if id(original) in self.targets else updated


def expand(node: cst.AugAssign) -> cst.BaseSmallStatement:
    """``n += e`` -> ``n = n + (e)``."""
    if not isinstance(node.target, cst.Name):
        return node
    op = AUG_TO_BIN[type(node.operator)]()
    value = cst.BinaryOperation(left=cst.Name(node.target.value), operator=op, right=_paren(node.value))
    return cst.Assign(targets=[cst.AssignTarget(target=node.target)], value=value, semicolon=node.semicolon)


def contract(node: cst.Assign) -> cst.BaseSmallStatement:
    """``n = n + e`` -> ``n += e`` (unchanged when the shape is not that any more)."""
    v = node.value
    target = node.targets[0].target
    if (
        not isinstance(v, cst.BinaryOperation)
        or not isinstance(v.left, cst.Name)
        or not isinstance(target, cst.Name)
    ):
        return node
    if v.left.value != target.value:
        return node
    return cst.AugAssign(
        target=target, operator=BIN_TO_AUG[type(v.operator)](), value=v.right, semicolon=node.semicolon
    )


def swap(node: cst.BinaryOperation) -> cst.BinaryOperation:
    """``i + 1`` -> ``1 + i``."""
    return node.with_changes(left=node.right, right=node.left)


_REWRITE: dict[str, Callable[[Any], cst.CSTNode]] = {"aug": expand, "assign": contract, "binop": swap}


class IRR(Scheme):
    name = "IRR"
    summary = "write int arithmetic another equivalent way (n += 1 <-> n = n + 1, i + 1 -> 1 + i)"

    def variants(self, a: Analysis) -> list[Variant]:
        return [Variant(self.name, (s,)) for s in reversed(a.sites.irr)]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        if not variants:
            return None
        if a.offsets is not None and not full:
            edits = [
                (v.key[0].obj, code_at(a.module, _REWRITE[v.key[0].kind](v.key[0].obj), v.key[0].indents))
                for v in variants
            ]
            return Applied(code=a.splice(edits))  # type: ignore[arg-type]
        return Applied(code=a.module.visit(ArithmeticTransformer([v.key[0] for v in variants], full)).code)


SCHEME = IRR()
