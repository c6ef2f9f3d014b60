"""FORM: rewrite an equation written in a comment or docstring into an equivalent form (M1–M5).

A prompt that says ``Solve a*x + b = 0 for x`` and one that says ``Solve (a*x + b)*a = 0*a for x``
ask for the same code (coefficients are non-zero), yet models answer them differently (Sarker et
al., *Syntactic Robustness for LLM-based Code Generation*). FORM makes such mutants, so CCTest's
consistency check covers the wording of formulas as well. Only comment and string text changes:
the program's structure is untouched. One variant per single mutation of each equation (M1 first,
then M2–M5 with each coefficient), nearest equation to the cursor first.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formula.text import find_equations
from ._analysis import NamePool
from .base import Analysis, Applied, Scheme, Variant


class FORM(Scheme):
    name = "FORM"
    summary = "rewrite an equation in a comment or docstring equivalently (M1-M5)"

    def variants(self, a: Analysis) -> list[Variant]:
        out: list[Variant] = []
        found_all = find_equations(a.source)
        if not found_all:
            return out
        from ..formula.mutators import choices  # SymPy: loaded once an equation is found

        for found in reversed(found_all):
            for m in choices(found.equation):
                out.append(Variant(self.name, (found.start, found.end, m.apply(found.equation).text, str(m))))
        return out

    def whole(self, a: Analysis) -> list[Variant]:
        return [v for v in self.variants(a) if v.key[3] == "M1"]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        if not variants:
            return None
        parts: list[str] = []
        last = 0
        for start, end, text, _ in sorted(v.key for v in variants):
            if start < last:
                return None
            parts += [a.source[last:start], text]
            last = end
        return Applied(code="".join(parts) + a.source[last:])


SCHEME = FORM()
