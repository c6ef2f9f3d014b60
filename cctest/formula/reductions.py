"""Reductions R1–R5 and the pre-processing that sends a model the reduced formula.

    R1  L = R  ->  L - R = 0 (or R - L = 0, the smaller): every non-zero term moved to one side (a
        subtracted sum is distributed, zero terms such as ``0*a`` or ``0/a`` dropped); not applied
        where both would grow the formula (``b = a*sin(x)``)
    R2  a redundant addition: ``... + t ... - t ...`` -> ``...`` (other terms may lie between),
        ``+ 0``, and ``L + t = R + t`` -> ``L = R``
    R3  a redundant subtraction: ``... - t ... + t ...`` -> ``...``, ``- 0``, and
        ``L - t = R - t`` -> ``L = R``
    R4  a redundant multiplication: the same factor ``q`` multiplying every additive term of both
        sides (a whole side is one term; ``-1`` counts, so ``-a*x - b = 0`` becomes ``a*x + b = 0``),
        or ``E*q/q`` inside a product
    R5  a redundant division: the same divisor ``q`` of every additive term of both sides, or
        ``E/q*q`` inside a product

``q`` is built from coefficients and non-zero numbers only (coefficients are non-zero), so
removing it keeps the solution set; a factor with the variable in it is never removed. No
rule increases ``|F|`` (Definition 11). ``reduce`` is the paper's pre-processing: R1 once (where
it does not grow the formula), then R2–R5 until none applies (the whole-side rules before the
in-product ones, so the result keeps the original's shape), R1 again last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy
from sympy.core.basic import Basic

from .grammar import (
    ONE,
    ZERO,
    Equation,
    add,
    is_neg,
    is_recip,
    neg,
    negated,
    recip,
)

MAX_STEPS = 10_000


# -- terms and factors ---------------------------------------------------------------------------------


def _terms(e: Basic) -> list[Basic]:
    return list(e.args) if isinstance(e, sympy.Add) else [e]


def _signed(t: Basic) -> tuple[int, Basic]:
    """A term as (sign, body): ``-t`` and ``(-a)*x`` (how ``-a*x`` parses) are negative."""
    sign = 1
    while True:
        if is_neg(t):
            sign, t = -sign, negated(t)
        elif isinstance(t, sympy.Mul) and is_neg(t.args[0]):
            sign, t = -sign, sympy.Mul(negated(t.args[0]), *t.args[1:], evaluate=False)
        else:
            return sign, t


def _with_sign(sign: int, t: Basic) -> Basic:
    return t if sign > 0 else neg(t)


def _is_zero(t: Basic) -> bool:
    _, t = _signed(t)
    if t.is_Number:
        return bool(t == 0)
    if isinstance(t, sympy.Mul):
        return any(not is_recip(f) and _is_zero(f) for f in _factors(t))
    return False


def _factors(t: Basic) -> list[Basic]:
    """A product's factors, nested products flattened (``Pow(q, -1)`` stands for ``/q``)."""
    if not isinstance(t, sympy.Mul):
        return [t]
    out: list[Basic] = []
    for f in t.args:
        out.extend(_factors(f) if isinstance(f, sympy.Mul) and not is_neg(f) else [f])
    return out


def _product(factors: list[Basic]) -> Basic:
    """Numerators first, then the divisions, in their order."""
    nums = [f for f in factors if not is_recip(f)]
    dens = [f for f in factors if is_recip(f)]
    if not nums:
        nums = [ONE]
    if len(nums) == 1 and not dens:
        return nums[0]
    return sympy.Mul(*nums, *dens, evaluate=False)


def _side(terms: list[Basic]) -> Basic:
    """A side from signed terms: sums and negated sums are spliced in, an empty side is ``0``."""
    flat: list[Basic] = []
    for t in terms:
        sign, body = _signed(t)
        if isinstance(body, sympy.Add):
            flat.extend(_with_sign(sign * s, b) for s, b in map(_signed, body.args))
        else:
            flat.append(_with_sign(sign, body))
    if not flat:
        return ZERO
    return flat[0] if len(flat) == 1 else add(*flat)


def _nonzero_constant(q: Basic, variable: sympy.Symbol) -> bool:
    """Built from coefficients and non-zero numbers by ``*``, ``/``, ``**`` and minus: never zero."""
    if q.is_Symbol:
        return q != variable
    if q.is_Number:
        return bool(q != 0)
    if isinstance(q, sympy.Mul):
        return all(_nonzero_constant(f.args[0] if is_recip(f) else f, variable) for f in q.args)
    if isinstance(q, sympy.Pow):
        base, exp = q.args
        return _nonzero_constant(base, variable) and exp.is_Number and exp.is_integer is True
    return False


# -- the rules ---------------------------------------------------------------------------------------


