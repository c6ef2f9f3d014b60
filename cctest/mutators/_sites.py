"""Where each scheme applies: one libcst pass over a window collects the sites of every scheme.

A site is named by the pre-order index of its node among the nodes of the same kind (the n-th
``If``/``While``/... test, the n-th ``AugAssign``, the n-th indented block). The schemes'
transformers count the same node kinds in the same order, so they find the site again without
positions metadata (which would cost another pass). Scope tracking mirrors ``_analysis``: a site
is "at a function's own level" when no lambda, comprehension or class lies between it and the
function, which is where that function's facts (its evident ints, its parameters) hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, WhitespaceInclusivePositionProvider

from ..context import STUB_COMMENT
from ._analysis import FunctionFacts

INT_BINOPS = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.FloorDivide,
    cst.Modulo,
    cst.LeftShift,
    cst.RightShift,
    cst.BitAnd,
    cst.BitOr,
    cst.BitXor,
)
AUG_TO_BIN: dict[type, type] = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo,
    cst.LeftShiftAssign: cst.LeftShift,
    cst.RightShiftAssign: cst.RightShift,
    cst.BitAndAssign: cst.BitAnd,
    cst.BitOrAssign: cst.BitOr,
    cst.BitXorAssign: cst.BitXor,
}
BIN_TO_AUG = {v: k for k, v in AUG_TO_BIN.items()}
_FLOAT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo)
TEST_NODES = (cst.If, cst.While, cst.IfExp, cst.Assert, cst.CompIf)


def is_stub(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and stmt.trailing_whitespace.comment is not None
        and stmt.trailing_whitespace.comment.value == STUB_COMMENT
    )


def evident_int_cst(node: cst.BaseExpression, ints: frozenset[str], shadowed: frozenset[str]) -> bool:
    """libcst twin of ``_analysis.evident_int`` (which reads an ``ast`` node): ``node``
    certainly evaluates to an ``int``."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Name):
        return node.value in ints
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, (cst.Minus, cst.Plus, cst.BitInvert)) and evident_int_cst(
            node.expression, ints, shadowed
        )
    if isinstance(node, cst.BinaryOperation):
        return (
            isinstance(node.operator, INT_BINOPS)
            and evident_int_cst(node.left, ints, shadowed)
            and evident_int_cst(node.right, ints, shadowed)
        )
    if isinstance(node, cst.Call):
        return (
            isinstance(node.func, cst.Name)
            and node.func.value == "len"
            and "len" not in shadowed
            and len(node.args) == 1
            and node.args[0].keyword is None
            and node.args[0].star == ""
        )
    return False


def evident_printable(node: cst.BaseExpression, ints: frozenset[str], shadowed: frozenset[str]) -> bool:
    """Values whose ``str()`` runs no user code and cannot fail: float and text literals,
    ``None``/``True``/``False``, short int literals and ``len(...)``.

    Computed ints are excluded: ``str()`` of an int over 4,300 digits (the default of
    ``sys.set_int_max_str_digits``, which a program may lower to 640) raises ValueError.
    """
    if isinstance(node, (cst.Float, cst.Imaginary, cst.FormattedString)):
        return True
    if isinstance(node, cst.SimpleString):
        return "b" not in node.prefix.lower()
    if isinstance(node, cst.ConcatenatedString):
        return evident_printable(node.left, ints, shadowed) and evident_printable(node.right, ints, shadowed)  # type: ignore[arg-type]
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return isinstance(node.expression, cst.Integer) and evident_printable(node.expression, ints, shadowed)
    if isinstance(node, cst.Integer):
        return len(node.value) <= 150  # at most 600 bits, so well under 640 decimal digits
    if isinstance(node, cst.Call):
        return evident_int_cst(node, frozenset(), shadowed)  # len(...): at most sys.maxsize
    return False


