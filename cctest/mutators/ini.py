"""INI: insert a ``print`` of a variable.

The only difference a mutant may make is the extra output, so INI prints a variable right after
the assignment that gave it its value (it is certainly bound there), and only when that value's
``str()`` runs no user code and cannot fail: short int literals, float and text literals,
``None``/``True``/``False``, ``len(...)``, an exact float (``_sites.SiteCollector._float``) and a
bool (``not x``; comparisons with only ``is``/``is not``/``in``/``not in``). It also prints the
target of a ``for`` over ``range(...)`` whose bounds are short int literals or ``len(...)``, as
the first statement of the loop's body (an int of at most ``sys.maxsize`` in magnitude:
``_sites.small_range_target``). Where neither applies anywhere in the window, it prints the
function's name (an ASCII one: it encodes on every stdout), a text literal, as the function's
first statement (after its docstring, which stays ``__doc__``): the trace line of print debugging,
whose ``str()`` is itself. Before the line being typed only where a statement indented as the stub
fits there (``statement_fits_before_tail``: never before a string that would be the docstring, nor
where the line's indentation differs from the stub's guess). Printing an arbitrary parameter could
call a user ``__str__`` with side effects or exceptions, and even a computed int can fail to print
(``str()`` of an int over 4,300 digits raises ValueError). It is not done in class bodies, whose
namespace may be a custom mapping, nor while ``print`` may be rebound in the document.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ._analysis import NamePool
from ._insert import InsertTransformer, insert_by_splice
from ._sites import Site
from .base import Analysis, Applied, Scheme, Variant


def print_of(value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Expr(cst.Call(func=cst.Name("print"), args=[cst.Arg(value)]))])


def _print_for(site: Site) -> cst.SimpleStatementLine:
    if site.kind == "start":
        return print_of(cst.SimpleString(repr(site.name)))
    return print_of(cst.Name(site.name))


class INI(Scheme):
    name = "INI"
    summary = "insert a print of a variable whose value prints without running user code"

    def variants(self, a: Analysis) -> list[Variant]:
        # the trace print at a function's start only where no computed value can be printed:
        # INI's mutants differ only in what they print, so one kind is variety enough
        sites = a.sites.ini or a.sites.ini_starts
        return [Variant(self.name, (s,)) for s in reversed(sites)]

    def whole(self, a: Analysis) -> list[Variant]:
        return [Variant(self.name, (s,)) for s in (*a.sites.ini, *a.sites.ini_starts)]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        inserts = [(v.key[0], _print_for(v.key[0])) for v in variants]
        if not inserts:
            return None
        if a.offsets is not None and not full:
            return Applied(code=insert_by_splice(a, inserts))
        return Applied(code=a.module.visit(InsertTransformer(inserts, full)).code)


SCHEME = INI()