def _moved(eq: Equation) -> Equation | None:
    """R1 where it does not grow the formula: every non-zero term on one side, else None.

    ``L - R = 0`` or ``R - L = 0``, the smaller (``L - R`` on a tie): ``0 = a*x + b`` becomes
    ``a*x + b = 0``, not ``-a*x - b = 0``. A reduction never increases ``|F|`` (Definition 11), so
    where both are larger (``b = a*sin(x)``: 6 symbols, ``b - a*sin(x) = 0``: 8) R1 does not apply.
    """
    lhs, rhs = _terms(eq.lhs), _terms(eq.rhs)
    forms = [
        eq.with_sides(_side([t for t in side if not _is_zero(t)]), ZERO)
        for side in (lhs + [neg(t) for t in rhs], rhs + [neg(t) for t in lhs])
    ]
    best = min(forms, key=lambda f: f.size)  # the first of equals: L - R
    return best if best.size <= eq.size else None


def r1(eq: Equation) -> Equation:
    """Every non-zero term on one side (``L = R`` -> ``L - R = 0``) where that does not grow ``|F|``."""
    moved = _moved(eq)
    return eq if moved is None else moved


def _cross_pair(eq: Equation) -> tuple[Equation, str]:
    """A term added to (or subtracted from) both sides removed from both: ``L + t = R + t`` -> ``L = R``.

    What R1 followed by R2 or R3 does where R1 would grow the formula (``b - b = a*sin(x) - b``
    -> ``b = a*sin(x)``); the latest term of the left side with a partner on the right goes first.
    """
    lhs, rhs = _terms(eq.lhs), _terms(eq.rhs)
    if len(lhs) + len(rhs) < 3:
        return eq, ""
    for j in range(len(lhs) - 1, -1, -1):
        sign, body = _signed(lhs[j])
        for i in range(len(rhs) - 1, -1, -1):
            if _signed(rhs[i]) == (sign, body):
                left, right = lhs[:j] + lhs[j + 1 :], rhs[:i] + rhs[i + 1 :]
                return eq.with_sides(_side(left), _side(right)), "R2" if sign > 0 else "R3"
    return eq, ""


def _cancel_pair(terms: list[Basic], signs: tuple[int, ...]) -> tuple[list[Basic], str] | None:
    """Remove one redundant pair ``s*t ... -s*t`` (or one zero term) whose first member's sign is in
    ``signs``, with the rule that did it; None when there is none.

    The latest pair goes first (the last term with the nearest earlier partner): a mutation added
    its term at the end of both sides, so this undoes the mutations from the last one back and keeps
    the original's order and signs (``b - b = a*sin(x) - b`` -> ``b - a*sin(x) = 0``).
    """
    if len(terms) > 1:
        for i, t in enumerate(terms):
            sign, body = _signed(t)
            if sign in signs and _is_zero(body):
                return terms[:i] + terms[i + 1 :], "R2" if sign > 0 else "R3"
    for j in range(len(terms) - 1, 0, -1):
        sign, body = _signed(terms[j])
        for i in range(j - 1, -1, -1):
            if -sign in signs and _signed(terms[i]) == (-sign, body):
                return terms[:i] + terms[i + 1 : j] + terms[j + 1 :], "R2" if -sign > 0 else "R3"
    return None


def _cancel_all(terms: list[Basic], signs: tuple[int, ...]) -> list[Basic] | None:
    out, changed = terms, False
    while (found := _cancel_pair(out, signs)) is not None:
        out, changed = found[0], True
    return out if changed else None


def _map_sums(
    e: Basic, fn: Callable[[list[Basic]], list[Basic] | None], top: bool, nested: bool = True
) -> Basic:
    """Apply ``fn`` to the terms of every sum in ``e`` (innermost first), or of its top only."""
    if nested and e.args and not e.is_Atom:
        new_args = tuple(_map_sums(a, fn, False) for a in e.args)
        if new_args != e.args:
            e = e.func(*new_args, evaluate=False)
    if isinstance(e, sympy.Add) or top:
        terms = _terms(e)
        new = fn(terms)
        if new is not None:
            return _side(new)
    return e


def _sumwise(eq: Equation, fn: Callable[[list[Basic]], list[Basic] | None], nested: bool = True) -> Equation:
    return eq.with_sides(_map_sums(eq.lhs, fn, True, nested), _map_sums(eq.rhs, fn, True, nested))


def r2(eq: Equation) -> Equation:
    """Remove redundant additions (``+ t`` later undone by ``- t``; ``+ 0``) in every sum."""
    return _sumwise(eq, lambda ts: _cancel_all(ts, (1,)))


def r3(eq: Equation) -> Equation:
    """Remove redundant subtractions (``- t`` later undone by ``+ t``; ``- 0``) in every sum."""
    return _sumwise(eq, lambda ts: _cancel_all(ts, (-1,)))


