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
from ._sites import AUG_TO_BIN, BIN_TO_AUG, PrunedTransformer, code_at, evident_int_cst, evident_number
from ._walk import Site, SiteVisitor, Walk
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


class ArithmeticSites(SiteVisitor):
    """IRR's sites: augmented assignments and their expansions, commutable sums and products, and
    conditional expressions (each numbered among the nodes of its kind, in pre-order)."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        self.sites: list[Site] = []
        self.counts = dict.fromkeys(("aug", "assign", "binop", "ifexp"), 0)

    def _count(self, kind: str) -> int:
        i = self.counts[kind]
        self.counts[kind] = i + 1
        return i

    def _add(self, kind: str, index: int, node: cst.CSTNode, name: str = "") -> None:
        self.sites.append(self.walk.site(kind, index, node, name=name))
        self.wanted.add(id(node))

    def _number(self, node: cst.BaseExpression) -> bool:
        w = self.walk
        return evident_number(node, w.ints(), w.kinds(), w.shadowed)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        i = self._count("aug")
        w = self.walk
        ints = w.ints()
        if (
            isinstance(node.target, cst.Name)
            and type(node.operator) in AUG_TO_BIN
            and (
                (node.target.value in ints and evident_int_cst(node.value, ints, w.shadowed))
                or node.target.value in w.kinds()
            )
        ):
            self._add("aug", i, node, node.target.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        i = self._count("assign")
        w = self.walk
        ints, kinds = w.ints(), w.kinds()
        v = node.value
        # the target holds an int, float, str or tuple wherever it is bound: types without in-place
        # operators, so 'n op= e' and 'n = n op e' make the same calls for every e
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and (node.targets[0].target.value in ints or node.targets[0].target.value in kinds)
            and isinstance(v, cst.BinaryOperation)
            and not v.lpar
            and type(v.operator) in BIN_TO_AUG
            and isinstance(v.left, cst.Name)
            and not v.left.lpar
            and v.left.value == node.targets[0].target.value
            and (node.targets[0].target.value in kinds or evident_int_cst(v.right, ints, w.shadowed))
        ):
            self._add("assign", i, node, v.left.value)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        i = self._count("binop")
        if isinstance(node.operator, (cst.Add, cst.Multiply)):
            left, right = node.left, node.right
            # commuting is exact for ints and floats (IEEE + and * commute, and int with float
            # goes to float's own method either way); one side a literal keeps the order of any
            # side effect or NameError the other side may have
            simple = (cst.Integer, cst.Float, cst.Name, cst.Call)
            literals = (cst.Integer, cst.Float)
            if (
                isinstance(left, simple)
                and isinstance(right, simple)
                and (isinstance(left, literals) or isinstance(right, literals))
                and not left.lpar
                and not right.lpar
                and self._number(left)
                and self._number(right)
            ):
                self._add("binop", i, node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        # 'a if c else b' -> 'b if not c else a', exact for every c, a and b
        self._add("ifexp", self._count("ifexp"), node)


class IRR(Scheme):
    name = "IRR"
    visitors = (ArithmeticSites,)
    summary = "write arithmetic another exact way (n += 1 <-> n = n + 1, s += t for a str, i + 1 -> 1 + i)"

    def variants(self, a: Analysis) -> list[Variant]:
        return [Variant(self.name, (s,)) for s in reversed(a.found(ArithmeticSites).sites)]

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
