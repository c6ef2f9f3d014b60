"""Corpus: integer arithmetic where precedence and order matter.

Rewriting ``k -= m - 1`` as ``k = k - m - 1`` (no parentheses), or ``i = i - 1 - 2`` as
``i -= 1 - 2``, changes the value; so does commuting a non-commutative operator or an operand with a
side effect. Every local here is an evident int, so IRR applies everywhere.
"""

# ruff: noqa


def compound(steps):
    k = 10
    m = 3
    for _ in range(steps):
        k -= m - 1
        k *= m + 2
        k <<= 1 + 1
        k //= 2 - 1
        k %= 1000 - 7
        k ^= 1 | 2
        k |= 4 & 5
        k >>= 3 - 2
        k += m * 2 - 1
    return k


def chained_minus(n):
    i = n
    i = i - 1 - 2
    j = n
    j = j - (1 - 2)
    t = n
    t = t * 2 + 1
    u = n
    u = u + 1 * 2
    v = n
    v = v - n % 3
    return i, j, t, u, v


def literals_on_both_sides(n):
    count = len(str(n))
    a = 2 * count + 1
    b = 1 + count * 3
    c = count - 1 + 1
    d = 7 - count
    e = count // 2 * 2
    f = -count + 1
    g = ~count & 0xFF
    return a, b, c, d, e, f, g


def loop_counters(xs):
    evens = 0
    odds = 0
    i = 0
    while i < len(xs):
        if xs[i] % 2 == 0:
            evens = evens + 1
        else:
            odds = 1 + odds
        i = i + 1
    return evens, odds, i


def negative_floor(n):
    q = 0
    r = 0
    for k in range(-3, 4):
        q = q + n // k if k else q
        r = r + (n % k if k else 0)
    return q, r


def big_values(n):
    x = 1
    for _ in range(n):
        x = x * 3 + 1
        x = x % (1 << 61)
    return x


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()


@checks.case
def arithmetic_results(m):
    return (
        m.compound(5),
        m.chained_minus(10),
        m.literals_on_both_sides(12345),
        m.loop_counters([1, 2, 3, 4, 6]),
        m.negative_floor(-17),
        m.big_values(100),
    )


@checks.prop(st.integers(-(10**6), 10**6))
def arithmetic_prop(m, n):
    return (
        m.compound(abs(n) % 7),
        m.chained_minus(n),
        m.literals_on_both_sides(n),
        m.loop_counters([n, n + 1, abs(n)]),
        m.negative_floor(n),
        m.big_values(abs(n) % 50),
    )
