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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .grammar import Equation, parse_equation, semantics, size_of
    from .mutators import EquationVariant, Mutation, parse_mutation, variants
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

# name -> submodule: SymPy (a second to import) loads on first use, not with the mutators that
# only look for an equation in a comment (``text.find_equations``)
_LAZY = {
    "Equation": "grammar",
    "parse_equation": "grammar",
    "semantics": "grammar",
    "size_of": "grammar",
    "Mutation": "mutators",
    "EquationVariant": "mutators",
    "parse_mutation": "mutators",
    "variants": "mutators",
    "RULES": "reductions",
    "Reduction": "reductions",
    "reduce": "reductions",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EQUATIONS",
    "RULES",
    "Equation",
    "Mutation",
    "Reduction",
    "EquationVariant",
    "parse_equation",
    "parse_mutation",
    "reduce",
    "semantics",
    "size_of",
    "variants",
]
