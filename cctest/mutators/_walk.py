"""The one batched libcst pass that finds the sites of every scheme asked for.

Each scheme names the site visitors it reads (``Scheme.visitors``: a ``SiteVisitor`` subclass that
lives in the scheme's own module, or one it shares, such as RTF's conditions that FMT also
parenthesises). ``collect`` runs them all in ONE traversal with libcst's ``visit_batched``; a
``Walk`` shared by the visitors tracks where the traversal is, through the batch's
``before_visit``/``after_leave`` hooks, so that it is up to date before any visitor's ``visit_*``
and after every ``leave_*`` of a node:

- the path of node ids from the module down (a site's ``path``: what a pruned transform visits);
- scopes: a site is "at a function's own level" when no lambda, comprehension or class lies
  between it and the function, which is where that function's facts (``_analysis.FunctionFacts``:
  its evident ints and kinds, its parameters) hold (``Walk.own``);
- the pre-order numbering of functions and indented blocks, and the indentation in force (libcst's
  indent tokens, a ``match`` statement's own case indentation included), for ``code_at``.

A visitor keeps its sites on itself and adds to ``wanted`` the ids of the nodes whose text offsets
its scheme splices at. A batched visitor cannot prune a subtree, so a visitor that must not look
inside one (a rename inside an import) keeps its own depth counter.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from ._analysis import FunctionFacts


@dataclass(frozen=True)
class Site:
    kind: str  # "test", "aug", "assign", "binop", "ifexp", "block", "start" (INI: a function's start), ...
    index: int  # pre-order index among nodes of that kind (blocks: the block's index, -1 the module)
    node: int  # id() of the node in the (cached, immutable) analysed module
    path: tuple[int, ...]  # id()s of the node and its ancestors: what a pruned transform must visit
    func: int  # index of the function whose own level it is in; -1: none
    pos: int = 0  # block sites: the statement index to insert before
    name: str = ""  # INI: the variable to print; GRA: the name for the dead code's value ("" -> 0)
    start: bool = False  # GRA: the start of a function body
    indents: tuple[str, ...] = ()  # the indentation in force at the site (libcst's indent tokens)
    obj: Any = field(default=None, compare=False, hash=False, repr=False)  # the node itself


class _Frame:
    __slots__ = ("facts", "depth")

    def __init__(self, facts: FunctionFacts | None) -> None:
        self.facts = facts
        self.depth = 0  # lambdas / comprehensions / classes entered since the function


_NESTED = (cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class Walk:
    """Where the batched pass is, shared by every site visitor (see the module docstring)."""

    def __init__(
        self,
        functions: list[FunctionFacts],
        shadowed: frozenset[str],
        wrapped: bool,
        default_indent: str = "    ",
        before_stub: bool = False,
    ) -> None:
        self.functions = functions
        self.shadowed = shadowed
        self.wrapped = wrapped  # the window is analysed under an 'if 1:' line
        self.before_stub = before_stub  # a statement may go before the stub (the unfinished line)
        self.default_indent = default_indent
        self.stack: list[int] = []
        self.frames: list[_Frame] = [_Frame(None)]
        self.n_funcs = 0
        self.n_blocks = 0
        self.block_ids: dict[int, int] = {}
        self.func_index_of: dict[int, int] = {}  # id(FunctionDef) -> its pre-order index
        self.func_bodies: set[int] = set()  # ids of the indented blocks that are function bodies
        self.indents: tuple[str, ...] = ()

    # the hooks of the batched visit
    def before_visit(self, node: cst.CSTNode) -> None:
        self.stack.append(id(node))
        if isinstance(node, cst.FunctionDef):
            i = self.n_funcs
            self.n_funcs += 1
            facts = self.functions[i] if i < len(self.functions) else None
            if facts is not None and facts.name != node.name.value:
                facts = None  # numbering disagrees (should not happen): no facts, no renames
            self.frames.append(_Frame(facts))
            self.func_index_of[id(node)] = i
            if isinstance(node.body, cst.IndentedBlock):
                self.func_bodies.add(id(node.body))
        elif isinstance(node, _NESTED):
            self.frames[-1].depth += 1
        elif isinstance(node, cst.IndentedBlock):
            self.block_ids[id(node)] = self.n_blocks
            self.n_blocks += 1
            self.indents = (*self.indents, node.indent if node.indent is not None else self.default_indent)
        elif isinstance(node, cst.Match):
            self.indents = (*self.indents, node.indent if node.indent is not None else self.default_indent)

    def after_leave(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.FunctionDef):
            self.frames.pop()
        elif isinstance(node, _NESTED):
            self.frames[-1].depth -= 1
        elif isinstance(node, (cst.IndentedBlock, cst.Match)):
            self.indents = self.indents[:-1]
        self.stack.pop()

    # what the visitors read
    @property
    def own(self) -> FunctionFacts | None:
        """The facts of the function whose own level the pass is at, or None."""
        f = self.frames[-1]
        return f.facts if f.depth == 0 else None

    @property
    def at_window_level(self) -> bool:
        return len(self.frames) == 1 and self.frames[0].depth == 0

    def func_index(self) -> int:
        own = self.own
        return own.index if own is not None else -1

    def ints(self) -> frozenset[str]:
        own = self.own
        return own.int_locals if own is not None else frozenset()

    def kinds(self) -> dict[str, str]:
        own = self.own
        return own.kinds if own is not None else {}

    def site(
        self, kind: str, index: int, obj: cst.CSTNode, *, pos: int = 0, name: str = "", start: bool = False
    ) -> Site:
        """A site at the node being visited (``obj``: the node a scheme rewrites there)."""
        return Site(
            kind,
            index,
            self.stack[-1],
            tuple(self.stack),
            self.func_index(),
            pos=pos,
            name=name,
            start=start,
            indents=self.indents,
            obj=obj,
        )


_METHODS: dict[type, tuple[str, ...]] = {}


class SiteVisitor(cst.BatchableCSTVisitor):
    """A scheme's site finder: one visitor of the batched pass, reading ``self.walk``."""

    def __init__(self, walk: Walk) -> None:
        super().__init__()
        self.walk = walk
        self.wanted: set[int] = set()  # ids of the nodes whose text offsets the scheme splices at

    def get_visitors(self) -> Mapping[str, Callable[[cst.CSTNode], None]]:
        # libcst's own version inspects every member of the instance, for each instance; the
        # methods a class defines are found once per class here
        names = _METHODS.get(type(self))
        if names is None:
            names = tuple(
                name
                for name, fn in inspect.getmembers(type(self), inspect.isfunction)
                if name.startswith(("visit_", "leave_")) and not getattr(fn, "_is_no_op", False)
            )
            _METHODS[type(self)] = names
        return {name: getattr(self, name) for name in names}


