"""REP_R / REP_C: rename a function parameter (``Param1``, or ``Add_Param_b`` from ``add``'s ``b``).

Only parameters no caller can pass by keyword are renamed: positional-only parameters (before
``/``), ``*args`` and ``**kwargs``. Renaming ``b`` in ``def add(a, b)`` changes the function's
keyword interface (``add(1, b=2)`` would fail), so it is not a behaviour-preserving mutation.
"""

from __future__ import annotations

from ._rename import RenameScheme

REP_R = RenameScheme(
    "REP_R", "param", "R", "rename a keyword-less function parameter to a generic name (Param1)"
)
REP_C = RenameScheme(
    "REP_C", "param", "C", "rename a keyword-less function parameter to a name from its context (Add_Param_b)"
)
