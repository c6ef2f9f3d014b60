"""Repair: the completion closest to the average similarity of the non-outliers."""

from __future__ import annotations

from cctest.repair import choose


def test_picks_the_completion_closest_to_the_average_score():
    # scores among {0,1,2}: 0 -> (.9+.5)/2=.7, 1 -> (.9+.6)/2=.75, 2 -> (.5+.6)/2=.55; average .6667
    m = [
        [1, 0.9, 0.5, 0.1],
        [0.9, 1, 0.6, 0.1],
        [0.5, 0.6, 1, 0.1],
        [0.1, 0.1, 0.1, 1],
    ]
    assert choose(m, outliers=[3], valid=[True] * 4) == 0
    m2 = [row[:] for row in m]
    m2[0][2] = m2[2][0] = 0.2  # scores: 0 -> .55, 1 -> .75, 2 -> .4; average .5667 -> 0
    assert choose(m2, outliers=[3], valid=[True] * 4) == 0
    m3 = [row[:] for row in m]
    m3[0][1] = m3[1][0] = 0.3  # 0 -> .4, 1 -> .45, 2 -> .55; average .4667 -> 1
    assert choose(m3, outliers=[3], valid=[True] * 4) == 1


def test_ties_prefer_the_original_then_the_lowest_index():
    m = [[1.0] * 4 for _ in range(4)]
    assert choose(m, outliers=[], valid=[True] * 4) == 0
    assert choose(m, outliers=[0], valid=[True] * 4) == 1
    assert choose(m, outliers=[], valid=[False, True, True, True]) == 1


def test_outliers_are_never_chosen_while_a_non_outlier_exists():
    m = [[1, 0.1, 0.1], [0.1, 1, 0.9], [0.1, 0.9, 1]]
    assert choose(m, outliers=[0], valid=[True] * 3) in (1, 2)


def test_all_outliers_fall_back_to_all_results():
    m = [[1, 0.2], [0.2, 1]]
    assert choose(m, outliers=[0, 1], valid=[True, True]) == 0


def test_no_results_gives_none_and_a_single_result_is_chosen():
    assert choose([[0.0, 0.0], [0.0, 0.0]], outliers=[], valid=[False, False]) is None
    assert choose([[0.0, 0.0], [0.0, 1.0]], outliers=[], valid=[False, True]) == 1
