"""Registry for the behaviour-preservation corpus's own tests.

Each corpus module holds code under mutation, then a marker line, then its checks. The checks are
never mutated: tests/unit/mutators/test_behaviour.py runs them against the original module and against
every mutant of it, and compares what they observe. A check is a function of the loaded module ``m``
(a ``types.ModuleType``); a property also takes one input drawn by hypothesis from its strategy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MARKER = "# ==== CHECKS (never mutated) ===="


class Checks:
    """The checks of one corpus module: plain cases and hypothesis properties, by name."""

    def __init__(self) -> None:
        self.cases: dict[str, Callable[[Any], Any]] = {}
        self.properties: dict[str, tuple[Any, Callable[[Any, Any], Any]]] = {}

    def case(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Register ``fn(m)``: its return value, exception and output must survive mutation."""
        if fn.__name__ in self.cases:
            raise ValueError(f"duplicate case name {fn.__name__}")
        self.cases[fn.__name__] = fn
        return fn

    def prop(self, strategy: Any) -> Callable[[Callable[[Any, Any], Any]], Callable[[Any, Any], Any]]:
        """Register ``fn(m, x)``, run on inputs drawn from ``strategy``."""

        def register(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
            if fn.__name__ in self.properties:
                raise ValueError(f"duplicate property name {fn.__name__}")
            self.properties[fn.__name__] = (strategy, fn)
            return fn

        return register
