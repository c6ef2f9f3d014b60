"""INI: insert a ``print`` of a variable.

The only difference a mutant may make is the extra output, so INI prints a variable right after
the assignment that gave it its value (it is certainly bound there), and only when that value's
``str()`` runs no user code and cannot fail: short int literals, float and text literals,
``None``/``True``/``False``, ``len(...)``, an exact float (``_sites.evident_float``) and a
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
from ._sites import is_stub, printable, small_range_target
from ._walk import BlockVisitor, Site, Walk
from .base import Analysis, Applied, Scheme, Variant


def print_of(value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Expr(cst.Call(func=cst.Name("print"), args=[cst.Arg(value)]))])


def _print_for(site: Site) -> cst.SimpleStatementLine:
    if site.kind == "start":
        return print_of(cst.SimpleString(repr(site.name)))
    return print_of(cst.Name(site.name))


class PrintSites(BlockVisitor):
    """INI's sites: after an assignment of a printable value, at the top of a small range loop's
    body (``sites``), and a function's start (``starts``, the fallback), where the namespace is a
    plain frame or module (not a class body, whose namespace may be custom)."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        self.sites: list[Site] = []
        self.starts: list[Site] = []
        self._range_bodies: dict[int, str] = {}  # body of a small range loop -> its target

    def visit_For(self, node: cst.For) -> None:
        if small_range_target(node, self.walk.shadowed) and isinstance(node.body, cst.IndentedBlock):
            self._range_bodies[id(node.body)] = node.target.value  # type: ignore[attr-defined]

    def block(
        self, index: int, node: cst.CSTNode, body: list[cst.BaseStatement], first: int, func_body: bool
    ) -> None:
        w = self.walk
        own = w.own
        if own is None and not (index == -1 and not w.wrapped and w.at_window_level):
            return
        if "print" in w.shadowed:
            return
        if func_body and own is not None and own.name.isascii():
            # a print of the function's name (a text literal) as its first statement, after the
            # docstring (a body that is only its docstring: after it, where the user types next);
            # before the stub only where that fits the unfinished line (statement_fits_before_tail)
            at_stub = first < len(body) and is_stub(body[first])
            if 0 < first == len(body) or (first < len(body) and (w.before_stub or not at_stub)):
                self.starts.append(w.site("start", index, node, pos=first, name=own.name))
        target = self._range_bodies.get(id(node))
        if target is not None and body and not is_stub(body[0]):
            # the target of a small range loop, first thing in the loop's body
            self.sites.append(w.site("block", index, node, pos=0, name=target))
        ints, kinds = w.ints(), w.kinds()
        for p, stmt in enumerate(body):
            if is_stub(stmt):
                break
            if not (
                isinstance(stmt, cst.SimpleStatementLine)
                and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Assign)
            ):
                continue
            a = stmt.body[0]
            if (
                len(a.targets) == 1
                and isinstance(a.targets[0].target, cst.Name)
                and printable(a.value, ints, kinds, w.shadowed)
            ):
                self.sites.append(w.site("block", index, node, pos=p + 1, name=a.targets[0].target.value))


class INI(Scheme):
    name = "INI"
    visitors = (PrintSites,)
    summary = "insert a print of a variable whose value prints without running user code"

    def variants(self, a: Analysis) -> list[Variant]:
        # the trace print at a function's start only where no computed value can be printed:
        # INI's mutants differ only in what they print, so one kind is variety enough
        found = a.found(PrintSites)
        sites = found.sites or found.starts
        return [Variant(self.name, (s,)) for s in reversed(sites)]

    def whole(self, a: Analysis) -> list[Variant]:
        return [Variant(self.name, (s,)) for s in (*a.found(PrintSites).sites, *a.found(PrintSites).starts)]

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