def is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_future(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(s, cst.ImportFrom) and isinstance(s.module, cst.Name) and s.module.value == "__future__"
        for s in stmt.body
    )


class BlockVisitor(SiteVisitor):
    """A site visitor that looks at the statements of every block: each indented block, and the
    module's body unless the window is wrapped (nothing may go before the 'if 1:' line)."""

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        w = self.walk
        self._visit_block(w.block_ids[id(node)], node, node.body, id(node) in w.func_bodies)

    def visit_Module(self, node: cst.Module) -> None:
        if not self.walk.wrapped:
            self._visit_block(-1, node, node.body, False)

    def _visit_block(
        self, index: int, node: cst.CSTNode, body: Sequence[cst.BaseStatement], func_body: bool
    ) -> None:
        body = list(body)
        self.wanted.update(id(s) for s in body)
        first = 0  # the first statement that something may go before: not a docstring or __future__
        if body and is_docstring(body[0]):
            first = 1
        if index == -1:
            futures = [i for i, s in enumerate(body) if _is_future(s)]
            if futures:
                first = max(first, futures[-1] + 1)
        self.block(index, node, body, first, func_body)

    def block(
        self, index: int, node: cst.CSTNode, body: list[cst.BaseStatement], first: int, func_body: bool
    ) -> None:
        """The sites of one block (``index``: the block's, -1 the module; ``first``: see above)."""


def collect(
    module: cst.Module,
    kinds: Sequence[type[SiteVisitor]],
    functions: list[FunctionFacts],
    shadowed: frozenset[str],
    wrapped: bool,
    before_stub: bool = False,
) -> dict[type[SiteVisitor], SiteVisitor]:
    """Run the site visitors ``kinds`` over ``module`` in one batched pass; each one found."""
    walk = Walk(functions, shadowed, wrapped, module.default_indent, before_stub)
    found = {kind: kind(walk) for kind in kinds}
    if found:
        cst.visit_batched(module, found.values(), walk.before_visit, walk.after_leave)
    return found


__all__ = ["BlockVisitor", "Site", "SiteVisitor", "Walk", "collect", "is_docstring"]
