"""Small string helpers shared by layers that must not import each other."""

from __future__ import annotations

import sys


def common_prefix_length(a: str, b: str, limit: int = sys.maxsize) -> int:
    """How many leading characters ``a`` and ``b`` have in common, counted up to ``limit`` (the
    index of their first difference; the shorter's length when one starts the other): blocks that
    double in size from 256 characters, then a binary search in the first block that differs
    (C-level comparisons of slices, costing about as much as the common part, not a Python loop
    over it).

    >>> common_prefix_length("def f(x):", "def g(x):"), common_prefix_length("abc", "abcd")
    (4, 3)
    >>> common_prefix_length("x" * 5000 + "a", "x" * 5000 + "b"), common_prefix_length("x" * 10, "x" * 10, 4)
    (5000, 4)
    >>> common_prefix_length("", "a")
    0
    """
    n = min(len(a), len(b), limit)
    lo, step = 0, 256
    while True:
        if lo >= n:
            return n
        hi = min(n, lo + step)
        if a[lo:hi] != b[lo:hi]:
            break
        lo, step = hi, step * 2
    hi -= 1  # a[lo:hi + 1] differs: the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


__all__ = ["common_prefix_length"]
