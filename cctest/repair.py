"""Repair: the completion that best represents the consistent majority (the slides' "enhanced" output).

Among the completions that gave a result and are not outliers, each one's *score* is its mean
similarity to the others in that group; the group's *average* is the mean of all their pairwise
similarities. The chosen completion is the one whose score is closest to the average. Ties are
broken deterministically: the original prompt's completion (index 0) first, then the lowest index.
A group of one is its own choice; when every result is an outlier, the outliers are ignored as
such and the choice is made among all results (the repair must still return something the model
produced).
"""

from __future__ import annotations

from collections.abc import Sequence


def choose(matrix: Sequence[Sequence[float]], outliers: Sequence[int], valid: Sequence[bool]) -> int | None:
    """Index of the repaired completion, or None when no completion gave a result.

    >>> m = [[1, .9, .8, .1], [.9, 1, .85, .1], [.8, .85, 1, .2], [.1, .1, .2, 1]]
    >>> choose(m, outliers=[3], valid=[True] * 4)
    0
    >>> choose(m, outliers=[0, 3], valid=[True] * 4)   # two left, equal scores: the lower index
    1
    >>> choose(m, outliers=[], valid=[False, False, False, False]) is None
    True
    """
    results = [i for i, ok in enumerate(valid) if ok]
    if not results:
        return None
    group = [i for i in results if i not in set(outliers)] or results
    if len(group) == 1:
        return group[0]
    scores = {i: sum(matrix[i][j] for j in group if j != i) / (len(group) - 1) for i in group}
    average = sum(scores.values()) / len(group)  # equals the mean over all pairs of the group
    # sort key: distance to the average, then "not the original", then index
    return min(group, key=lambda i: (round(abs(scores[i] - average), 12), i != 0, i))
