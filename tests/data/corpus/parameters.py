# ruff: noqa
"""Corpus: ordinary parameters (REP renames them when nothing in the program passes them by
keyword). Functions called positionally only, functions called by keyword (those names must stay),
a recursion that passes an argument by keyword, methods and __init__, closures, generators, lambdas
and defaults reading parameters, '**' calls and partials (their names must stay), and wrong calls
whose TypeError names a parameter."""

import functools

limit = "global limit"


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    total = 0
    for v in values:
        total += v
    return total / len(values)


def merge_counts(left, right):
    out = dict(left)
    for key, n in right.items():
        out[key] = out.get(key, 0) + n
    return out


def pad(text, width, fill):
    # called by keyword in the checks: width and fill keep their names, text may not
    return text + fill * (width - len(text))


def sum_of_squares(n, acc=0):
    # the recursion passes acc by keyword: acc keeps its name, n may not
    if n <= 0:
        return acc
    return sum_of_squares(n - 1, acc=acc + n * n)


def count_down(start, step):
    while start > 0:
        yield start
        start -= step


def make_adder(amount):
    def add(x):
        return x + amount

    return add


def scaled(items, factor):
    return [(lambda y, f=factor: y * f)(x) for x in items]


def under_limit(xs, limit):
    # the parameter shadows the global 'limit'
    return [x for x in xs if x < limit]


def combine(first, second):
    # called with ** in the checks: its names are part of the call
    return f"{first}-{second}"


def power(base, exponent):
    return base**exponent


square_of = functools.partial(power, exponent=2)


def safe_div(num, den):
    try:
        return num / den
    except ZeroDivisionError as exc:
        return f"error: {exc}"


class Account:
    def __init__(self, owner, balance):
        self.owner = owner
        self.balance = balance

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError(f"bad amount {amount!r}")
        self.balance += amount
        return self.balance

    def transfer(self, other, amount):
        other.deposit(amount)
        self.balance -= amount
        return self.balance, other.balance


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()


@checks.case
def positional_calls(m):
    return (
        m.clamp(5, 0, 3),
        m.clamp(-1, 0, 3),
        m.clamp(2.5, 0, 3),
        m.mean([1, 2, 4]),
        m.merge_counts({"a": 1}, {"a": 2, "b": 3}),
        m.safe_div(1, 0),
        m.safe_div(6, 4),
    )


@checks.case
def keyword_calls_keep_their_names(m):
    return m.pad("ab", width=5, fill="*"), m.pad("abc", fill="-", width=4), m.sum_of_squares(4)


@checks.case
def generators_closures_lambdas(m):
    return (
        list(m.count_down(10, 3)),
        m.make_adder(5)(1),
        m.scaled([1, 2.5, "x"], 2),
        m.under_limit([1, 5, 9], 6),
    )


@checks.case
def star_star_and_partial(m):
    return m.combine(**{"first": "a", "second": "b"}), m.square_of(7), m.power(2, 10)


@checks.case
def methods_and_init(m):
    a = m.Account("ann", 10)
    b = m.Account("bob", 0)
    return a.deposit(5), a.transfer(b, 3), (a.owner, a.balance, b.balance)


# a wrong call's TypeError names the parameter: the one difference REP leaves, inherent to the
# scheme; the harness maps renamed names back in exception messages (a message turned into a value
# would show it)
@checks.case
def wrong_call_missing_two(m):
    return m.clamp(1)


@checks.case
def wrong_call_missing_one(m):
    return m.mean()


@checks.case
def wrong_call_init(m):
    return m.Account("x")


@checks.case
def deposit_refused(m):
    return m.Account("c", 1).deposit(-2)


@checks.prop(st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.integers(-50, 50)))
def clamp_prop(m, xyz):
    x, lo, hi = xyz
    return m.clamp(x, lo, hi), m.sum_of_squares(abs(x) % 20), m.pad(str(x), width=abs(lo) % 8, fill=".")
