"""Outlier detection among completions: a Levenshtein similarity matrix and Algorithm 1 of CCTest.

Pure functions over plain lists, so they are easy to test on hand-built matrices.

Algorithm 1 as printed on the slides leaves four things open; this is how cctest reads them:

1. *Which similarity.* ``Sim`` is the normalised Levenshtein similarity
   ``1 - distance / max(len(a), len(b))`` from RapidFuzz (C implementation), in [0, 1].
2. *The matrix.* The slides fill only ``j >= i``; the similarity is symmetric, so cctest fills both
   triangles. The diagonal (every output is identical to itself) is excluded from the median and
   from the counts: including it would only add the constant 1 to every row.
3. *Normalize.* ``Normalize(ScoreMatrix)`` is a monotone rescaling; comparing entries with the
   median is unchanged by it, so the similarities are used as they are (already in [0, 1]).
4. *Median.* ``Median(ScoreMatrix)`` is one number: the median of all off-diagonal similarities
   (each unordered pair counted once). An entry counts only when it is strictly below it, so a set
   of identical completions has no outliers. Output ``i`` is an outlier when its count exceeds T.

Since an output has at most ``n - 1`` entries below the median, T only means something relative
to the number ``n`` of completions; ``absolute_threshold`` turns a relative threshold ``r`` into
``T = r * (n - 1)``. The default relative threshold is 0.8: an output is flagged when more than
80% of its similarities are below the median (for k = 10 mutants, n = 11: more than 8 of 10).
That sits between the paper's T = 7 and T = 9, whose F1 was highest at T = 9.

Completions that gave no result (empty or failed) are left out of the matrix (their rows and
columns are 0) and out of the median; they are reported separately, as the paper's #No Results.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

DEFAULT_RELATIVE_THRESHOLD = 0.8


def similarity_matrix(texts: Sequence[str], valid: Sequence[bool] | None = None) -> list[list[float]]:
    """Pairwise normalised Levenshtein similarity; rows and columns of invalid entries are 0.

    >>> m = similarity_matrix(["return a + b", "return a + b", "return b"])
    >>> [round(x, 2) for x in m[0]]
    [1.0, 1.0, 0.67]
    >>> similarity_matrix(["x", ""], valid=[True, False])
    [[1.0, 0.0], [0.0, 0.0]]
    """
    n = len(texts)
    if valid is None:
        valid = [True] * n
    idx = [i for i in range(n) if valid[i]]
    out = [[0.0] * n for _ in range(n)]
    if not idx:
        return out
    sub = cdist([texts[i] for i in idx], [texts[i] for i in idx], scorer=Levenshtein.normalized_similarity)
    for a, i in enumerate(idx):
        row = out[i]
        for b, j in enumerate(idx):
            row[j] = float(sub[a][b])
    return out


def absolute_threshold(relative: float, n: int) -> float:
    """T for ``n`` completions from a threshold relative to the ``n - 1`` other completions.

    >>> absolute_threshold(0.8, 11)
    8.0
    """
    return relative * max(0, n - 1)


def outlier_counts(matrix: Sequence[Sequence[float]], valid: Sequence[bool] | None = None) -> list[int]:
    """For each completion, how many of its similarities to the others fall below the median.

    >>> outlier_counts([[1, 1, .2], [1, 1, .3], [.2, .3, 1]])
    [1, 0, 1]
    """
    n = len(matrix)
    if valid is None:
        valid = [True] * n
    idx = [i for i in range(n) if valid[i]]
    pairs = [matrix[i][j] for a, i in enumerate(idx) for j in idx[a + 1 :]]
    counts = [0] * n
    if not pairs:
        return counts
    median = statistics.median(pairs)
    for i in idx:
        counts[i] = sum(1 for j in idx if j != i and matrix[i][j] < median)
    return counts


def select_outliers(
    matrix: Sequence[Sequence[float]], threshold: float, valid: Sequence[bool] | None = None
) -> list[int]:
    """Algorithm 1: the indices whose count of below-median similarities exceeds ``threshold``.

    >>> m = [[1, .9, .9, .1], [.9, 1, .9, .1], [.9, .9, 1, .1], [.1, .1, .1, 1]]
    >>> select_outliers(m, threshold=2)
    [3]
    >>> select_outliers(m, threshold=3)
    []
    """
    return outliers_from_counts(outlier_counts(matrix, valid), threshold)


def outliers_from_counts(counts: Sequence[int], threshold: float) -> list[int]:
    """The last step of Algorithm 1: the indices whose count exceeds T (strictly).

    >>> outliers_from_counts([1, 1, 10], 9)
    [2]
    """
    return [i for i, c in enumerate(counts) if c > threshold]
