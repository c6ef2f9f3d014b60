# ruff: noqa
"""Corpus: positional-only parameters, *args and **kwargs (the parameters nobody can pass by
keyword), integer counters and len() arithmetic. Parameters read by closures, parameters that shadow
globals, recursion through positional calls, and **kwargs whose keys are data, not names."""

items = ["global items"]
b = "global b"


def hypot2(x, y, /):
    return x * x + y * y


def power(base, exp, /, *, mod=None):
    result = 1
    for _ in range(exp):
        result *= base
        if mod is not None:
            result %= mod
    return result


def count_matching(items, predicate, /):
    # the parameter shadows the global 'items'
    n = 0
    for item in items:
        if predicate(item):
            n += 1
    return n


def make_scaler(factor, /):
    def scale(value):
        return value * factor

    return scale


def depth(tree, /):
    if not isinstance(tree, list):
        return 0
    best = 0
    for child in tree:
        d = depth(child) + 1
        if d > best:
            best = d
    return best


def join_all(sep, /, *parts):
    out = ""
    for p in parts:
        if out:
            out += sep
        out += str(p)
    return out


def describe_kwargs(**kwargs):
    keys = sorted(kwargs)
    n = len(keys)
    n *= 2
    return keys, n


def spread(*args, **kwargs):
    return len(args) + len(kwargs), args, kwargs


def add(a, b, /):
    # 'b' is also a global: the parameter is what counts here
    res = a + b
    return res


def mean_int(values, /):
    total = 0
    count = 0
    for v in values:
        total += v
        count += 1
    if count == 0:
        return None
    return total // count, total % count


def triangle(n, /):
    total = 0
    i = 0
    while i < n:
        i += 1
        total += i
    return total


def bit_length(n, /):
    bits = 0
    while n > 0:
        n >>= 1
        bits += 1
    return bits


def checksum(data, /):
    acc = 0
    size = len(data)
    for i in range(size):
        acc ^= data[i] << (i % 8)
        acc &= 0xFFFF
    acc += size
    return acc


def apply_twice(func, /, *args):
    return func(func(*args))


def lambda_default_param(n, /):
    fns = [lambda k=i: k * n for i in range(3)]
    return [f() for f in fns]


def relay(name, /, **extra):
    # the keyword 'name=' is data (a key), the value is the parameter
    return dict(name=name, **extra)


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()


@checks.case
def positional_calls(m):
    return (
        m.hypot2(3, 4),
        m.hypot2(1.5, -0.0),
        m.power(2, 10),
        m.power(3, 5, mod=7),
        m.count_matching([1, -2, 3], lambda v: v > 0),
        m.make_scaler(3)("ab"),
        m.depth([[1, [2]], 3]),
        m.depth(5),
        m.join_all("-", 1, "a", None),
        m.join_all(","),
    )


@checks.case
def positional_by_keyword_still_fails(m):
    # only the TypeError is behaviour; its message names the (renamed) parameter
    try:
        m.hypot2(x=1, y=2)
    except TypeError:
        return "TypeError"


@checks.case
def kwargs_are_data(m):
    return (
        m.describe_kwargs(zeta=1, alpha=2),
        m.spread(1, 2, key="v"),
        m.spread(args=1, kwargs=2),
        m.describe_kwargs(kwargs=1),
        m.relay(1, other=2),
    )


@checks.case
def global_shadowing(m):
    return m.add(1, 2), m.add("x", "y"), m.b, m.count_matching("abc", str.isalpha), m.items


@checks.case
def integer_counters(m):
    return (
        m.mean_int([1, 2, 3, 4]),
        m.mean_int([]),
        m.triangle(10),
        m.bit_length(1023),
        m.checksum(b"hello world"),
        m.apply_twice(abs, -3),
        m.lambda_default_param(5),
    )


@checks.case
def float_inputs(m):
    return m.mean_int([0.5, 1.5]), m.triangle(2.5), m.bit_length(7.0), m.power(0.5, 3)


@checks.prop(st.tuples(st.lists(st.integers(-100, 100), max_size=8), st.integers(0, 300)))
def integer_prop(m, vn):
    values, n = vn
    return (
        m.mean_int(values),
        m.triangle(n),
        m.bit_length(n),
        m.checksum(bytes(abs(v) % 256 for v in values)),
        m.power(n % 7, 5, mod=11),
    )
