"""Algorithm 1 (outlier selection) on hand-built matrices with known answers."""

from __future__ import annotations

import pytest

from cctest.detect import absolute_threshold, outlier_counts, select_outliers, similarity_matrix


def block(
    n_same: int, n_odd: int, same: float = 0.9, cross: float = 0.1, odd: float = 0.5
) -> list[list[float]]:
    """n_same mutually similar completions followed by n_odd that resemble nothing."""
    n = n_same + n_odd
    m = [[1.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            if i < n_same and j < n_same:
                m[i][j] = same
            elif i >= n_same and j >= n_same:
                m[i][j] = odd
            else:
                m[i][j] = cross
    return m


def test_one_outlier_among_eleven_is_found_at_every_threshold_below_ten():
    m = block(10, 1)
    # the odd one has all 10 of its similarities below the median; the others only 1
    assert outlier_counts(m) == [1] * 10 + [10]
    for t in (1, 3, 5, 7, 9):
        assert select_outliers(m, t) == [10]
    assert select_outliers(m, 10) == []  # count must EXCEED T


def test_all_identical_completions_have_no_outliers():
    m = [[1.0] * 5 for _ in range(5)]
    assert outlier_counts(m) == [0] * 5
    assert select_outliers(m, 0) == []


def test_all_different_completions_equal_similarity_no_outliers():
    m = block(0, 6, odd=0.2)  # every pair 0.2: nothing is strictly below the median
    assert select_outliers(m, 0) == []


def test_threshold_larger_than_possible_count_flags_nothing():
    m = block(3, 1)  # k smaller than T: at most 3 entries per row can be below the median
    assert outlier_counts(m)[3] == 3
    assert select_outliers(m, 5) == []
    assert select_outliers(m, 2) == [3]


def test_ties_at_the_median_do_not_count():
    # pairs: (0,1)=.5 (0,2)=.5 (1,2)=.5 (0,3)=.2 (1,3)=.5 (2,3)=.5 -> median .5
    m = [
        [1, 0.5, 0.5, 0.2],
        [0.5, 1, 0.5, 0.5],
        [0.5, 0.5, 1, 0.5],
        [0.2, 0.5, 0.5, 1],
    ]
    assert outlier_counts(m) == [1, 0, 0, 1]


def test_invalid_completions_are_left_out_of_median_and_counts():
    m = block(4, 1)
    valid = [True, True, True, True, False]
    counts = outlier_counts(m, valid)
    assert counts[4] == 0
    # without the odd one every pair is 0.9: nothing below the median
    assert counts[:4] == [0, 0, 0, 0]


def test_single_or_no_valid_completion():
    assert outlier_counts([[1.0]]) == [0]
    assert outlier_counts([[0.0, 0.0], [0.0, 0.0]], [False, False]) == [0, 0]


def test_similarity_matrix_is_symmetric_levenshtein():
    texts = ["return a + b\n", "return a+b\n", "return b\n", ""]
    m = similarity_matrix(texts, [True, True, True, False])
    for i in range(3):
        assert m[i][i] == 1.0
        for j in range(3):
            assert m[i][j] == pytest.approx(m[j][i])
    # "return a + b\n" vs "return a+b\n": 2 deletions over 13 characters
    assert m[0][1] == pytest.approx(1 - 2 / 13)
    assert m[3] == [0.0, 0.0, 0.0, 0.0]


def test_relative_threshold():
    assert absolute_threshold(0.8, 11) == pytest.approx(8.0)
    assert absolute_threshold(0.5, 1) == 0.0
