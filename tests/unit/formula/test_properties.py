"""Property tests: every variant is equivalent to its original (SymPy, random non-zero coefficients)
and no mutation makes a formula smaller."""

from __future__ import annotations

from functools import cache

import mpmath
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from cctest.formula import EQUATIONS, Equation, EquationVariant, parse_equation, reduce, variants
from cctest.formula.mutators import apply_all

KINDS = sorted(EQUATIONS)
nonzero = st.integers(-9, 9).filter(lambda n: n != 0)


@cache
def _variants(kind: str, distance: int) -> tuple[EquationVariant, ...]:
    return tuple(variants(parse_equation(EQUATIONS[kind]), distance, count=20, seed=0))


def _roots(kind: str, a: int, b: int, c: int) -> list[mpmath.mpf]:
    """The original equation's real solutions (two of them for the periodic ones), to 50 digits."""
    if kind == "linear":
        return [mpmath.mpf(-b) / a]
    if kind == "quadratic":
        d = mpmath.mpf(b * b - 4 * a * c)
        return [] if d < 0 else [(-b + s * mpmath.sqrt(d)) / (2 * a) for s in (1, -1)]
    r = mpmath.mpf(b) / a
    if kind == "sin":
        return [mpmath.asin(r), mpmath.pi - mpmath.asin(r)] if abs(r) <= 1 else []
    if kind == "cos":
        return [mpmath.acos(r), -mpmath.acos(r)] if abs(r) <= 1 else []
    if kind == "tan":
        return [mpmath.atan(r), mpmath.atan(r) + mpmath.pi]
    return [mpmath.power(10, r)] if kind == "log" else [mpmath.exp(r)]


def _holds(eq: Equation, values: dict[sympy.Symbol, sympy.Integer], x: mpmath.mpf) -> bool:
    f = sympy.lambdify([eq.variable], eq.difference().subs(values), modules="mpmath")
    return bool(abs(f(x)) < mpmath.mpf(10) ** -30)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    distance=st.integers(1, 5),
    pick=st.integers(0, 19),
    coeffs=st.tuples(nonzero, nonzero, nonzero),
)
def test_every_variant_is_equivalent_to_its_original(kind, distance, pick, coeffs):
    pool = _variants(kind, distance)
    v = pool[pick % len(pool)]
    eq = v.original
    values = dict(zip(eq.coefficients, map(sympy.Integer, coeffs), strict=False))
    # symbolically: the variant's lhs - rhs is a non-zero constant times the original's
    ratio = sympy.cancel(sympy.together(v.equation.difference().subs(values) / eq.difference().subs(values)))
    assert ratio.free_symbols == set() and ratio != 0, (v.text, ratio)
    # numerically: the original's solutions solve the variant and its reduced form
    with mpmath.workdps(60):
        for root in _roots(kind, *coeffs):
            assert _holds(v.equation, values, root), (v.text, coeffs, root)
            assert _holds(reduce(v.equation).equation, values, root), (v.text, coeffs, root)


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(KINDS), distance=st.integers(1, 5), pick=st.integers(0, 19))
def test_no_mutation_step_decreases_the_size(kind, distance, pick):
    pool = _variants(kind, distance)
    v = pool[pick % len(pool)]
    sizes = [apply_all(v.original, v.mutations[:i]).size for i in range(distance + 1)]
    assert sizes == sorted(sizes) and sizes[-1] == v.equation.size
    assert all(sizes[i] < sizes[i + 1] or str(v.mutations[i]) == "M1" for i in range(distance))


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(KINDS), distance=st.integers(1, 5), pick=st.integers(0, 19))
def test_reduction_steps_never_increase_the_size(kind, distance, pick):
    pool = _variants(kind, distance)
    forms = reduce(pool[pick % len(pool)].equation).forms
    assert all(later.size <= earlier.size for earlier, later in zip(forms, forms[1:], strict=False))
