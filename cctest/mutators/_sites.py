"""The libcst helpers the schemes share: what a node evidently is, where its text is, its code.

- type facts on libcst nodes (twins of ``_analysis``'s on ``ast`` nodes): ``evident_int_cst``,
  ``evident_float``, ``evident_number``, ``evident_printable``, ``printable``,
  ``small_range_target``, and the operator tables IRR rewrites with;
- ``node_offsets``: where each wanted node's text starts and ends (one position pass per window);
- ``code_at``: libcst's code for a new node as it would be generated where it goes;
- ``PrunedTransformer``: a transformer that visits only the paths down to its sites.

The sites themselves are found by the schemes' own visitors in one batched pass (``_walk``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import libcst as cst
from libcst.metadata import MetadataWrapper, WhitespaceInclusivePositionProvider

from ..context import STUB_COMMENT

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


def evident_float(
    node: cst.BaseExpression, ints: frozenset[str], kinds: dict[str, str], shadowed: frozenset[str]
) -> bool:
    """Certainly an exact float (``_analysis.evident_kind``'s float rules): a float literal, a
    local that holds a float (``kinds``), ``+ - * / // %`` of a float with an int or float, ``int / int``."""
    if isinstance(node, cst.Float):
        return True
    if isinstance(node, cst.Name):
        return kinds.get(node.value) == "float"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return evident_float(node.expression, ints, kinds, shadowed)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _FLOAT_OPS):
        left, right = node.left, node.right
        if isinstance(node.operator, cst.Divide) and evident_int_cst(left, ints, shadowed):
            if evident_int_cst(right, ints, shadowed):
                return True
        return (
            (evident_float(left, ints, kinds, shadowed) or evident_float(right, ints, kinds, shadowed))
            and evident_number(left, ints, kinds, shadowed)
            and evident_number(right, ints, kinds, shadowed)
        )
    return False


def evident_number(
    node: cst.BaseExpression, ints: frozenset[str], kinds: dict[str, str], shadowed: frozenset[str]
) -> bool:
    """An evident int or float."""
    return evident_int_cst(node, ints, shadowed) or evident_float(node, ints, kinds, shadowed)


def printable(
    node: cst.BaseExpression, ints: frozenset[str], kinds: dict[str, str], shadowed: frozenset[str]
) -> bool:
    """A value whose ``str()`` runs no user code and cannot fail: ``evident_printable``'s, an
    exact float (``repr`` of a float never fails), or a bool: ``not x``, and comparisons with
    only ``is``, ``is not``, ``in``, ``not in`` (``in`` converts ``__contains__``'s answer to a
    bool; a chain gives one of its bools)."""
    if evident_printable(node, ints, shadowed) or evident_float(node, ints, kinds, shadowed):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return True
    return isinstance(node, cst.Comparison) and all(
        isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons
    )


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
