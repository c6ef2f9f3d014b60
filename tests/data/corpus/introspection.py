# ruff: noqa
"""Corpus: code whose behaviour depends on its own identifiers' spelling. A self-documenting
f-string (f"{x=}") prints the variable's name; str.format(**locals()), eval and exec look names up by
string. Renaming such a variable changes the program's output."""


def debug_line(width, height):
    area = width * height
    return f"{area=} {width=}"


def format_with_locals(name, count):
    plural = "s" if count != 1 else ""
    return "{count} {name}{plural}".format(**locals())


def evaluate(a, b):
    return eval("a * 10 + b")


def run_snippet(x):
    scope = {"x": x}
    exec("y = x + 1", scope)
    return scope["y"]


def local_names(p, q):
    r = p + q
    return sorted(locals())


# ==== CHECKS (never mutated) ====
from _checks import Checks

checks = Checks()


@checks.case
def self_documenting_fstring(m):
    return m.debug_line(2, 3)


@checks.case
def format_from_locals(m):
    return m.format_with_locals("apple", 2), m.format_with_locals("pear", count=1)


@checks.case
def eval_by_name(m):
    return m.evaluate(1, 2), m.run_snippet(x=4)


@checks.case
def locals_keys(m):
    return m.local_names(1, 2)
