"""LOOP: a ``for`` over ``range(...)`` written as the equivalent ``while`` loop, only where exact.

::

    for i in range(a, n):            i = a
        body                 ->      while i < n:
                                         body
                                         i += 1

A ``for`` loop and this ``while`` loop differ in several ways, so the rewrite is made only where
none of them can show (every condition is checked on the window's code):

- ``range`` takes ``a`` and ``n`` once and requires ints; the ``while`` re-reads ``n`` on every
  test. So both arguments must be evident ints (``_analysis``), ``n`` an int literal or a local
  evident int that the body never binds, and there is no step argument. ``a`` is evaluated once,
  then ``n``, in both versions; comparing and adding ints runs no user code;
- after the loop, the ``for`` leaves ``i`` at its last value (or unbound for an empty range), the
  ``while`` one step further (or at ``a``). So ``i`` must be a plain local of the function (not
  global/nonlocal, nested scopes only read it, a function that cannot see its own variables:
  the REL rename rules), every occurrence of ``i`` in the function must be inside the loop's
  body or its target, none of them inside a nested function, lambda, class or comprehension
  (a closure or a lazy generator would read ``i`` later), and ``range``'s arguments must not
  mention it;
- the body must not bind ``i`` (the ``for`` would go on from the next value regardless) nor hold
  a ``continue`` (it would skip the increment); the ``for`` has no ``else``, is not ``async``,
  and does not contain the cursor (the window's stub), since the text typed next would land
  before the increment.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ..context import STUB_COMMENT
from ._analysis import NamePool
from ._rename import RenameSites
from ._sites import code_at, evident_int_cst
from ._walk import Site, SiteVisitor, Walk
from .base import Analysis, Applied, Scheme, Variant
from .fmt import with_offsets

_SCOPES = (
    cst.FunctionDef,
    cst.Lambda,
    cst.ClassDef,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
)


class _Uses(cst.CSTVisitor):
    """Whether a subtree binds ``name``, reads it in a nested scope, or holds a ``continue``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.binds = False
        self.nested = False
        self.has_continue = False
        self.depth = 0

    def _targets(self, *targets: cst.CSTNode | None) -> None:
        for t in targets:
            if t is not None and any(isinstance(n, cst.Name) and n.value == self.name for n in _walk(t)):
                self.binds = True

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _SCOPES):
            self.depth += 1
        if isinstance(node, cst.Name) and node.value == self.name and self.depth:
            self.nested = True
        if isinstance(node, cst.Continue):
            self.has_continue = True
        if isinstance(node, cst.AssignTarget):
            self._targets(node.target)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            self._targets(node.target)
        elif isinstance(node, (cst.For, cst.CompFor)):
            self._targets(node.target)
        elif isinstance(node, cst.NamedExpr):
            self._targets(node.target)
        elif isinstance(node, (cst.AsName)):
            self._targets(node.name)
        elif isinstance(node, cst.Del):
            self._targets(node.target)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            self._targets(*(n.name for n in node.names))
        elif isinstance(node, (cst.MatchAs, cst.MatchStar)):
            self._targets(node.name)
        elif isinstance(node, cst.MatchMapping):
            self._targets(node.rest)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self._targets(node.name)
        return True

    def on_leave(self, original: cst.CSTNode) -> None:
        if isinstance(original, _SCOPES):
            self.depth -= 1


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    out = [node]
    for child in node.children:
        out += _walk(child)
    return out


def rewritable(a: Analysis, site: Site) -> bool:
    """Every condition of the module docstring, for the ``for`` at ``site`` (``a`` has offsets)."""
    node: cst.For = site.obj
    if site.func < 0:
        return False
    facts = a.functions[site.func]
    name = site.name
    if name not in facts.rename_locals or name not in facts.int_locals:
        return False
    call = node.iter
    assert isinstance(call, cst.Call)
    args = call.args
    if not 1 <= len(args) <= 2 or any(x.keyword is not None or x.star for x in args):
        return False
    ints = facts.int_locals
    if not all(evident_int_cst(x.value, ints, a.shadowed) for x in args):
        return False
    stop = args[-1].value
    if any(isinstance(n, cst.Name) and n.value == name for x in args for n in _walk(x.value)):
        return False
    body = _Uses(name)
    node.body.visit(body)
    if body.binds or body.nested or body.has_continue:
        return False
    if not (
        isinstance(stop, cst.Integer)
        or (isinstance(stop, cst.UnaryOperation) and isinstance(stop.expression, cst.Integer))
        or (isinstance(stop, cst.Name) and stop.value in ints and not _binds(node.body, stop.value))
    ):
        return False
    if isinstance(stop, cst.Name) and stop.value == name:
        return False
    assert a.offsets is not None
    start, end = a.offsets[id(node)]
    if STUB_COMMENT in a.source[start:end]:
        return False
    # every occurrence of the target in the function is in this loop's body or its target
    occurrences = a.found(RenameSites).names.get(site.func, {}).get(name, [])
    return all(start <= a.offsets[id(n)][0] < end for n, _ in occurrences)


