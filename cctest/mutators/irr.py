"""IRR: write arithmetic another equivalent way, only where that is exact for the operands' types.

``a += b`` and ``a = a + b`` differ when ``a`` is a list aliased elsewhere (``+=`` extends it in
place), and ``x + 1`` and ``1 + x`` call different methods of a user class. IRR rewrites only
where ``_analysis`` proves the types (``evident_int``, ``evident_kind``):

- ``n op= e``  <->  ``n = n op (e)`` where ``n`` holds an int, float, str or tuple wherever it is
  bound (every binding of it in the function gives that exact type: int literals, ``len(...)``,
  ``range`` loop variables, int arithmetic incl. ``//`` and ``%``; float literals and ``/``;
  text literals, f-strings, ``str + str``, ``str * int`` and a str's own methods; tuple displays,
  ``tuple + tuple``, ``tuple * int``). None of these types has an in-place operator, so Python's
  ``n op= e`` falls back to exactly the calls of ``n op e`` (``__add__``, then ``e.__radd__``,
  subclass first), in the same order, for every ``e``; only a list, set, dict or user object
  (never such a local) could behave differently;
- ``i + 1``  ->  ``1 + i``, ``2 * n``  ->  ``n * 2``, ``x * 2.0`` -> ``2.0 * x``: ``+`` and ``*``
  commute for ints and floats (IEEE addition and multiplication are commutative, and an int with
  a float goes to float's own method in either order); one side a literal, so no side effect or
  ``NameError`` changes order. Concatenation does not commute: str and tuple are never swapped.

Where no type is evident, the one rewrite exact for every type:

- ``a if c else b``  ->  ``b if not c else a``: ``c`` is evaluated first and asked for its truth
  exactly once in both (``not`` of that truth is a bool, and negating a bool runs no code), then
  only the chosen branch is evaluated. ``+=`` and a swap are not exact for every type (a list's
  ``+=`` works in place, ``x + 1`` calls ``x.__add__`` and ``1 + x`` ``x.__radd__``).
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

    def leave_IfExp(self, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression:
        return flip(updated) if id(original) in self.targets else updated

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


def flip(node: cst.IfExp) -> cst.IfExp:
    """``a if c else b`` -> ``b if not c else a`` (a lambda or conditional moved into the first
    place, or an ``and``/``or`` test under ``not``, gets parentheses)."""
    test = _paren(node.test)
    return node.with_changes(
        test=cst.UnaryOperation(operator=cst.Not(), expression=test),
        body=_paren(node.orelse),
        orelse=node.body,
    )


_REWRITE: dict[str, Callable[[Any], cst.CSTNode]] = {
    "aug": expand,
    "assign": contract,
    "binop": swap,
    "ifexp": flip,
}


class IRR(Scheme):
    name = "IRR"
    summary = "write arithmetic another exact way (n += 1 <-> n = n + 1, s += t for a str, i + 1 -> 1 + i)"

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