def _common(eq: Equation, divisor: bool) -> Equation:
    """Remove a factor (``divisor``: a divisor) shared by every non-zero additive term of both sides."""
    sides = [_terms(eq.lhs), _terms(eq.rhs)]
    live = [(s, i) for s in range(2) for i, t in enumerate(sides[s]) if not _is_zero(t)]
    if not live:
        return eq
    signed = {(s, i): _signed(sides[s][i]) for s, i in live}
    if not divisor and all(sign < 0 for sign, _ in signed.values()):
        for s, i in live:
            sides[s][i] = signed[(s, i)][1]
        return eq.with_sides(_side(sides[0]), _side(sides[1]))
    factor_lists = {k: _factors(body) for k, (_, body) in signed.items()}

    def candidates(fs: list[Basic]) -> list[Basic]:
        picked = [f.args[0] if divisor else f for f in fs if is_recip(f) == divisor]
        return [q for q in reversed(picked) if _nonzero_constant(q, eq.variable)]

    first = factor_lists[live[0]]
    for q in candidates(first):
        target = recip(q) if divisor else q
        if all(target in fs for fs in factor_lists.values()):
            for s, i in live:
                fs = factor_lists[(s, i)]
                at = len(fs) - 1 - fs[::-1].index(target)  # the last one: the latest mutation's
                sign = signed[(s, i)][0]
                sides[s][i] = _with_sign(sign, _product(fs[:at] + fs[at + 1 :]))
            return eq.with_sides(_side(sides[0]), _side(sides[1]))
    return eq


def _cancel_in_product(e: Basic, variable: sympy.Symbol, divide_first: bool) -> Basic:
    """``E*q/q`` (or ``E/q*q`` when ``divide_first``) -> ``E`` in every product of ``e``."""
    if e.args and not e.is_Atom:
        new_args = tuple(_cancel_in_product(a, variable, divide_first) for a in e.args)
        if new_args != e.args:
            e = e.func(*new_args, evaluate=False)
    if not isinstance(e, sympy.Mul) or is_neg(e):
        return e
    fs = _factors(e)
    for i, f in enumerate(fs):
        q = f.args[0] if is_recip(f) else f
        if is_recip(f) != divide_first or not _nonzero_constant(q, variable):
            continue
        undo = q if divide_first else recip(q)
        if undo in fs[i + 1 :]:
            j = fs.index(undo, i + 1)
            return _product(fs[:i] + fs[i + 1 : j] + fs[j + 1 :])
    return e


def _in_products(eq: Equation, divide_first: bool) -> Equation:
    return eq.with_sides(
        _cancel_in_product(eq.lhs, eq.variable, divide_first),
        _cancel_in_product(eq.rhs, eq.variable, divide_first),
    )


def r4(eq: Equation) -> Equation:
    """Remove a redundant multiplication: a factor of every term of both sides, else ``E*q/q``."""
    out = _common(eq, divisor=False)
    return out if out != eq else _in_products(eq, divide_first=False)


def r5(eq: Equation) -> Equation:
    """Remove a redundant division: a divisor of every term of both sides, else ``E/q*q``."""
    out = _common(eq, divisor=True)
    return out if out != eq else _in_products(eq, divide_first=True)


RULES: dict[str, Callable[[Equation], Equation]] = {"R1": r1, "R2": r2, "R3": r3, "R4": r4, "R5": r5}


# the fixed point's order: additive rules, then the whole-side factors, then factors inside a product
def _one_pair(eq: Equation, nested: bool) -> tuple[Equation, str]:
    """One redundant pair removed (at the top of each side, or in any sum when ``nested``)."""
    names: list[str] = []

    def once(terms: list[Basic]) -> list[Basic] | None:
        if names:
            return None
        found = _cancel_pair(terms, (1, -1))
        if found is None:
            return None
        names.append(found[1])
        return found[0]

    out = _sumwise(eq, once, nested)
    return out, (names[0] if names else "")


# The fixed point's order peels the mutations from the outside in: a term added to both sides,
# redundant terms of a side, then
# factors and divisors of every term, then redundant terms inside brackets, then ``E*q/q`` inside a
# product (so a mutant reduces to its original's shape, not to an equivalent reordering).
_LOOP: tuple[Callable[[Equation], tuple[Equation, str]], ...] = (
    _cross_pair,
    lambda e: _one_pair(e, nested=False),
    lambda e: (_common(e, divisor=False), "R4"),
    lambda e: (_common(e, divisor=True), "R5"),
    lambda e: _one_pair(e, nested=True),
    lambda e: (_in_products(e, divide_first=False), "R4"),
    lambda e: (_in_products(e, divide_first=True), "R5"),
    lambda e: (r1(e), "R1"),  # where R1 first would have grown it: 0 = a*x + b -> a*x + b = 0
)


@dataclass(frozen=True)
class Reduction:
    original: Equation
    equation: Equation
    steps: tuple[str, ...]  # the rules applied, in order
    forms: tuple[Equation, ...]  # the formula after each step

    def to_dict(self) -> dict[str, object]:
        return {"formula": self.equation.text, "size": self.equation.size, "steps": list(self.steps)}


def reduce(eq: Equation) -> Reduction:
    """The paper's pre-processing: R1 once (where it does not grow the formula), then R2–R5 to a
    fixed point. No step increases ``|F|``."""
    moved = _moved(eq)
    steps = [] if moved is None else ["R1"]
    current = eq if moved is None else moved
    forms = [] if moved is None else [current]
    for _ in range(MAX_STEPS):
        for rule in _LOOP:
            new, name = rule(current)
            if name and new.text != current.text and new.size <= current.size:
                steps.append(name)
                current = new
                forms.append(new)
                break
        else:
            break
    return Reduction(eq, current, tuple(steps), tuple(forms))