def _binds(tree: cst.CSTNode, name: str) -> bool:
    v = _Uses(name)
    tree.visit(v)
    return v.binds or v.nested


def as_while(node: cst.For) -> tuple[cst.SimpleStatementLine, cst.While]:
    """``i = a`` and ``while i < n: body; i += 1`` for ``for i in range([a, ]n): body``."""
    assert isinstance(node.iter, cst.Call) and isinstance(node.target, cst.Name) and node.orelse is None
    args = node.iter.args
    first: cst.BaseExpression = args[0].value if len(args) == 2 else cst.Integer("0")
    stop = args[-1].value
    target = cst.Name(node.target.value)
    init = cst.SimpleStatementLine(
        body=[cst.Assign(targets=[cst.AssignTarget(target)], value=first)], leading_lines=node.leading_lines
    )
    body = node.body
    assert isinstance(body, cst.IndentedBlock)
    step = cst.SimpleStatementLine(body=[cst.AugAssign(target, cst.AddAssign(), cst.Integer("1"))])
    loop = cst.While(
        test=cst.Comparison(target, [cst.ComparisonTarget(cst.LessThan(), stop)]),
        body=body.with_changes(body=[*body.body, step]),
    )
    return init, loop


class LoopSites(SiteVisitor):
    """LOOP's candidates: a ``for`` over ``range(...)`` at a function's own level (``rewritable``
    checks the rest on the analysed window)."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        self.sites: list[Site] = []

    def visit_For(self, node: cst.For) -> None:
        w = self.walk
        if (
            w.own is not None
            and node.asynchronous is None
            and isinstance(node.target, cst.Name)
            and isinstance(node.iter, cst.Call)
            and isinstance(node.iter.func, cst.Name)
            and node.iter.func.value == "range"
            and "range" not in w.shadowed
            and isinstance(node.body, cst.IndentedBlock)
            and node.orelse is None
        ):
            self.sites.append(w.site("loop", 0, node, name=node.target.value))
            self.wanted.add(id(node))


class LOOP(Scheme):
    name = "LOOP"
    visitors = (LoopSites, RenameSites)
    summary = "write a for over range(...) as the equivalent while loop, where exact"
    # off unless named: it passes the behaviour checks, but its mutants are rarely within the 0.1
    # distance bound at a cursor (a loop's AST changes in several places), so it adds cost, not supply
    default = False

    def variants(self, a: Analysis) -> list[Variant]:
        loops = a.found(LoopSites).sites
        if not loops:
            return []
        a = with_offsets(a)
        return [Variant(self.name, (s,)) for s in reversed(loops) if rewritable(a, s)]

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        if not variants:
            return None
        a = with_offsets(a)
        # an outer loop's rewrite would hold the inner one's old text: innermost only, then
        # the outer ones that contain none of the others
        nodes = [v.key[0] for v in variants]
        assert a.offsets is not None
        spans = {s.node: a.offsets[s.node] for s in nodes}
        chosen = [
            s
            for s in nodes
            if not any(o is not s and spans[s.node][0] <= spans[o.node][0] < spans[s.node][1] for o in nodes)
        ]
        edits: list[tuple[cst.CSTNode | int, str]] = []
        for s in chosen:
            init, loop = as_while(s.obj)
            edits.append((s.obj, code_at(a.module, init, s.indents) + code_at(a.module, loop, s.indents)))
        return Applied(code=a.splice(edits))


SCHEME = LOOP()
