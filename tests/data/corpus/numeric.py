# ruff: noqa
"""Corpus: numbers. Ints vs floats vs bools, nan, inf, negative zero, Fraction, Decimal, complex."""

import math
from decimal import Decimal
from fractions import Fraction


def add_assign(a, b):
    a += b
    return a


def sub_assign(a, b):
    a -= b
    return a


def mul_assign(a, b):
    a *= b
    return a


def div_assign(a, b):
    a /= b
    return a


def floordiv_mod(a, b):
    q = a // b
    r = a % b
    return q, r


def negate(x):
    return -x


def double(x):
    return x * 2


def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def gcd(a, b):
    if b == 0:
        return abs(a)
    return gcd(b, a % b)


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def power_sum(n, p=2):
    s = 0
    for i in range(1, n + 1):
        s += i**p
    return s


def bits(x):
    flags = 0
    shift = 0
    while x:
        if x & 1:
            flags |= 1 << shift
        x >>= 1
        shift += 1
    return flags


def count_true(values):
    n = 0
    for v in values:
        n += v == v  # nan != nan: counts the non-nan values
    return n


def safe_ratio(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        return math.copysign(math.inf, a) if a else math.nan


def decimal_total(prices):
    total = Decimal("0")
    for p in prices:
        total += Decimal(p)
    return total


def fraction_harmonic(n):
    h = Fraction(0)
    for k in range(1, n + 1):
        h += Fraction(1, k)
    return h


def complex_rotate(z, quarter_turns):
    for _ in range(quarter_turns):
        z *= 1j
    return z


def is_close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def integer_sqrt(n):
    if n < 0:
        raise ValueError("negative")
    x = n
    y = (x + 1) // 2
    while y < x:
        x = y
        y = (x + n // x) // 2
    return x


def sign(x):
    return (x > 0) - (x < 0)


# ==== CHECKS (never mutated) ====
import math as _math

from _checks import Checks
from hypothesis import strategies as st

checks = Checks()
nan, inf = float("nan"), float("inf")
special = [0, 1, -1, 0.0, -0.0, 0.5, nan, inf, -inf, True, False, 10**20, 1e308]


@checks.case
def assign_ops_on_specials(m):
    out = []
    for a in special:
        for b in special:
            row = []
            for fn in (m.add_assign, m.sub_assign, m.mul_assign):
                try:
                    row.append(fn(a, b))
                except OverflowError as e:
                    row.append(("overflow", str(e)))
            out.append(row)
    return out


@checks.case
def division_on_specials(m):
    out = []
    for a in special:
        for b in special:
            for fn in (m.div_assign, m.floordiv_mod):
                try:
                    out.append(fn(a, b))
                except (ZeroDivisionError, OverflowError) as e:
                    out.append((type(e).__name__, str(e)))
    return out


@checks.case
def negative_zero(m):
    return (
        m.negate(0.0),
        m.negate(-0.0),
        m.add_assign(-0.0, 0.0),
        m.add_assign(-0.0, -0.0),
        m.sub_assign(0.0, 0.0),
        m.double(-0.0),
    )


@checks.case
def ints_stay_ints(m):
    return m.mean([1, 2, 3]), m.add_assign(True, True), m.mul_assign(3, 1.0), m.double("ab"), m.double([0])


@checks.case
def mean_of_nothing(m):
    return m.mean([])


@checks.case
def clamp_cases(m):
    return m.clamp(nan, 0, 1), m.clamp(-inf, 0, 1), m.clamp(5, lo=0, hi=3), m.clamp(0.5, 0, 1)


@checks.case
def number_theory(m):
    return (
        m.gcd(1071, 462),
        m.gcd(-12, 18),
        m.fib(50),
        m.power_sum(10),
        m.power_sum(4, p=3),
        m.integer_sqrt(10**30 + 7),
    )


@checks.case
def isqrt_negative(m):
    return m.integer_sqrt(-1)


@checks.case
def bit_ops(m):
    return m.bits(0b101101), m.bits(0), m.count_true([1.0, nan, 2, nan, "x"])


@checks.case
def exact_numbers(m):
    return m.decimal_total(["0.1", "0.2", "-0.3"]), m.fraction_harmonic(6), m.complex_rotate(1 + 2j, 3)


@checks.case
def ratios(m):
    return (
        m.safe_ratio(1, 0),
        m.safe_ratio(-2, 0),
        m.safe_ratio(0, 0),
        m.safe_ratio(1, 4),
        m.is_close(0.1 + 0.2, 0.3),
    )


@checks.case
def signs(m):
    return [m.sign(x) for x in special]


floats = st.floats(allow_nan=True, allow_infinity=True)
numbers = st.one_of(st.integers(-(10**6), 10**6), floats, st.booleans(), st.fractions(max_denominator=50))


@checks.prop(st.tuples(numbers, numbers))
def arithmetic_prop(m, ab):
    a, b = ab
    out = []
    for fn in (m.add_assign, m.sub_assign, m.mul_assign, m.clamp.__call__):
        try:
            out.append(fn(a, b) if fn is not m.clamp.__call__ else fn(a, b, b))
        except (OverflowError, TypeError) as e:
            out.append(type(e).__name__)
    out.append(
        (
            m.negate(a),
            m.double(a),
            m.sign(a) if a == a else None,
            m.is_close(a, b) if all(map(_math.isfinite, (a, b))) else None,
        )
    )
    return out


@checks.prop(st.tuples(st.integers(-1000, 1000), st.integers(-1000, 1000)))
def integer_prop(m, ab):
    a, b = ab
    return m.gcd(a, b), m.floordiv_mod(a, b) if b else None, m.bits(abs(a)), m.integer_sqrt(abs(a))
