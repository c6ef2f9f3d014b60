"""Equations of the syntactic-robustness grammar, held as unevaluated SymPy trees.

The grammar (Sarker et al., Figure 3): an equation ``E = E``; an expression is built from
coefficients (any name but the variable), one variable (``x`` unless told otherwise), number
literals, ``+ - * /``, ``^`` (or ``**``), unary minus and the functions ``sin cos tan log ln``
(``log`` is base 10, ``ln`` base e).

Parsing goes through Python's ``ast`` (nothing is evaluated, and the written order survives: SymPy's
own parser reorders terms even with ``evaluate=False``) into SymPy nodes built with
``evaluate=False``: ``a - b`` is ``Add(a, Mul(-1, b))``, ``a / b`` is ``Mul(a, Pow(b, -1))``. The
``FormulaPrinter`` prints such trees as written, so a mutation's shape (``(a*x + b)*a = 0*a``)
is what a model sees. ``semantics`` gives the evaluated SymPy expression for equivalence checks.

Size ``|F|`` is the number of terminal symbols: every name, number literal, operator (``=`` and a
unary minus included) and function name; brackets are not counted.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import sympy
from sympy.core.basic import Basic
from sympy.printing.str import StrPrinter

from ..errors import FormulaError

MAX_LENGTH = 2000
FUNCTIONS = ("sin", "cos", "tan", "log", "ln")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_TOKEN = re.compile(r"\*\*|[A-Za-z_][A-Za-z0-9_]*|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|[-+*/^=]")
ONE = sympy.Integer(1)
MINUS_ONE = sympy.Integer(-1)
ZERO = sympy.Integer(0)


class Log10(sympy.Function):
    """``log`` of the grammar: the base-10 logarithm, kept unevaluated (printed ``log``)."""

    nargs = 1


def _fn(name: str, arg: Basic) -> Basic:
    if name == "log":
        return Log10(arg, evaluate=False)
    if name == "ln":
        return sympy.log(arg, evaluate=False)
    return getattr(sympy, name)(arg, evaluate=False)


# -- building blocks (every constructor keeps the written order) ---------------------------------------


def add(*terms: Basic) -> Basic:
    """A sum of ``terms`` in this order; nested sums are flattened (``+`` is associative)."""
    flat: list[Basic] = []
    for t in terms:
        flat.extend(t.args if isinstance(t, sympy.Add) else (t,))
    return flat[0] if len(flat) == 1 else sympy.Add(*flat, evaluate=False)


def neg(e: Basic) -> Basic:
    """``-e`` written as such (``Mul(-1, e)``)."""
    return sympy.Mul(MINUS_ONE, e, evaluate=False)


def is_neg(e: Basic) -> bool:
    return isinstance(e, sympy.Mul) and len(e.args) >= 2 and e.args[0] == MINUS_ONE


def negated(e: Basic) -> Basic:
    """The operand of a written minus (``-e`` -> ``e``)."""
    return e.args[1] if len(e.args) == 2 else sympy.Mul(*e.args[1:], evaluate=False)


def recip(e: Basic) -> Basic:
    return sympy.Pow(e, MINUS_ONE, evaluate=False)


def is_recip(e: Basic) -> bool:
    return isinstance(e, sympy.Pow) and e.args[1] == MINUS_ONE


def has_division(e: Basic) -> bool:
    return isinstance(e, sympy.Mul) and any(is_recip(f) for f in e.args)


def mul(left: Basic, right: Basic) -> Basic:
    """``left * right``; a product on the left is extended unless it divides (``(b/a)*a`` stays)."""
    if isinstance(left, sympy.Mul) and not is_neg(left) and not has_division(left):
        return sympy.Mul(*left.args, right, evaluate=False)
    return sympy.Mul(left, right, evaluate=False)


def div(left: Basic, right: Basic) -> Basic:
    """``left / right``; a product on the left is extended (``b/a/a``)."""
    if isinstance(left, sympy.Mul) and not is_neg(left):
        return sympy.Mul(*left.args, recip(right), evaluate=False)
    return sympy.Mul(left, recip(right), evaluate=False)


# -- parsing ------------------------------------------------------------------------------------------


class _Converter:
    def __init__(self, text: str) -> None:
        self.text = text

    def bad(self, what: str) -> FormulaError:
        return FormulaError(
            f"{what[0].upper()}{what[1:]} in {self.text!r} is not part of the formula grammar."
        )

    def __call__(self, node: ast.AST) -> Basic:
        if isinstance(node, ast.Expression):
            return self(node.body)
        if isinstance(node, ast.BinOp):
            left, right = self(node.left), self(node.right)
            if isinstance(node.op, ast.Add):
                return add(left, right)
            if isinstance(node.op, ast.Sub):
                return add(left, neg(right))
            if isinstance(node.op, ast.Mult):
                return mul(left, right)
            if isinstance(node.op, ast.Div):
                return div(left, right)
            if isinstance(node.op, ast.Pow):
                return sympy.Pow(left, right, evaluate=False)
            raise self.bad(f"the operator {type(node.op).__name__}")
        if isinstance(node, ast.UnaryOp):
            operand = self(node.operand)
            if isinstance(node.op, ast.USub):
                return neg(operand)
            if isinstance(node.op, ast.UAdd):
                return operand
            raise self.bad(f"the operator {type(node.op).__name__}")
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else "?"
            if name not in FUNCTIONS or len(node.args) != 1 or node.keywords:
                raise self.bad(f"the call {name}(...)")
            return _fn(name, self(node.args[0]))
        if isinstance(node, ast.Name):
            if not _NAME.match(node.id) or node.id in FUNCTIONS:
                raise self.bad(f"the name {node.id!r}")
            return sympy.Symbol(node.id)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            value = node.value
            return sympy.Integer(value) if isinstance(value, int) else sympy.Float(repr(value))
        raise self.bad(f"the expression {ast.unparse(node)!r}" if isinstance(node, ast.expr) else "this")


def parse_expression(text: str) -> Basic:
    """One side of an equation, as an unevaluated SymPy tree in the written order."""
    src = text.replace("^", "**").strip()
    if not src:
        raise FormulaError("An equation side is empty.")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        raise FormulaError(f"The expression {text.strip()!r} is not well-formed.") from None
    return _Converter(text.strip())(tree)


@dataclass(frozen=True)
class Equation:
    """``lhs = rhs`` in one variable; every other name is a coefficient (assumed non-zero)."""

    lhs: Basic
    rhs: Basic
    variable: sympy.Symbol = sympy.Symbol("x")

    @cached_property
    def text(self) -> str:
        return f"{PRINTER.doprint(self.lhs)} = {PRINTER.doprint(self.rhs)}"

    def __str__(self) -> str:
        return self.text

    @cached_property
    def size(self) -> int:
        return size_of(self.text)

    @cached_property
    def coefficients(self) -> tuple[sympy.Symbol, ...]:
        """The coefficients, sorted by name."""
        names = (self.lhs.free_symbols | self.rhs.free_symbols) - {self.variable}
        return tuple(sorted(names, key=lambda s: s.name))  # type: ignore[attr-defined]

    def swapped(self) -> Equation:
        return Equation(self.rhs, self.lhs, self.variable)

    def with_sides(self, lhs: Basic, rhs: Basic) -> Equation:
        return Equation(lhs, rhs, self.variable)

    def difference(self) -> sympy.Expr:
        """``lhs - rhs`` evaluated: zero exactly where the equation holds."""
        return semantics(self.lhs) - semantics(self.rhs)  # type: ignore[no-any-return]


def _utf8(text: str, what: str) -> None:
    """A ``FormulaError`` when ``text`` holds a lone surrogate: a byte that was not UTF-8 on the
    command line (Python keeps it as U+DC80..U+DCFF) or a broken character from elsewhere."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        ch = ord(text[exc.start])
        byte = f"the byte 0x{ch - 0xDC00:02x}" if 0xDC80 <= ch <= 0xDCFF else f"U+{ch:04X}"
        raise FormulaError(
            f"The {what} holds {byte} at character {exc.start + 1}, which is not UTF-8 text."
        ) from None


