"""Formulas of the syntactic-robustness study (Sarker et al.): equations, mutations, reductions.

    >>> from cctest.formula import parse_equation, variants, reduce
    >>> eq = parse_equation("a*x + b = 0")
    >>> eq.size
    7
    >>> [v.text for v in variants(eq, 1, count=20) if str(v.mutations[0]) == "M4(a)"]
    ['(a*x + b)*a = 0*a']
    >>> reduce(parse_equation("0 + b = a*x + b + b")).equation.text
    'a*x + b = 0'

``grammar`` parses and prints (as written) and measures ``|F|``; ``mutators`` holds M1–M5 and the
variants at a distance; ``reductions`` holds R1–R5 and the pre-processing ``reduce``.
"""

from __future__ import annotations

from .grammar import Equation, parse_equation, semantics, size_of
from .mutators import Mutation, Variant, parse_mutation, variants
from .reductions import RULES, Reduction, reduce

# The seven equations of the study, by kind.
EQUATIONS: dict[str, str] = {
    "linear": "a*x + b = 0",
    "quadratic": "a*x**2 + b*x + c = 0",
    "sin": "a*sin(x) = b",
    "cos": "a*cos(x) = b",
    "tan": "a*tan(x) = b",
    "log": "a*log(x) = b",
    "ln": "a*ln(x) = b",
}

__all__ = [
    "EQUATIONS",
    "RULES",
    "Equation",
    "Mutation",
    "Reduction",
    "Variant",
    "parse_equation",
    "parse_mutation",
    "reduce",
    "semantics",
    "size_of",
    "variants",
]
