"""Corpus: evident ints too long to convert to text.

Since Python 3.11 (and the 3.10.7 / 3.9.14 security releases) ``str()`` of an int with more than
4300 decimal digits raises ValueError. Such ints are still evident ints (literals and shifts), so a
scheme that writes one out as text changes what the function does: it raises where the original
returned.
"""

# ruff: noqa


def shifted(bits):
    value = 1 << 20000
    value -= 1
    return value.bit_length() + bits


def squared_shift(extra):
    half = 1 << 8000
    whole = half * half
    return whole.bit_length() + extra


def length_shift(items):
    size = len(items) << 16000
    return size.bit_length()


def modest(n):
    value = 1 << 64
    value += n
    return value % 1000


# ==== CHECKS (never mutated) ====
from _checks import Checks

checks = Checks()


@checks.case
def huge_shift(m):
    return m.shifted(1)


@checks.case
def huge_product(m):
    return m.squared_shift(2)


@checks.case
def huge_from_len(m):
    return m.length_shift([1, 2, 3])


@checks.case
def modest_ints(m):
    return m.modest(5), m.modest(-5)
