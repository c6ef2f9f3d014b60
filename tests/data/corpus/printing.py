# ruff: noqa
"""Corpus: output and values that resist printing. The module writes to stdout itself (INI's extra
lines may only be added around it), and receives objects whose str() raises or changes state, and
variables that are bound on some paths only (printing one before it is bound raises)."""

print("module loaded")


def banner(title, width=20):
    print("=" * width)
    print(title.center(width))
    print("=" * width)
    return width


def render(obj):
    parts = []
    parts.append(type(obj).__name__)
    return parts


def maybe_bound(flag):
    if flag:
        found = "yes"
    try:
        return found
    except UnboundLocalError:
        return "unbound"


def loop_variable(xs):
    for item in xs:
        pass
    try:
        return item
    except UnboundLocalError:
        return "empty"


def pass_through(obj):
    holder = [obj]
    return len(holder)


def write_to(stream, values):
    for v in values:
        print(v, file=stream)
    return stream.getvalue()


def lazy_report(xs):
    for x in xs:
        print("item", x)
        yield x * 2


def huge_power(digits):
    # an int too long for str(): printing it raises ValueError (Python 3.11+ limits int to str
    # conversion to 4300 digits), so a print inserted after the loop would raise
    value = 1
    for _ in range(digits):
        value *= 10
    value += 1
    return value % 9973


def huge_shift(bits):
    value = 1 << 20000
    value -= 1
    return value.bit_length() + bits


# ==== CHECKS (never mutated) ====
import io

from _checks import Checks

checks = Checks()


class Unprintable:
    def __str__(self):
        raise RuntimeError("cannot print me")

    __repr__ = __str__


class CountsStr:
    def __init__(self):
        self.shown = 0

    def __str__(self):
        self.shown += 1
        return "counted"

    __repr__ = __str__


@checks.case
def banner_output(m):
    return m.banner("hi", width=6), m.banner(title="x")


@checks.case
def unprintable_values(m):
    u = Unprintable()
    return m.render(u), m.pass_through(u)


@checks.case
def str_side_effects(m):
    c = CountsStr()
    m.render(c)
    m.pass_through(c)
    return c.shown


@checks.case
def conditionally_bound(m):
    return m.maybe_bound(True), m.maybe_bound(False), m.loop_variable([1, 2]), m.loop_variable([])


@checks.case
def explicit_stream(m):
    return m.write_to(io.StringIO(), [1, "two", None])


@checks.case
def generator_output_order(m):
    g = m.lazy_report([1, 2, 3])
    first = next(g)
    print("between")
    return first, list(g)


@checks.case
def huge_ints(m):
    return m.huge_power(5000), m.huge_shift(1)
