# ruff: noqa
"""Corpus: signatures. Defaults, *args/**kwargs, keyword-only and positional-only parameters, and
callers that pass arguments by keyword (renaming a parameter breaks them), inside and outside."""

import functools

SCALE = 3


def area(width, height=1):
    return width * height


def greet(name, /, greeting="Hello", *, punctuation="!"):
    return f"{greeting}, {name}{punctuation}"


def total(*numbers, start=0):
    result = start
    for n in numbers:
        result += n
    return result


def options(**kwargs):
    return sorted(kwargs.items())


def forward(*args, **kwargs):
    return area(*args, **kwargs)


def everything(a, b=2, *args, c, d=4, **kw):
    return a, b, args, c, d, sorted(kw)


def scale(value, factor=SCALE):
    return value * factor


def uses_global_name(SCALE):
    # the parameter shadows the module-level SCALE
    return SCALE + 1


def call_by_keyword_inside(w, h):
    return area(height=h, width=w) + area(width=w)


def with_annotations(count: int, label: "str" = "n") -> "str":
    return f"{label}={count}"


def keyword_only_defaults(*, first=1, second=None):
    if second is None:
        second = first * 2
    return first, second


def describe_call(f, /, *args, **kwargs):
    return f.__name__, f(*args, **kwargs)


def make_partial(base):
    return functools.partial(area, height=base)


def default_is_evaluated_once(x, seen=set()):
    seen.add(x)
    return len(seen)


def parameter_reassigned(x, y):
    x = x * 2
    y += x
    return x, y


def unused_parameters(a, b, c):
    return a


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()


@checks.case
def keyword_calls(m):
    return (
        m.area(width=2, height=5),
        m.area(height=4, width=3),
        m.area(7),
        m.scale(value=2),
        m.scale(2, factor=10),
    )


@checks.case
def positional_only(m):
    return m.greet("Ann"), m.greet("Bob", greeting="Hi"), m.greet("Cy", "Yo", punctuation="?")


@checks.case
def positional_only_by_keyword_fails(m):
    # the interpreter's message names the parameter ("positional-only arguments passed as keyword
    # arguments: 'name'" vs "unexpected keyword argument 'name'" once it is renamed): that it is
    # refused with a TypeError is the behaviour
    try:
        m.greet(name="Ann")
    except TypeError:
        return "TypeError"


@checks.case
def keyword_only_positional_fails(m):
    return m.greet("Ann", "Hi", "?")


@checks.case
def varargs(m):
    return (
        m.total(),
        m.total(1, 2, 3),
        m.total(1.5, start=10),
        m.options(b=2, a=1),
        m.forward(2, height=9),
        m.forward(width=4),
    )


@checks.case
def unexpected_keyword(m):
    return m.area(widht=2)


@checks.case
def everything_call(m):
    return m.everything(1, c=3), m.everything(1, 2, 3, 4, c=5, z=6), m.everything(a=0, c=0, d=1, e=2)


@checks.case
def shadowing_parameter(m):
    return m.uses_global_name(10), m.uses_global_name(SCALE=1), m.scale(1), m.call_by_keyword_inside(2, h=5)


@checks.case
def annotations_and_kwonly(m):
    return (
        m.with_annotations(3),
        m.with_annotations(count=4, label="k"),
        m.keyword_only_defaults(),
        m.keyword_only_defaults(second=0, first=5),
        m.with_annotations.__annotations__,
    )


@checks.case
def partials(m):
    p = m.make_partial(base=10)
    return p(3), p(width=4), m.describe_call(m.area, 2, height=2)


@checks.case
def defaults_once(m):
    return m.default_is_evaluated_once(1), m.default_is_evaluated_once(2), m.default_is_evaluated_once(x=1)


@checks.case
def reassigned_and_unused(m):
    return (
        m.parameter_reassigned(2, 3),
        m.parameter_reassigned(y=[1], x=[0]),
        m.unused_parameters(c=3, b=2, a=1),
    )


@checks.prop(st.tuples(st.integers(-100, 100), st.integers(-100, 100)))
def keyword_prop(m, ab):
    a, b = ab
    return (
        m.area(width=a, height=b),
        m.total(a, b, start=a),
        m.parameter_reassigned(x=a, y=b),
        m.everything(a, c=b),
    )