def small_range_target(node: cst.For, shadowed: frozenset[str]) -> bool:
    """``for i in range(...)`` whose bounds are short int literals or ``len(...)`` (not async, no
    ``else``): ``i`` is an int below ``sys.maxsize`` in magnitude at the top of every iteration, so
    ``print(i)`` there runs no user code and cannot fail (``str`` of an int fails only over 4,300
    digits, or 640 where a program lowers the limit)."""
    it = node.iter
    if (
        node.asynchronous is not None
        or not isinstance(node.target, cst.Name)
        or not isinstance(it, cst.Call)
        or not isinstance(it.func, cst.Name)
        or it.func.value != "range"
        or "range" in shadowed
        or not 1 <= len(it.args) <= 3
    ):
        return False
    for arg in it.args:
        if arg.keyword is not None or arg.star:
            return False
        v = arg.value
        if isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus):
            v = v.expression
        if isinstance(v, cst.Integer):
            if len(v.value) > 18:  # well below sys.maxsize
                return False
        elif not (isinstance(v, cst.Call) and evident_int_cst(v, frozenset(), shadowed)):
            return False  # only len(...), at most sys.maxsize
    return True


@dataclass(frozen=True)
class Site:
    kind: str  # "test", "aug", "assign", "binop", "ifexp", "block", "start" (INI: a function's start)
    index: int  # pre-order index among nodes of that kind
    node: int  # id() of the node in the (cached, immutable) analysed module
    path: tuple[int, ...]  # id()s of the node and its ancestors: what a pruned transform must visit
    func: int  # index of the function whose own level it is in; -1: none
    pos: int = 0  # block sites: the statement index to insert before
    name: str = ""  # INI: the variable to print; GRA: the name for the dead code's value ("" -> 0)
    start: bool = False  # GRA: the start of a function body
    indents: tuple[str, ...] = ()  # the indentation in force at the site (libcst's indent tokens)
    obj: Any = field(default=None, compare=False, hash=False, repr=False)  # the node itself


@dataclass
class Sites:
    tests: list[Site] = field(default_factory=list)
    irr: list[Site] = field(default_factory=list)
    gra: list[Site] = field(default_factory=list)
    ini: list[Site] = field(default_factory=list)
    # INI's fallback: the start of a function body (after its docstring), name: the function's name
    ini_starts: list[Site] = field(default_factory=list)
    cmp: list[Site] = field(default_factory=list)  # CMP: comparisons that can be mirrored exactly
    loops: list[Site] = field(default_factory=list)  # LOOP: for-range loops (checked by loop.py)
    docs: list[Site] = field(default_factory=list)  # DOC: docstring statements (obj: the statement)
    # FMT: every statement a line may go before (the stub included, unlike GRA's sites), and the
    # named parameters of every function (a line break may go before or after each)
    lines: list[Site] = field(default_factory=list)
    params: list[Site] = field(default_factory=list)
    functions: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)  # (id, path) per function
    # per function index: variable name -> the Name nodes that refer to it in the function's body,
    # and the Name of its parameter (what a rename must change, for splicing)
    names: dict[int, dict[str, list[tuple[cst.Name, tuple[str, ...]]]]] = field(default_factory=dict)
    wanted: set[int] = field(default_factory=set)  # ids of nodes whose text offsets splicing needs
    # ids of Name nodes that ast keeps as plain strings (except-as, global/nonlocal, match captures):
    # pycode-similar does not abstract those away, so renaming them can change its score
    kept_by_pycode: set[int] = field(default_factory=set)


class _Frame:
    __slots__ = ("facts", "depth")

    def __init__(self, facts: FunctionFacts | None) -> None:
        self.facts = facts
        self.depth = 0  # lambdas / comprehensions / classes entered since the function