def parse_equation(text: str, variable: str = "x") -> Equation:
    """Parse ``"a*x + b = 0"`` (``=`` or ``==``; ``^`` or ``**``); raises ``FormulaError``."""
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"The equation is longer than {MAX_LENGTH} characters.")
    _utf8(text, "equation")
    _utf8(variable, "variable")
    sides = re.split(r"==?", text)
    if len(sides) != 2:
        raise FormulaError(f"The equation {text.strip()!r} needs exactly one '='.")
    if not _NAME.match(variable) or variable in FUNCTIONS:
        raise FormulaError(f"The name {variable!r} cannot be the variable.")
    var = sympy.Symbol(variable)
    eq = Equation(parse_expression(sides[0]), parse_expression(sides[1]), var)
    if var not in eq.lhs.free_symbols | eq.rhs.free_symbols:
        raise FormulaError(f"The equation {text.strip()!r} does not contain the variable {variable!r}.")
    return eq


def size_of(text: str) -> int:
    """The number of terminal symbols of a printed formula (brackets are not counted)."""
    return len(_TOKEN.findall(text))


# -- printing ----------------------------------------------------------------------------------------

_ADD, _MUL, _NEG, _POW, _ATOM = 1, 2, 3, 4, 5


def _level(e: Basic) -> int:
    if isinstance(e, sympy.Add):
        return _ADD
    if is_neg(e) or (e.is_Number and e.is_negative):
        return _NEG
    if isinstance(e, sympy.Mul):
        return _MUL
    if isinstance(e, sympy.Pow):
        return _POW
    return _ATOM


