"""Reductions R1–R5 before/after, and the pre-processing on every variant of the seven equations."""

from __future__ import annotations

from collections import Counter

import pytest

from cctest.formula import EQUATIONS, parse_equation, reduce, variants
from cctest.formula.reductions import r1, r2, r3, r4, r5

RULE = {"R1": r1, "R2": r2, "R3": r3, "R4": r4, "R5": r5}


@pytest.mark.parametrize(
    ("rule", "before", "after"),
    [
        ("R1", "a*x + b + b = 0 + b", "a*x + b + b - b = 0"),
        ("R1", "0 = a*x + b", "a*x + b = 0"),  # the smaller side: -a*x - b = 0 grows it
        ("R1", "a*x + b + b = b", "a*x + b + b = b"),  # 11 symbols on one side: no R1
        ("R1", "0 + b = a*x + b + b", "b - a*x - b - b = 0"),  # a subtracted sum is distributed
        ("R1", "(a*x + b)*a = 0*a", "(a*x + b)*a = 0"),  # 0*a is a zero term
        ("R1", "b = a*sin(x)", "b = a*sin(x)"),  # both sides' forms are larger: no R1
        ("R2", "a*x + b + a - a = 0", "a*x + b = 0"),
        ("R2", "a*x + a + b - a = 0", "a*x + b = 0"),  # another term in between
        ("R2", "(a*x + b + a - a)*b = 0", "(a*x + b)*b = 0"),  # inside brackets too
        ("R2", "a*x - b + b = 0", "a*x - b + b = 0"),  # a subtraction undone: R3's
        ("R3", "a*x - b + b + b = 0", "a*x + b = 0"),
        ("R3", "a*x - a + b + a = 0", "a*x + b = 0"),
        ("R4", "(a*x + b)*a = 0", "a*x + b = 0"),  # the whole side
        ("R4", "a*x*b + b*b = 0", "a*x + b = 0"),  # each additive term
        ("R4", "a*cos(x)*b = b*b", "a*cos(x) = b"),  # both sides
        ("R4", "-a*x - b = 0", "a*x + b = 0"),  # -1 multiplying every term
        ("R4", "a*x*x = a", "x*x = 1"),
        ("R4", "x*(a*x + b) = 0", "x*(a*x + b) = 0"),  # the variable is never divided out
        ("R5", "(a*x + b)/a = 0", "a*x + b = 0"),
        ("R5", "a*x/b + b/b = 0", "a*x + b = 0"),
        ("R5", "a*tan(x)/b = b/b", "a*tan(x) = b"),
        ("R5", "(a*x + b)/a*a = 0", "(a*x + b)*a = 0"),  # whole side first
        ("R5", "b*(a*x/a*a) = b", "b*(a*x) = b"),  # E/q*q inside a product
        ("R5", "x/x = a", "x/x = a"),
    ],
)
def test_reductions_before_after(rule, before, after):
    assert RULE[rule](parse_equation(before)).text == after


@pytest.mark.parametrize(
    ("mutant", "reduced", "steps"),
    [
        ("0 + b = a*x + b + b", "a*x + b = 0", ("R1", "R2", "R4")),
        ("(0 + a)*b/a - b = (a*x + b + a)*b/a - b", "a*x + b = 0", ("R3", "R4", "R5", "R2", "R1")),
        ("b - b = a*sin(x) - b", "b = a*sin(x)", ("R3",)),  # R1 first would grow it to 12
        ("b/a/a = a*log(x)/a/a", "b = a*log(x)", ("R5", "R5")),
        ("(0 + b)*a = (a*x + b + b)*a", "a*x + b = 0", ("R4", "R2", "R1")),  # R1 last, not first
        ("a*x**2 + b*x + c - c = 0 - c", "a*x**2 + b*x + c = 0", ("R1", "R3")),  # - c ... + c
    ],
)
def test_preprocessing_reduces_mutants_to_the_original(mutant, reduced, steps):
    out = reduce(parse_equation(mutant))
    assert out.equation.text == reduced
    assert out.to_dict()["formula"] == reduced and out.to_dict()["size"] == out.equation.size
    if steps is not None:
        assert out.steps == steps


def _terms(eq_text: str) -> Counter[str]:
    """The top-level terms of ``E = 0`` as printed, signs included."""
    lhs = parse_equation(eq_text).lhs
    from cctest.formula.grammar import to_text
    from cctest.formula.reductions import _signed, _terms

    return Counter(f"{'+' if s > 0 else '-'}{to_text(b)}" for s, b in map(_signed, _terms(lhs)))


def _flip(c: Counter[str]) -> Counter[str]:
    return Counter({("-" if k[0] == "+" else "+") + k[1:]: n for k, n in c.items()})


@pytest.mark.parametrize("kind", list(EQUATIONS))
def test_every_variant_reduces_to_its_original(kind):
    # the original, or its sides swapped, or (once, for the quadratic) its terms in another order
    original = parse_equation(EQUATIONS[kind])
    for distance in range(1, 6):
        for v in variants(original, distance, count=20, seed=0):
            out = reduce(v.equation)
            if out.equation.text not in (original.text, original.swapped().text):
                assert original.rhs == 0 and _terms(out.equation.text) == _terms(original.text), v.text
            sizes = [v.equation.size] + [f.size for f in out.forms]
            assert sizes == sorted(sizes, reverse=True), (v.text, out.steps)
            assert (out.forms[-1] if out.forms else v.equation) == out.equation
            assert len(out.forms) == len(out.steps)


def test_every_linear_mutant_reduces_to_the_linear_equation():
    eq = parse_equation(EQUATIONS["linear"])
    outs = {reduce(v.equation).equation.text for d in range(1, 6) for v in variants(eq, d, count=20)}
    assert outs == {"a*x + b = 0"}


def test_reduce_of_a_reduced_formula_changes_nothing_more():
    out = reduce(parse_equation("a*x**2 + b*x + c = 0"))
    assert out.equation.text == "a*x**2 + b*x + c = 0" and out.steps == ("R1",)