class ScopedVisitor:
    """Counts functions, blocks and scopes in pre-order; mixed into both visitors and transformers
    (``leave_*`` take an optional ``updated`` for that), so every pass shares the same numbering."""

    def __init__(self, functions: list[FunctionFacts]) -> None:
        super().__init__()
        self.functions = functions
        self.frames: list[_Frame] = [_Frame(None)]
        self.n_funcs = 0
        self.n_blocks = 0
        self.block_ids: dict[int, int] = {}

    # the facts of the function whose own level we are at, or None
    @property
    def own(self) -> FunctionFacts | None:
        f = self.frames[-1]
        return f.facts if f.depth == 0 else None

    @property
    def at_window_level(self) -> bool:
        return len(self.frames) == 1 and self.frames[0].depth == 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        i = self.n_funcs
        self.n_funcs += 1
        facts = self.functions[i] if i < len(self.functions) else None
        if facts is not None and facts.name != node.name.value:
            facts = None  # numbering disagrees (should not happen): no facts, no renames
        self.frames.append(_Frame(facts))
        return True

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef | None = None
    ) -> cst.BaseStatement | None:
        self.frames.pop()
        return updated

    def _enter(self, node: cst.CSTNode) -> bool:
        self.frames[-1].depth += 1
        return True

    def _leave(self, original: cst.CSTNode, updated: cst.CSTNode | None = None) -> cst.CSTNode | None:
        self.frames[-1].depth -= 1
        return updated

    visit_Lambda = visit_ClassDef = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = (
        _enter  # type: ignore[assignment]
    )
    leave_Lambda = leave_ClassDef = leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = (
        _leave  # type: ignore[assignment]
    )

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        self.block_ids[id(node)] = self.n_blocks
        self.n_blocks += 1
        return True


def _is_docstring(stmt: cst.BaseStatement) -> bool:
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


