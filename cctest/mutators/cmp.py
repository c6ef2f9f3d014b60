"""CMP: mirror a comparison (``a < b`` -> ``b > a``, ``x == 3`` -> ``3 == x``) only where it is exact.

For arbitrary objects ``a < b`` and ``b > a`` call different methods first (``a.__lt__`` versus
``b.__gt__``), may return different things, and evaluate the operands in another order. Two
cases are exact for every value, and only these are mirrored (a single comparison, no chain):

- **ordering** (``<``, ``<=``, ``>``, ``>=``) when both operands are of evident built-in number
  types and one of them is a literal: int and float literals, evident ints (``_analysis``:
  ``len(...)``, ``range`` loop variables, locals only ever bound to those). ``int``/``float``
  comparisons run no user code and ``int.__lt__(a, b)`` is ``int.__gt__(b, a)``; the literal has
  no effect, so whatever evaluating the other operand does (an unbound name raising) happens the
  same way in both orders;
- **equality and identity with a literal** (``==``, ``!=``, ``is``, ``is not``; one operand an
  int, float, text literal, ``None``, ``True`` or ``False``, the other anything). ``3 == x``
  evaluates ``3`` (no effect) then ``x``, as ``x == 3`` evaluates ``x`` then ``3``; ``int.__eq__``
  (likewise ``str``, ``float``, ``NoneType``, ``bool``) returns NotImplemented for an operand
  that is not its own kind, so Python then asks ``x.__eq__(3)``, which ``x == 3`` asks first;
  when ``type(x)`` subclasses the literal's type and overrides ``__eq__``, Python asks it first in
  both orders. ``is`` compares identity and runs no code at all. Bytes literals are left alone
  (``-b`` warnings), and so is ``in`` (it has no mirror).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ._analysis import NamePool
from ._sites import code_at, evident_int_cst
from ._walk import Site, SiteVisitor, Walk
from .base import Analysis, Applied, Scheme, Variant

_MIRROR: dict[type, type] = {
    cst.LessThan: cst.GreaterThan,
    cst.GreaterThan: cst.LessThan,
    cst.LessThanEqual: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.LessThanEqual,
    cst.Equal: cst.Equal,
    cst.NotEqual: cst.NotEqual,
    cst.Is: cst.Is,
    cst.IsNot: cst.IsNot,
}
_EQUALITY = (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)


def literal(node: cst.BaseExpression) -> bool:
    """An int, float or text literal, ``None``, ``True`` or ``False``: evaluated without effects."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.SimpleString):
        return not set(node.prefix.lower()) & {"b", "f"}
    if isinstance(node, cst.ConcatenatedString):
        return literal(node.left) and literal(node.right)  # type: ignore[arg-type]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return isinstance(node.expression, (cst.Integer, cst.Float))
    return isinstance(node, cst.Name) and node.value in ("None", "True", "False")


def _number(node: cst.BaseExpression, ints: frozenset[str], shadowed: frozenset[str]) -> bool:
    """An evident int or a float literal."""
    if isinstance(node, cst.Float):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Float):
        return isinstance(node.operator, cst.Minus)
    return evident_int_cst(node, ints, shadowed)


def mirrorable(node: cst.Comparison, ints: frozenset[str], shadowed: frozenset[str]) -> bool:
    """Whether ``node`` is one comparison whose mirror is exact for every value (module docstring)."""
    if len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    op = type(target.operator)
    if op not in _MIRROR:
        return False
    left, right = node.left, target.comparator
    if literal(left) and literal(right):
        return False  # nothing to learn from, and some pairs warn ('x' is 'x')
    if isinstance(target.operator, _EQUALITY) and (literal(left) or literal(right)):
        return True
    # one side a number literal: the other side's evaluation (an unbound name, a len() of
    # something without one) fails the same way in both orders
    return (
        (literal(left) or literal(right)) and _number(left, ints, shadowed) and _number(right, ints, shadowed)
    )


def mirror(node: cst.Comparison) -> cst.Comparison:
    """``a < b`` -> ``b > a`` (the operator's own whitespace is kept)."""
    target = node.comparisons[0]
    op = target.operator
    new_op = op
    if isinstance(op, (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual)):
        new_op = _MIRROR[type(op)](
            whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
        )
    return node.with_changes(
        left=target.comparator,
        comparisons=[target.with_changes(operator=new_op, comparator=node.left)],
    )


class ComparisonSites(SiteVisitor):
    """CMP's sites: a single comparison whose operands are of evident built-in types."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        self.sites: list[Site] = []

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if mirrorable(node, self.walk.ints(), self.walk.shadowed):
            self.sites.append(self.walk.site("cmp", 0, node))
            self.wanted.add(id(node))


class CMP(Scheme):
    name = "CMP"
    visitors = (ComparisonSites,)
    summary = "mirror a comparison where that is exact (n < len(s) -> len(s) > n, x == 3 -> 3 == x)"

    def variants(self, a: Analysis) -> list[Variant]:
        return [Variant(self.name, (s,)) for s in reversed(a.found(ComparisonSites).sites)]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        if not variants:
            return None
        if a.offsets is not None and not full:
            edits: list[tuple[cst.CSTNode | int, str]] = [
                (v.key[0].obj, code_at(a.module, mirror(v.key[0].obj), v.key[0].indents)) for v in variants
            ]
            return Applied(code=a.splice(edits))
        return Applied(code=a.module.visit(_Mirror({v.key[0].node for v in variants})).code)


class _Mirror(cst.CSTTransformer):
    def __init__(self, targets: set[int]) -> None:
        super().__init__()
        self.targets = targets

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison) -> cst.BaseExpression:
        return mirror(updated) if id(original) in self.targets else updated


SCHEME = CMP()
