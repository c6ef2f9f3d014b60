# ruff: noqa
"""Corpus: comprehensions and iteration. Nested comprehensions, dict/set comprehensions, generator
expressions consumed once, sorting with keys, zip/enumerate, tuple swaps, iterators."""

import itertools


def pythagorean(limit):
    return [
        (a, b, c) for c in range(1, limit) for b in range(1, c) for a in range(1, b) if a * a + b * b == c * c
    ]


def transpose(matrix):
    return [[row[i] for row in matrix] for i in range(len(matrix[0]))] if matrix else []


def index_words(words):
    return {w: i for i, w in enumerate(words)}


def unique_lengths(words):
    return {len(w) for w in words}


def consume_twice(xs):
    gen = (x * 2 for x in xs)
    first = sum(gen)
    second = sum(gen)
    return first, second


def pairs_sorted(d):
    return sorted(d.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def interleave(a, b):
    out = []
    for x, y in itertools.zip_longest(a, b):
        if x is not None:
            out.append(x)
        if y is not None:
            out.append(y)
    return out


def fib_pairs(n):
    a, b = 0, 1
    out = []
    for _ in range(n):
        out.append((a, b))
        a, b = b, a + b
    return out


def windowed_max(xs, k):
    best = []
    for i in range(len(xs) - k + 1):
        window = xs[i : i + k]
        best.append(max(window))
    return best


def cumulative(xs):
    return list(itertools.accumulate(xs))


def matrix_power_trace(m, p):
    size = len(m)
    result = [[int(i == j) for j in range(size)] for i in range(size)]
    for _ in range(p):
        result = [
            [sum(result[i][k] * m[k][j] for k in range(size)) for j in range(size)] for i in range(size)
        ]
    return sum(result[i][i] for i in range(size))


def nested_scopes_in_comprehension(xs, offset):
    return [[x + offset + y for y in range(x)] for x in xs]


def enumerate_from(items, start):
    return [f"{i}:{item}" for i, item in enumerate(items, start)]


def min_max(xs):
    lo = hi = None
    for x in xs:
        if lo is None or x < lo:
            lo = x
        if hi is None or x > hi:
            hi = x
    return lo, hi


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()


@checks.case
def comprehension_results(m):
    return (
        m.pythagorean(20),
        m.transpose([[1, 2, 3], [4, 5, 6]]),
        m.transpose([]),
        m.index_words(["a", "b", "a"]),
        sorted(m.unique_lengths(["a", "bb", "cc"])),
        m.consume_twice([1, 2, 3]),
    )


@checks.case
def iteration_results(m):
    return (
        m.pairs_sorted({"a": 2, "b": 2, "c": 1}),
        m.interleave([1, 2, 3], "ab"),
        m.fib_pairs(6),
        m.windowed_max([1, 3, 2, 5, 4], 2),
        m.cumulative([1, 2.5, -1]),
        m.matrix_power_trace([[1, 1], [1, 0]], 5),
    )


@checks.case
def scopes(m):
    return (
        m.nested_scopes_in_comprehension([1, 2, 3], offset=10),
        m.enumerate_from("ab", start=5),
        m.min_max([3, -1, 7, 2]),
    )


@checks.prop(st.lists(st.integers(-9, 9), max_size=10))
def comprehension_prop(m, xs):
    return (
        m.consume_twice(xs),
        m.cumulative(xs),
        m.min_max(xs),
        m.windowed_max(xs, 2),
        m.interleave(xs, xs[::-1]),
        m.nested_scopes_in_comprehension([abs(x) for x in xs][:4], 1),
    )