class SiteCollector(ScopedVisitor, cst.CSTVisitor):  # type: ignore[misc]  # the mixin's leave_* serve both
    """One pass that records the sites of RTF, IRR, GRA and INI."""

    def __init__(
        self,
        functions: list[FunctionFacts],
        shadowed: frozenset[str],
        wrapped: bool,
        default_indent: str = "    ",
        before_stub: bool = False,
    ) -> None:
        super().__init__(functions)
        self.shadowed = shadowed
        self.wrapped = wrapped
        self.before_stub = before_stub  # a statement may go before the stub (the unfinished line)
        self.default_indent = default_indent
        self.cur_indents: tuple[str, ...] = ()
        self.bodies: list[int] = []  # indices of the functions whose body we are in
        self.skip: set[int] = set()  # Name nodes that are not variables (attributes, keywords, ...)
        self.func_index_of: dict[int, int] = {}
        self.sites = Sites()
        self.counts = dict.fromkeys(("test", "aug", "assign", "binop", "ifexp"), 0)
        self._func_body_blocks: set[int] = set()
        self._range_bodies: dict[int, str] = {}  # INI: body of a small range loop -> its target
        self.stack: list[int] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(id(node))
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode) -> None:
        super().on_leave(original)
        self.stack.pop()

    def _site(
        self, kind: str, index: int, obj: cst.CSTNode, *, pos: int = 0, name: str = "", start: bool = False
    ) -> Site:
        return Site(
            kind,
            index,
            self.stack[-1],
            tuple(self.stack),
            self._func_index(),
            pos=pos,
            name=name,
            start=start,
            indents=self.cur_indents,
            obj=obj,
        )

    # names, for renaming by splicing
    def visit_FunctionDef_body(self, node: cst.FunctionDef) -> None:
        self.bodies.append(self.func_index_of[id(node)])

    def leave_FunctionDef_body(self, node: cst.FunctionDef) -> None:
        self.bodies.pop()

    def visit_Name(self, node: cst.Name) -> bool:
        if id(node) not in self.skip and self.bodies:
            for fi in self.bodies:
                self.sites.names.setdefault(fi, {}).setdefault(node.value, []).append(
                    (node, self.cur_indents)
                )
            self.sites.wanted.add(id(node))
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.skip.add(id(node.attr))
        return True

    def visit_Arg(self, node: cst.Arg) -> bool:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))
        return True

    def visit_MatchKeywordElement(self, node: cst.MatchKeywordElement) -> bool:
        self.skip.add(id(node.key))
        return True

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> bool:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.sites.kept_by_pycode.add(id(node.name.name))
        return True

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> bool:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.sites.kept_by_pycode.add(id(node.name.name))
        return True

    def visit_NameItem(self, node: cst.NameItem) -> bool:
        self.sites.kept_by_pycode.add(id(node.name))
        return True

    def visit_MatchAs(self, node: cst.MatchAs) -> bool:
        if node.name is not None:
            self.sites.kept_by_pycode.add(id(node.name))
        return True

    def visit_MatchStar(self, node: cst.MatchStar) -> bool:
        if node.name is not None:
            self.sites.kept_by_pycode.add(id(node.name))
        return True

    def visit_MatchMapping(self, node: cst.MatchMapping) -> bool:
        if node.rest is not None:
            self.sites.kept_by_pycode.add(id(node.rest))
        return True

    def visit_Param(self, node: cst.Param) -> bool:
        self.skip.add(id(node.name))
        return True

    def visit_ClassDef(self, node: cst.CSTNode) -> bool:
        assert isinstance(node, cst.ClassDef)
        self.skip.add(id(node.name))
        return super().visit_ClassDef(node)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def leave_IndentedBlock(self, original: cst.IndentedBlock) -> None:
        self.cur_indents = self.cur_indents[:-1]

    # a match statement indents its case clauses itself (libcst's Match.indent)
    def visit_Match(self, node: cst.Match) -> bool:
        self.cur_indents = (
            *self.cur_indents,
            node.indent if node.indent is not None else self.default_indent,
        )
        return True

    def leave_Match(self, original: cst.Match) -> None:
        self.cur_indents = self.cur_indents[:-1]

    def _count(self, kind: str) -> int:
        i = self.counts[kind]
        self.counts[kind] = i + 1
        return i

    def _func_index(self) -> int:
        own = self.own
        return own.index if own is not None else -1

    def _ints(self) -> frozenset[str]:
        own = self.own
        return own.int_locals if own is not None else frozenset()

    def _kinds(self) -> dict[str, str]:
        own = self.own
        return own.kinds if own is not None else {}

    def _immutable(self, name: str) -> bool:
        """``name`` holds an int, float, str or tuple wherever it is bound: types without in-place
        operators, so ``n op= e`` and ``n = n op e`` make the same calls for every ``e``."""
        return name in self._ints() or name in self._kinds()

    def _float(self, node: cst.BaseExpression) -> bool:
        """Certainly an exact float (``_analysis.evident_kind``'s float rules): a float literal, a
        local that holds a float, ``+ - * / // %`` of a float with an int or float, ``int / int``."""
        if isinstance(node, cst.Float):
            return True
        if isinstance(node, cst.Name):
            return self._kinds().get(node.value) == "float"
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
            return self._float(node.expression)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _FLOAT_OPS):
            ints, left, right = self._ints(), node.left, node.right
            if isinstance(node.operator, cst.Divide) and evident_int_cst(left, ints, self.shadowed):
                if evident_int_cst(right, ints, self.shadowed):
                    return True
            return (self._float(left) or self._float(right)) and self._number(left) and self._number(right)
        return False

    def _printable(self, node: cst.BaseExpression) -> bool:
        """A value whose ``str()`` runs no user code and cannot fail: ``evident_printable``'s, an
        exact float (``repr`` of a float never fails), or a bool: ``not x``, and comparisons with
        only ``is``, ``is not``, ``in``, ``not in`` (``in`` converts ``__contains__``'s answer to a
        bool; a chain gives one of its bools)."""
        if evident_printable(node, self._ints(), self.shadowed) or self._float(node):
            return True
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return True
        return isinstance(node, cst.Comparison) and all(
            isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons
        )

    def _number(self, node: cst.BaseExpression) -> bool:
        """An evident int or float."""
        return evident_int_cst(node, self._ints(), self.shadowed) or self._float(node)

    # RTF: every condition in a test position
    def _test(self, node: cst.CSTNode) -> bool:
        self.sites.tests.append(self._site("test", self._count("test"), node))
        self.sites.wanted.add(id(node.test))  # type: ignore[attr-defined]
        return True

    def visit_If(self, node: cst.If) -> bool:
        return self._test(node)

    def visit_While(self, node: cst.While) -> bool:
        return self._test(node)

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        # IRR: 'a if c else b' -> 'b if not c else a', exact for every c, a and b
        self.sites.irr.append(self._site("ifexp", self._count("ifexp"), node))
        self.sites.wanted.add(id(node))
        return self._test(node)

    def visit_Assert(self, node: cst.Assert) -> bool:
        return self._test(node)

    def visit_CompIf(self, node: cst.CompIf) -> bool:
        return self._test(node)

    # IRR
    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        i = self._count("aug")
        ints = self._ints()
        if (
            isinstance(node.target, cst.Name)
            and type(node.operator) in AUG_TO_BIN
            and (
                (node.target.value in ints and evident_int_cst(node.value, ints, self.shadowed))
                or node.target.value in self._kinds()
            )
        ):
            self.sites.irr.append(self._site("aug", i, node, name=node.target.value))
            self.sites.wanted.add(id(node))
        return True

    def visit_Assign(self, node: cst.Assign) -> bool:
        i = self._count("assign")
        ints = self._ints()
        v = node.value
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and self._immutable(node.targets[0].target.value)
            and isinstance(v, cst.BinaryOperation)
            and not v.lpar
            and type(v.operator) in BIN_TO_AUG
            and isinstance(v.left, cst.Name)
            and not v.left.lpar
            and v.left.value == node.targets[0].target.value
            and (
                node.targets[0].target.value in self._kinds() or evident_int_cst(v.right, ints, self.shadowed)
            )
        ):
            self.sites.irr.append(self._site("assign", i, node, name=v.left.value))
            self.sites.wanted.add(id(node))
        return True

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> bool:
        i = self._count("binop")
        if isinstance(node.operator, (cst.Add, cst.Multiply)):
            left, right = node.left, node.right
            # commuting is exact for ints and floats (IEEE + and * commute, and int with float
            # goes to float's own method either way); one side a literal keeps the order of any
            # side effect or NameError the other side may have
            simple = (cst.Integer, cst.Float, cst.Name, cst.Call)
            literals = (cst.Integer, cst.Float)
            if (
                isinstance(left, simple)
                and isinstance(right, simple)
                and (isinstance(left, literals) or isinstance(right, literals))
                and not left.lpar
                and not right.lpar
                and self._number(left)
                and self._number(right)
            ):
                self.sites.irr.append(self._site("binop", i, node))
                self.sites.wanted.add(id(node))
        return True

    # CMP: a single comparison whose operands are of evident built-in types (cmp.py decides)
    def visit_Comparison(self, node: cst.Comparison) -> bool:
        from .cmp import mirrorable  # the rule lives with its scheme

        if mirrorable(node, self._ints(), self.shadowed):
            self.sites.cmp.append(self._site("cmp", 0, node))
            self.sites.wanted.add(id(node))
        return True

    # LOOP: a for over range(...) at a function's own level (loop.py checks the rest)
    def visit_For(self, node: cst.For) -> bool:
        own = self.own
        if small_range_target(node, self.shadowed) and isinstance(node.body, cst.IndentedBlock):
            self._range_bodies[id(node.body)] = node.target.value  # type: ignore[attr-defined]
        if (
            own is not None
            and node.asynchronous is None
            and isinstance(node.target, cst.Name)
            and isinstance(node.iter, cst.Call)
            and isinstance(node.iter.func, cst.Name)
            and node.iter.func.value == "range"
            and "range" not in self.shadowed
            and isinstance(node.body, cst.IndentedBlock)
            and node.orelse is None
        ):
            self.sites.loops.append(self._site("loop", 0, node, name=node.target.value))
        return True

    # GRA and INI: positions in blocks
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        super().visit_FunctionDef(node)
        index = self.n_funcs - 1
        self.func_index_of[id(node)] = index
        self.sites.functions.append((id(node), tuple(self.stack)))
        self.skip.add(id(node.name))
        p = node.params
        named = (*p.posonly_params, *p.params, *p.kwonly_params)
        for i, named_param in enumerate(named):
            # "end": the closing bracket may go on a line of its own right after this name (the
            # last parameter, plain: nothing follows its name before the ')')
            end = (
                i == len(named) - 1
                and named_param.annotation is None
                and named_param.default is None
                and not isinstance(named_param.comma, cst.Comma)
                and p.star_kwarg is None
                and (named_param in p.kwonly_params or not isinstance(p.star_arg, cst.Param))
                and named_param not in p.posonly_params
            )
            self.sites.params.append(
                self._site("params", index, named_param.name, pos=i, name="end" if end else "")
            )
        own = self.sites.names.setdefault(index, {})
        for param in (*p.posonly_params, *p.params, *p.kwonly_params, p.star_arg, p.star_kwarg):
            if isinstance(param, cst.Param):
                own.setdefault(param.name.value, []).append((param.name, self.cur_indents))
                self.sites.wanted.add(id(param.name))
        if isinstance(node.body, cst.IndentedBlock):
            self._func_body_blocks.add(id(node.body))
        return True

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        super().visit_IndentedBlock(node)
        self.cur_indents = (
            *self.cur_indents,
            node.indent if node.indent is not None else self.default_indent,
        )
        self._block(self.block_ids[id(node)], node, node.body, id(node) in self._func_body_blocks)
        return True

    def visit_Module(self, node: cst.Module) -> bool:
        if not self.wrapped:  # before the 'if 1:' wrapper line nothing may be inserted
            self._block(-1, node, node.body, False)
        return True

    def _block(
        self,
        index: int,
        node: cst.CSTNode,
        body: Sequence[cst.BaseStatement],
        func_body: bool,
    ) -> None:
        body = list(body)
        self.sites.wanted.update(id(s) for s in body)
        own = self.own
        first = 0
        if body and _is_docstring(body[0]):
            first = 1
            self.sites.docs.append(self._site("doc", index, body[0]))
        if index == -1:
            futures = [i for i, s in enumerate(body) if _is_future(s)]
            if futures:
                first = max(first, futures[-1] + 1)
        value_name = own.first_param or "" if own is not None else ""
        # blank and comment lines are exact anywhere between statements, even before a docstring or
        # the stub (where the user types next); a '#!' line or an encoding declaration at the top
        # of a file is libcst's Module.header, above the first statement's text, so it stays put
        for p in range(len(body) + 1):
            # after the last statement too, where no stub closes the block (the line typed next)
            if p == len(body) and (not body or is_stub(body[-1])):
                break
            self.sites.lines.append(self._site("block", index, node, pos=p))
            if p < len(body) and is_stub(body[p]):
                break
        for p in range(first, len(body)):
            if is_stub(body[p]):
                break
            self.sites.gra.append(
                self._site("block", index, node, pos=p, name=value_name, start=func_body and p == first)
            )
        # INI: print a variable right after the assignment that gave it an evident value, where the
        # namespace is a plain frame or module (not a class body, whose namespace may be custom)
        if own is None and not (index == -1 and not self.wrapped and self.at_window_level):
            return
        if "print" in self.shadowed:
            return
        if func_body and own is not None and own.name.isascii():
            # a print of the function's name (a text literal) as its first statement, after the
            # docstring (a body that is only its docstring: after it, where the user types next);
            # before the stub only where that fits the unfinished line (statement_fits_before_tail)
            at_stub = first < len(body) and is_stub(body[first])
            if 0 < first == len(body) or (first < len(body) and (self.before_stub or not at_stub)):
                self.sites.ini_starts.append(self._site("start", index, node, pos=first, name=own.name))
        target = self._range_bodies.get(id(node))
        if target is not None and body and not is_stub(body[0]):
            # the target of a small range loop, first thing in the loop's body
            self.sites.ini.append(self._site("block", index, node, pos=0, name=target))
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
            if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) and self._printable(a.value):
                self.sites.ini.append(
                    self._site("block", index, node, pos=p + 1, name=a.targets[0].target.value)
                )


