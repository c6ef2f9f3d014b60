"""REP_R / REP_C: rename a function parameter (``Param1``, or ``Add_Param_b`` from ``add``'s ``b``).

Only parameters whose name no caller can observe are renamed: ``*args``, ``**kwargs``, and
positional-only parameters (before ``/``) that have a default in a function with ``**kwargs``.
Renaming ``b`` in ``def add(a, b)`` changes the function's keyword interface (``add(1, b=2)`` would
fail); renaming a required positional-only ``b`` changes the TypeError a wrong call raises
("missing 1 required positional argument: 'b'"), which CPython's own test_string checks.
"""

from __future__ import annotations

from ._rename import RenameScheme

REP_R = RenameScheme(
    "REP_R", "param", "R", "rename a keyword-less function parameter to a generic name (Param1)"
)
REP_C = RenameScheme(
    "REP_C", "param", "C", "rename a keyword-less function parameter to a name from its context (Add_Param_b)"
)
