"""Definition 10: a variant's distance is the number of mutations needed to reach it.

A breadth-first search over M1–M5 (every mutation, no rule against cancelling) from each of the
paper's seven equations finds the fewest mutations that give a formula; no variant listed at
distance d may be reached in fewer than d. The search goes to depth 4, so it covers every variant
at distances 1–5 (a variant at distance 5 must not be reached at depth 4 or less).
"""

from __future__ import annotations

import pytest

from cctest.formula import EQUATIONS, parse_equation, reduce, variants
from cctest.formula.grammar import Equation
from cctest.formula.mutators import choices


def _fewest_mutations(eq: Equation, depth: int) -> dict[str, int]:
    """Printed formula -> the fewest mutations that give it, for every formula within ``depth``."""
    options = choices(eq)
    seen = {eq.text: 0}
    frontier = [eq]
    for level in range(1, depth + 1):
        following: list[Equation] = []
        for f in frontier:
            for m in options:
                g = m.apply(f)
                if g.text not in seen:
                    seen[g.text] = level
                    following.append(g)
        frontier = following
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(EQUATIONS))
def test_no_variant_is_reached_by_fewer_mutations_than_its_distance(kind):
    original = parse_equation(EQUATIONS[kind])
    fewest = _fewest_mutations(original, 4)
    listed: dict[str, int] = {}
    for distance in range(1, 6):
        for v in variants(original, distance, count=20, seed=0):
            assert v.text not in listed, f"{v.text} listed at distances {listed[v.text]} and {distance}"
            listed[v.text] = distance
            assert fewest.get(v.text, 5) == distance, (v.text, [str(m) for m in v.mutations])


@pytest.mark.parametrize(
    "mutations",
    [
        ("M1", "M2(b)", "M1"),  # two M1s cancel: this is M2(b) alone
        ("M2(a)", "M2(b)", "M3(a)"),  # + a ... - a in the same sum
        ("M4(a)", "M5(b)", "M5(a)"),  # * a ... / a in the same product
    ],
)
def test_cancelling_sequences_are_never_listed(mutations):
    eq = parse_equation(EQUATIONS["linear"])
    for d in (2, 3):
        assert all(tuple(map(str, v.mutations)) != mutations for v in variants(eq, d, count=10_000))


@pytest.mark.parametrize("kind", list(EQUATIONS))
def test_no_reduction_grows_a_formula(kind):
    original = parse_equation(EQUATIONS[kind])
    for distance in range(1, 6):
        for v in variants(original, distance, count=20, seed=0):
            out = reduce(v.equation)
            sizes = [v.equation.size] + [f.size for f in out.forms]
            assert sizes == sorted(sizes, reverse=True), (v.text, out.steps, [f.text for f in out.forms])
    assert reduce(parse_equation("0 = a*x + b")).equation.text == "a*x + b = 0"  # R1 grew it to 8
    assert reduce(original).equation.size <= original.size