def collect_sites(
    module: cst.Module,
    functions: list[FunctionFacts],
    shadowed: frozenset[str],
    wrapped: bool,
    before_stub: bool = False,
) -> Sites:
    c = SiteCollector(functions, shadowed, wrapped, module.default_indent, before_stub)
    module.visit(c)
    return c.sites


_NEWLINE = re.compile(r"\r\n?|\n")  # what libcst counts as a line break


class _PositionsOnly(MetadataWrapper):
    """A MetadataWrapper that skips batched visits with no visitor in them.

    ``resolve`` ends with a batched visit for the batchable providers it resolved; for a position
    provider alone there are none, and that empty visit of every node (which rebuilds each one)
    cost more than the positions themselves. Skipping it changes nothing that can be observed.
    """

    __slots__ = ()

    def visit_batched(
        self,
        visitors: Iterable[cst.BatchableCSTVisitor],
        before_visit: Callable[[cst.CSTNode], None] | None = None,
        after_leave: Callable[[cst.CSTNode], None] | None = None,
    ) -> cst.CSTNode:
        visitors = list(visitors)
        if not visitors and before_visit is None and after_leave is None:
            return self.module
        return super().visit_batched(visitors, before_visit, after_leave)


def node_offsets(
    module: cst.Module, wanted: set[int], source: str | None = None
) -> tuple[str, dict[int, tuple[int, int]]]:
    """The module's code and the (start, end) character offsets of the wanted nodes' text.

    libcst's WhitespaceInclusivePositionProvider gives each node's lines and columns (the node's
    own whitespace included, as its code is generated); they become character offsets here.
    ``source``: the text ``module`` was parsed from, which is its code (libcst round-trips
    exactly), so the code is not generated a second time.
    """
    wrapper = _PositionsOnly(module, unsafe_skip_copy=True)  # ids name the cached module's nodes
    ranges = wrapper.resolve(WhitespaceInclusivePositionProvider)
    code = module.code if source is None else source
    line_starts = [0, 0, *(m.end() for m in _NEWLINE.finditer(code))]  # lines are 1-based
    offsets: dict[int, tuple[int, int]] = {}
    for node, r in ranges.items():
        if id(node) in wanted:
            start, end = r.start, r.end
            offsets[id(node)] = (line_starts[start.line] + start.column, line_starts[end.line] + end.column)
    return code, offsets


