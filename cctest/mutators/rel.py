"""REL_R / REL_C: rename a local variable (``LocalVar1``, or ``compare_res`` from ``compare``'s ``res``).

Scoping rules are in ``_analysis`` (closures, ``global``/``nonlocal``, ``locals()``/``eval``,
f-string ``{x=}``, imports and nested definitions are respected or skipped).
"""

from __future__ import annotations

from ._rename import RenameScheme

REL_R = RenameScheme("REL_R", "local", "R", "rename a local variable to a generic name (LocalVar1)")
REL_C = RenameScheme(
    "REL_C", "local", "C", "rename a local variable to a name from its context (compare_res)"
)
