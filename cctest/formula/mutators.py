"""Mutations M1–M5 of an equation and the variants at a syntactic distance.

    M1      L = R  ->  R = L
    M2(q)   L = R  ->  L + q = R + q
    M3(q)   L = R  ->  L - q = R - q
    M4(q)   L = R  ->  L*q = R*q
    M5(q)   L = R  ->  L/q = R/q

``q`` is a coefficient already in the equation (never a new constant; coefficients are assumed
non-zero, so every mutation keeps the solution set). No mutation removes a symbol, so ``|F|``
never decreases. No mutation of a sequence cancels another (``cancels``): at most one M1 (M1 commutes
with the others, so two M1s cancel wherever they are), and no M3(q) in the same sum as an M2(q), no
M5(q) in the same product as an M4(q) (and the reverse). The syntactic distance of a variant is the
length of its sequence, and that is the number of mutations needed: no shorter sequence of M1–M5
gives the same formula (``tests/unit/formula/test_distance.py`` searches for one), so no formula
is listed at two distances.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import sympy

from ..errors import FormulaError
from .grammar import Equation, add, div, mul, neg

MUTATION_KINDS = ("M1", "M2", "M3", "M4", "M5")
_INVERSE = {"M2": "M3", "M3": "M2", "M4": "M5", "M5": "M4"}
MAX_DISTANCE = 8
_ENUMERATE_UP_TO = 3000  # sequences: enumerate them all below this, sample at random above it


@dataclass(frozen=True)
class Mutation:
    kind: str  # "M1".."M5"
    coefficient: sympy.Symbol | None = None  # None for M1

    def __str__(self) -> str:
        return self.kind if self.coefficient is None else f"{self.kind}({self.coefficient})"

    def apply(self, eq: Equation) -> Equation:
        if self.kind == "M1":
            return eq.swapped()
        q = self.coefficient
        assert q is not None
        if self.kind == "M2":
            return eq.with_sides(add(eq.lhs, q), add(eq.rhs, q))
        if self.kind == "M3":
            return eq.with_sides(add(eq.lhs, neg(q)), add(eq.rhs, neg(q)))
        if self.kind == "M4":
            return eq.with_sides(mul(eq.lhs, q), mul(eq.rhs, q))
        return eq.with_sides(div(eq.lhs, q), div(eq.rhs, q))


def parse_mutation(text: str) -> Mutation:
    """``"M3(b)"`` or ``"M1"`` -> a Mutation."""
    text = text.strip()
    if text == "M1":
        return Mutation("M1")
    if len(text) > 4 and text[:2] in MUTATION_KINDS[1:] and text[2] == "(" and text.endswith(")"):
        return Mutation(text[:2], sympy.Symbol(text[3:-1]))
    raise FormulaError(
        f"The text {text!r} is not a mutation (M1, or M2..M5 with a coefficient, e.g. 'M3(b)')."
    )


def choices(eq: Equation) -> list[Mutation]:
    """Every single mutation of ``eq``: M1, then M2..M5 with each coefficient."""
    return [Mutation("M1")] + [Mutation(k, q) for k in MUTATION_KINDS[1:] for q in eq.coefficients]


_FAMILY = {"M2": "add", "M3": "add", "M4": "mul", "M5": "mul"}


def cancels(sequence: tuple[Mutation, ...] | list[Mutation], new: Mutation) -> bool:
    """Whether ``new`` would undo a mutation of ``sequence``, so that fewer mutations reach it.

    * A second M1: M1 commutes with M2–M5 (``M1 M2(q)`` and ``M2(q) M1`` print the same), so two
      M1s anywhere in a sequence cancel and the variant is one of two fewer mutations.
    * M3(q) after M2(q), M5(q) after M4(q) and the reverse, with only M1s or mutations of the same
      kind of operation between them (``L + q + b - q``, ``L*q/b/q``): the sum or product still
      holds ``+ q``, which the inverse undoes. Past a mutation of the other kind (``(L + q)*b - q``)
      the earlier term sits inside brackets and nothing is undone.
    """
    if new.kind == "M1":
        return any(m.kind == "M1" for m in sequence)
    family = _FAMILY[new.kind]
    for prev in reversed(sequence):
        if prev.kind == "M1":
            continue
        if _FAMILY[prev.kind] != family:
            return False
        if prev.coefficient == new.coefficient and _INVERSE[prev.kind] == new.kind:
            return True
    return False


def apply_all(eq: Equation, sequence: tuple[Mutation, ...] | list[Mutation]) -> Equation:
    for m in sequence:
        eq = m.apply(eq)
    return eq


@dataclass(frozen=True)
class EquationVariant:
    """A mutant of ``original`` at syntactic distance ``len(mutations)``."""

    original: Equation
    equation: Equation
    mutations: tuple[Mutation, ...]

    @property
    def distance(self) -> int:
        return len(self.mutations)

    @property
    def text(self) -> str:
        return self.equation.text

    def to_dict(self) -> dict[str, object]:
        return {
            "formula": self.equation.text,
            "distance": self.distance,
            "mutations": [str(m) for m in self.mutations],
            "size": self.equation.size,
        }


def _valid(sequence: tuple[Mutation, ...]) -> bool:
    return all(not cancels(sequence[:i], m) for i, m in enumerate(sequence))


def variants(eq: Equation, distance: int, count: int = 20, seed: int = 0) -> list[EquationVariant]:
    """Up to ``count`` distinct variants (by printed form) at exactly ``distance`` mutations.

    Small sequence spaces are enumerated and shuffled (so distance 1 yields every single mutation
    when ``count`` allows); large ones are sampled. The same ``seed`` gives the same variants.
    """
    if not 1 <= distance <= MAX_DISTANCE:
        raise FormulaError(f"The distance must be between 1 and {MAX_DISTANCE}, not {distance}.")
    if count < 0:
        raise FormulaError(f"The count must be at least 0, not {count}.")
    rng = random.Random(f"{seed}:{eq.text}:{distance}")
    options = choices(eq)
    seen: set[str] = {eq.text}
    out: list[EquationVariant] = []

    def take(seq: tuple[Mutation, ...]) -> None:
        mutant = apply_all(eq, seq)
        if mutant.text not in seen:
            seen.add(mutant.text)
            out.append(EquationVariant(eq, mutant, seq))

    if len(options) ** distance <= _ENUMERATE_UP_TO:
        sequences = [s for s in itertools.product(options, repeat=distance) if _valid(s)]
        rng.shuffle(sequences)
        for s in sequences:
            if len(out) >= count:
                break
            take(s)
        return out
    attempts = 0
    while len(out) < count and attempts < 50 * max(count, 1):
        attempts += 1
        seq: list[Mutation] = []
        while len(seq) < distance:
            m = rng.choice(options)
            if not cancels(seq, m):
                seq.append(m)
        take(tuple(seq))
    return out
