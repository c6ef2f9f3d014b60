"""Corpus: scoping corners and docstrings.

Class bodies read an enclosing function's variables but skip them for names they bind themselves;
keyword-argument names and strings spell a local's name without referring to it; an ``except ... as``
name is deleted when its block ends; docstrings must stay first (a statement inserted above one turns
it into an expression and ``__doc__`` into None); ``from __future__`` must stay first in the module.
"""

# ruff: noqa
from __future__ import annotations

COUNT = 0
total = "global total"


def documented(a, /, scale=2):
    """Docstring of documented."""
    b = 1
    return (a + b) * scale


class Documented:
    """Class docstring."""

    size = 0

    def method(self, x, /):
        """Method docstring."""
        y = 2
        return x * y


def class_reads_enclosing(value, /):
    offset = 10

    class Holder:
        stored = value + offset  # reads the enclosing function's value and offset

    return Holder.stored


def class_binds_same_name(value, /):
    total = value * 2

    class Holder:
        total = "class level"  # binds its own 'total': the function's local is not seen here
        again = total

    return total, Holder.total, Holder.again


def class_skips_enclosing(count, /):
    # 'total' inside the class body is bound there, so the read on the right finds the global
    # 'total', not this function's local of the same name
    total = count

    class Holder:
        total = total + "!"

    return total, Holder.total


def names_as_data(total, /):
    result = dict(total=total, size=len(str(total)))
    label = "total"
    return result, label, result[label]


def attribute_and_local(obj, /):
    size = 5
    obj.size = size * 2
    return getattr(obj, "size"), size


def except_name_is_deleted(x, /):
    err = "before"
    try:
        raise ValueError(x)
    except ValueError as err:
        message = str(err)
    try:
        return err
    except NameError:
        return "deleted", message


def bump_module_count(step, /):
    global COUNT
    before = COUNT
    COUNT += step
    return before, COUNT


def lambdas_over_params(base, /, *rest):
    key = lambda v, base=base: abs(v - base)
    return sorted(rest, key=key)


def comprehension_over_params(limit, /):
    squares = [n * n for n in range(limit) if n % 2]
    return squares, {n: limit - n for n in range(3)}


def shadow_in_nested_function(x, /):
    y = x + 1

    def inner(x):
        return x * 10

    return inner(y), x


def super_in_method():
    class Base:
        def hello(self, name, /):
            return f"hello {name}"

    class Child(Base):
        def hello(self, name, /):
            greeting = super().hello(name)
            return greeting.upper()

    return Child().hello("ann")


def defaults_from_locals():
    n = 5
    step = 2

    def inner(x=n, *, by=step):  # defaults are evaluated in this (the enclosing) scope
        return x * by

    return inner(), inner(1)


def decorator_from_local():
    calls = []

    def record(fn):
        calls.append(fn.__name__)
        return fn

    @record
    def target():
        return "t"

    return target(), calls


def comprehension_reuses_name():
    x = [1, 2, 3]
    return [x * 2 for x in x], x  # the first iterable is the local x, the rest the loop's x


def class_base_from_local():
    base = dict

    class Derived(base):
        pass

    return Derived(a=1), Derived.__bases__[0].__name__


def annotation_from_local(value, /):
    kind = int
    converted: kind = kind(value)
    return converted


def doubly_nested_nonlocal():
    level = 0

    def middle():
        def inner():
            nonlocal level
            level += 1
            return level

        return inner() + inner()

    return middle(), level


def generator_late_binding():
    base = 10
    gen = (base + i for i in range(3))
    base = 100  # the generator reads base when it is consumed
    return list(gen)


def global_in_nested():
    COUNT = "local"

    def bump():
        global COUNT
        COUNT = 99

    bump()
    return COUNT


class Mangled:
    """Names with two leading underscores are mangled inside a class, locals included."""

    def __secret(self, value, /):
        __hidden = value * 2
        return __hidden

    def reveal(self, value):
        __cache = {}
        __cache[value] = self.__secret(value)
        return __cache


# ==== CHECKS (never mutated) ====
from _checks import Checks

checks = Checks()


@checks.case
def docstrings(m):
    return (
        m.__doc__,
        m.documented.__doc__,
        m.Documented.__doc__,
        m.Documented.method.__doc__,
        m.documented(1),
        m.Documented().method(3),
    )


@checks.case
def class_bodies(m):
    return m.class_reads_enclosing(5), m.class_binds_same_name(4), m.class_skips_enclosing(7)


@checks.case
def class_skips_enclosing_str(m):
    return m.class_skips_enclosing("x")


@checks.case
def names_in_strings_and_keywords(m):
    class Obj:
        pass

    return m.names_as_data(123), m.attribute_and_local(Obj())


@checks.case
def except_deletes(m):
    return m.except_name_is_deleted("boom")


@checks.case
def module_globals(m):
    return m.bump_module_count(2), m.bump_module_count(3), m.COUNT, m.total


@checks.case
def functional_scopes(m):
    return (
        m.lambdas_over_params(5, 1, 9, 4, 6),
        m.comprehension_over_params(6),
        m.shadow_in_nested_function(2),
        m.super_in_method(),
    )


@checks.case
def enclosing_scope_expressions(m):
    return (
        m.defaults_from_locals(),
        m.decorator_from_local(),
        m.comprehension_reuses_name(),
        m.class_base_from_local(),
        m.annotation_from_local("42"),
        m.doubly_nested_nonlocal(),
        m.generator_late_binding(),
        m.global_in_nested(),
        m.COUNT,
    )


@checks.case
def mangled_names(m):
    return m.Mangled().reveal(3), m.Mangled()._Mangled__secret(4)
