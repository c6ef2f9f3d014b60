"""The formula grammar: parsing as written, printing as written, |F|, and bad equations."""

from __future__ import annotations

import math

import pytest
import sympy

from cctest.errors import FormulaError, InputError
from cctest.formula import EQUATIONS, parse_equation, semantics


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("a*x + b = 0", 7),  # a * x + b = 0
        ("a*x**2 + b*x + c = 0", 13),
        ("a*sin(x) = b", 6),  # a * sin x = b: the function name is one terminal, brackets none
        ("a*log(x) = b", 6),
        ("-a*x - b = 0", 8),  # the unary minus counts
        ("(a*x + b)*a = 0*a", 11),
    ],
)
def test_size_counts_terminal_symbols(text, size):
    assert parse_equation(text).size == size


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("a*x+b=0", "a*x + b = 0"),
        ("a*x^2 + b*x + c == 0", "a*x**2 + b*x + c = 0"),
        ("0 - b = a*x + b - b", "0 - b = a*x + b - b"),  # no simplification, no reordering
        ("(a*x+b)/a = 0/a", "(a*x + b)/a = 0/a"),
        ("b/a/a = a*log(x)/a/a", "b/a/a = a*log(x)/a/a"),
        ("((a*x + b)/a)*b = (0/a)*b", "((a*x + b)/a)*b = (0/a)*b"),
        ("a - (b + c) = x", "a - (b + c) = x"),
        ("a*-b = x", "a*(-b) = x"),
        ("x**-1 = 2.5", "x**(-1) = 2.5"),
    ],
)
def test_printing_keeps_the_written_shape(text, printed):
    eq = parse_equation(text)
    assert eq.text == printed
    assert parse_equation(eq.text).text == printed


def test_coefficients_are_every_name_but_the_variable():
    assert [s.name for s in parse_equation(EQUATIONS["quadratic"]).coefficients] == ["a", "b", "c"]
    eq = parse_equation("k*t + m = 0", variable="t")
    assert [s.name for s in eq.coefficients] == ["k", "m"]


def test_log_is_base_10_and_ln_base_e():
    a, b, x = sympy.symbols("a b x")
    log10 = semantics(parse_equation("a*log(x) = b").lhs)
    ln = semantics(parse_equation("a*ln(x) = b").lhs)
    assert math.isclose(float(log10.subs({a: 1, x: 1000})), 3.0)
    assert math.isclose(float(ln.subs({a: 1, x: math.e})), 1.0)


@pytest.mark.parametrize(
    "text",
    [
        "a*x + b",  # no '='
        "a*x = b = c",
        "a = b",  # no variable
        "__import__('os').system('true') = x",
        "x.real = 1",
        "f(x) = 1",
        "sin(x, 2) = a",
        "a < x = 1",
        "x = 1j",
        "x = 'a'",
        "x = (",
        "x =",
        "a*x" + " + a" * 1000 + " = 0",  # longer than the limit
    ],
)
def test_bad_equations_raise_one_formula_error(text):
    with pytest.raises(FormulaError) as info:
        parse_equation(text)
    assert isinstance(info.value, InputError)
    message = str(info.value)
    assert "\n" not in message and message[0].isupper() and message.endswith(".")