class FormulaPrinter(StrPrinter):
    """Prints an unevaluated formula as written: no reordering, no simplification, Python syntax."""

    def _wrap(self, e: Basic, above: int) -> str:
        s = self._print(e)
        return f"({s})" if _level(e) <= above else s

    def _print_Add(self, expr: Basic, order: str | None = None) -> str:
        out: list[str] = []
        for i, t in enumerate(expr.args):
            if is_neg(t):
                body = self._wrap(negated(t), _ADD)
                out.append(f"-{body}" if i == 0 else f" - {body}")
            elif t.is_Number and t.is_negative:
                out.append(self._print(t) if i == 0 else f" - {self._print(-t)}")
            else:
                body = self._wrap(t, _ADD - 1) if i == 0 else self._wrap(t, _ADD)
                out.append(body if i == 0 else f" + {body}")
        return "".join(out)

    def _print_Mul(self, expr: Basic) -> str:
        if is_neg(expr):
            inner = negated(expr)
            body = self._print(inner)
            return f"-({body})" if isinstance(inner, sympy.Add) or _level(inner) == _NEG else f"-{body}"
        out: list[str] = []
        for i, f in enumerate(expr.args):
            if is_recip(f):
                base = f.args[0]
                out.append(("1" if i == 0 else "") + "/" + self._wrap(base, _POW - 1))
            else:
                # a nested product is one that divides (see ``mul``): keep its brackets for clarity;
                # a negative factor after the first is bracketed too (``a*(-b)``, not ``a*-b``)
                nested = isinstance(f, sympy.Mul) and not is_neg(f)
                body = self._wrap(f, _MUL if nested else _MUL - 1)
                if i and _level(f) == _NEG:
                    body = f"({body})"
                out.append(body if i == 0 else "*" + body)
        return "".join(out)

    def _print_Pow(self, expr: Basic, rational: bool = False) -> str:
        base, exp = expr.args
        if exp == MINUS_ONE:
            return "1/" + self._wrap(base, _POW - 1)
        return f"{self._wrap(base, _POW)}**{self._wrap(exp, _POW)}"

    def _print_Float(self, expr: Basic) -> str:
        return repr(float(expr))

    def _print_Log10(self, expr: Basic) -> str:
        return f"log({self._print(expr.args[0])})"

    def _print_log(self, expr: Basic) -> str:
        return f"ln({self._print(expr.args[0])})"


PRINTER = FormulaPrinter()


def to_text(e: Basic) -> str:
    return PRINTER.doprint(e)


# -- semantics ---------------------------------------------------------------------------------------


def semantics(e: Basic) -> sympy.Expr:
    """The evaluated SymPy expression an unevaluated tree stands for (``log`` as ``log(., 10)``)."""
    if isinstance(e, Log10):
        return sympy.log(semantics(e.args[0]), 10)  # type: ignore[no-any-return]
    if not e.args:
        return e  # type: ignore[return-value]
    return e.func(*(semantics(a) for a in e.args))  # type: ignore[no-any-return]


def uses(e: Basic, names: Iterable[sympy.Symbol]) -> bool:
    return bool(e.free_symbols & set(names))
