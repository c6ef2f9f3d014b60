"""REP_R / REP_C: rename a function parameter (``Param1``, or ``Add_Param_b`` from ``add``'s ``b``).

As in the paper, ordinary parameters are renamed (``def add(a, b)`` -> ``def add(a, Param1)``),
plus ``*args`` and ``**kwargs``. A parameter's name is part of its function's keyword interface, so
a name is left alone when the document (the prompt, or the whole file, plus the optional
``context``: the code after the cursor, a test file) shows that it matters: it is passed by keyword
anywhere (``add(1, b=2)``, found by a conservative text scan that ignores only the function's own
default), the function is called with ``**`` or wrapped by ``functools.partial``, the document
mentions introspection (``inspect``, ``signature``, ``__code__``, ``locals``, ``vars``, ...), or
the function is decorated, named ``test*`` (pytest fixtures), or a dunder other than
``__init__``. Keyword-only parameters and a method's first parameter are never renamed. The rules
are in ``_analysis`` (``scan_document``, ``analyse_functions``).

The one observable difference left, inherent to the scheme, is what the document cannot see:
callers outside it that pass the argument by keyword, introspection from outside, and the
parameter's name in the TypeError of a wrong call ("missing 1 required positional argument: 'b'").
"""

from __future__ import annotations

from ._rename import RenameScheme

REP_R = RenameScheme("REP_R", "param", "R", "rename a function parameter to a generic name (Param1)")
REP_C = RenameScheme(
    "REP_C", "param", "C", "rename a function parameter to a name from its context (Add_Param_b)"
)