class PrunedTransformer(cst.CSTTransformer):
    """A transformer that visits only the ancestors of its sites (and whole ``full`` subtrees).

    libcst rebuilds every node a transformer visits; a window's mutant changes one node, so
    visiting only the path to it makes a mutant cost a few dozen node visits instead of thousands.
    Sites are named by ``id()`` of nodes of the cached analysed module, which stays alive.
    """

    def __init__(self, paths: list[tuple[int, ...]], full: set[int] | bool = False) -> None:
        super().__init__()
        self._needed = {i for p in paths for i in p}
        self._full = full if isinstance(full, set) else set()
        self._in_full = 1 if full is True else 0  # True: visit everything (no pruning)

    def on_visit(self, node: cst.CSTNode) -> bool:
        i = id(node)
        if i in self._full:
            self._in_full += 1
        elif not self._in_full and i not in self._needed:
            return False
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[no-untyped-def]
        if id(original) in self._full:
            self._in_full -= 1
        return super().on_leave(original, updated)


def code_at(module: cst.Module, node: cst.CSTNode, indents: tuple[str, ...]) -> str:
    """libcst's code for ``node`` as it would be generated where the indentation is ``indents``
    (a multi-line expression inside brackets re-indents its continuation lines with them, and a
    statement starts with them).

    The node is generated inside blocks indented by ``indents`` (``if _:`` blocks), and their text
    (and for an expression or small statement its line's indentation and line break) is cut away.
    """
    if not indents:
        return module.code_for_node(node)
    newline = module.default_newline
    line = isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement))
    stmt: cst.BaseStatement
    if isinstance(node, cst.BaseExpression):
        stmt = cst.SimpleStatementLine(body=[cst.Expr(node)])
    elif isinstance(node, cst.BaseSmallStatement):
        stmt = cst.SimpleStatementLine(body=[node])
    else:
        assert isinstance(node, cst.BaseStatement), type(node)
        stmt = node
    for depth in range(len(indents) - 1, 0, -1):
        stmt = cst.If(test=cst.Name("_"), body=cst.IndentedBlock(body=[stmt], indent=indents[depth]))
    code = module.code_for_node(cst.IndentedBlock(body=[stmt], indent=indents[0]))
    prefix = newline + "".join("".join(indents[:d]) + "if _:" + newline for d in range(1, len(indents)))
    prefix += "".join(indents) if line else ""
    suffix = newline if line else ""
    assert code.startswith(prefix) and code.endswith(suffix), (code, prefix)
    return code[len(prefix) : len(code) - len(suffix)]
