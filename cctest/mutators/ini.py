"""INI: insert a ``print`` of a variable.

The only difference a mutant may make is the extra output, so INI prints a variable right after
the assignment that gave it its value (it is certainly bound there), and only when that value's
``str()`` runs no user code and cannot fail: short int literals, float and text literals,
``None``/``True``/``False`` and ``len(...)``. It also prints the target of a ``for`` over
``range(...)`` whose bounds are short int literals or ``len(...)``, as the first statement of the
loop's body (an int of at most ``sys.maxsize`` in magnitude: ``_sites.small_range_target``).
Printing an arbitrary parameter could call a user ``__str__`` with side effects or exceptions,
and even a computed int can fail to print (``str()`` of an int over 4,300 digits raises
ValueError). It is not done in class bodies, whose namespace may be a custom mapping, nor while
``print`` may be rebound in the document.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ._analysis import NamePool
from ._insert import InsertTransformer, insert_by_splice
from .base import Analysis, Applied, Scheme, Variant


def print_of(name: str) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(
        body=[cst.Expr(cst.Call(func=cst.Name("print"), args=[cst.Arg(cst.Name(name))]))]
    )


class INI(Scheme):
    name = "INI"
    summary = "insert a print of a variable whose value prints without running user code"

    def variants(self, a: Analysis) -> list[Variant]:
        return [Variant(self.name, (s,)) for s in reversed(a.sites.ini)]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        inserts = [(v.key[0], print_of(v.key[0].name)) for v in variants]
        if not inserts:
            return None
        if a.offsets is not None and not full:
            return Applied(code=insert_by_splice(a, inserts))
        return Applied(code=a.module.visit(InsertTransformer(inserts, full)).code)


SCHEME = INI()
