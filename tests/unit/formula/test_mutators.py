"""Mutations M1–M5 on the paper's examples, the no-cancel rule and the variants at a distance."""

from __future__ import annotations

import pytest

from cctest.errors import FormulaError
from cctest.formula import EQUATIONS, parse_equation, parse_mutation, variants
from cctest.formula.mutators import apply_all, cancels, choices


def mutate(text: str, *names: str) -> str:
    return apply_all(parse_equation(text), [parse_mutation(n) for n in names]).text


@pytest.mark.parametrize(
    ("before", "mutations", "after"),
    [
        ("a*sin(x) = b", ["M1"], "b = a*sin(x)"),
        # the paper's Figure 2 (a*x + a + b = a once SymPy has evaluated it)
        ("a*x + b = 0", ["M2(a)"], "a*x + b + a = 0 + a"),
        # the paper's quadratic at distance 1 (a*x^2 + b*x = -c evaluated)
        ("a*x**2 + b*x + c = 0", ["M3(c)"], "a*x**2 + b*x + c - c = 0 - c"),
        ("a*cos(x) = b", ["M4(b)"], "a*cos(x)*b = b*b"),
        ("a*tan(x) = b", ["M5(b)"], "a*tan(x)/b = b/b"),
        ("a*x + b = 0", ["M4(a)"], "(a*x + b)*a = 0*a"),
        # the paper's log example (b/a^2 = log(x)/a evaluated)
        ("a*log(x) = b", ["M1", "M5(a)", "M5(a)"], "b/a/a = a*log(x)/a/a"),
        ("a*ln(x) = b", ["M5(a)", "M4(b)"], "(a*ln(x)/a)*b = (b/a)*b"),
        ("a*x + b = 0", ["M3(b)", "M4(a)", "M1"], "(0 - b)*a = (a*x + b - b)*a"),
    ],
)
def test_mutations_before_after(before, mutations, after):
    assert mutate(before, *mutations) == after


def test_inverse_mutations_never_follow_each_other():
    m = parse_mutation
    assert cancels([m("M2(b)")], m("M3(b)"))
    assert cancels([m("M3(b)")], m("M2(b)"))
    assert cancels([m("M4(a)")], m("M5(a)"))
    assert cancels([m("M5(a)")], m("M4(a)"))
    assert cancels([m("M1")], m("M1"))
    assert cancels([m("M2(b)"), m("M1")], m("M3(b)"))  # M1 commutes: still an undo
    assert not cancels([m("M2(b)")], m("M3(a)"))
    assert not cancels([m("M2(b)")], m("M2(b)"))
    assert cancels([m("M1"), m("M2(b)")], m("M1"))  # M1 M2(b) M1 is M2(b): two M1s cancel
    assert cancels([m("M2(b)"), m("M2(a)")], m("M3(b)"))  # + b ... - b in the same sum
    assert cancels([m("M4(a)"), m("M5(b)"), m("M1")], m("M5(a)"))  # * a ... / a in one product
    assert not cancels([m("M2(b)"), m("M4(a)")], m("M3(b)"))  # (L + b)*a - b: nothing undone
    assert not cancels([], m("M1"))


def test_distance_one_has_every_single_mutation():
    linear = parse_equation(EQUATIONS["linear"])
    assert [str(c) for c in choices(linear)] == ["M1"] + [f"M{k}({q})" for k in (2, 3, 4, 5) for q in "ab"]
    assert len(variants(linear, 1, count=20)) == 9
    assert len(variants(parse_equation(EQUATIONS["quadratic"]), 1, count=20)) == 13


def test_the_papers_627_variants():
    # 20 per distance 2-5 and every single mutation at distance 1: 627 for the seven equations
    total = sum(
        len(variants(parse_equation(text), d, count=20, seed=0))
        for text in EQUATIONS.values()
        for d in range(1, 6)
    )
    assert total == 627


def test_variants_are_distinct_seeded_and_never_introduce_constants():
    eq = parse_equation(EQUATIONS["quadratic"])
    first = variants(eq, 3, count=20, seed=1)
    assert [v.text for v in first] == [v.text for v in variants(eq, 3, count=20, seed=1)]
    assert [v.text for v in first] != [v.text for v in variants(eq, 3, count=20, seed=2)]
    assert len({v.text for v in first}) == 20
    for v in first:
        assert v.distance == 3
        assert v.equation.lhs.free_symbols | v.equation.rhs.free_symbols <= {*eq.coefficients, eq.variable}
        assert not any(cancels(v.mutations[:i], m) for i, m in enumerate(v.mutations))
        assert apply_all(eq, v.mutations).text == v.text
        assert v.to_dict() == {
            "formula": v.text,
            "distance": 3,
            "mutations": [str(m) for m in v.mutations],
            "size": v.equation.size,
        }


def test_an_equation_without_coefficients_has_only_m1():
    eq = parse_equation("x**2 = 4")
    assert [v.text for v in variants(eq, 1)] == ["4 = x**2"]
    assert variants(eq, 2) == []


@pytest.mark.parametrize("bad", ["M6(a)", "M2", "M1(a)", "swap"])
def test_bad_mutation_names(bad):
    with pytest.raises(FormulaError):
        parse_mutation(bad)


def test_bad_distance_and_count():
    eq = parse_equation(EQUATIONS["linear"])
    with pytest.raises(FormulaError):
        variants(eq, 0)
    with pytest.raises(FormulaError):
        variants(eq, 2, count=-1)
