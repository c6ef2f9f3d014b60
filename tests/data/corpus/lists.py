# ruff: noqa
"""Corpus: lists. In-place operators on aliased lists, slices, subscripts, sorting, recursion."""


def extend_in_place(a, b):
    # a += b mutates the caller's list: rewriting it to a = a + b would not
    a += b
    return a


def concat_new(a, b):
    # a = a + b builds a new list: rewriting it to a += b would mutate the caller's list
    a = a + b
    return a


def repeat_in_place(a, n):
    a *= n
    return a


def append_all(target, items):
    for item in items:
        target.append(item)
    return len(target)


def running_sums(xs):
    total = 0
    out = []
    for x in xs:
        total += x
        out.append(total)
    return out


def bump_each(xs, amount):
    for i in range(len(xs)):
        xs[i] += amount
    return xs


def dedupe(xs):
    seen = set()
    out = []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def flatten(nested):
    out = []
    for item in nested:
        if isinstance(item, list):
            out += flatten(item)
        else:
            out.append(item)
    return out


def rotate(xs, k):
    if not xs:
        return xs
    k = k % len(xs)
    return xs[k:] + xs[:k]


def reverse_in_place(xs):
    xs[:] = xs[::-1]
    return xs


def chunks(xs, size):
    result = []
    start = 0
    while start < len(xs):
        result.append(xs[start : start + size])
        start += size
    return result


def binary_search(xs, target):
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        elif xs[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def merge_sorted(a, b):
    i = j = 0
    merged = []
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            merged.append(a[i])
            i += 1
        else:
            merged.append(b[j])
            j += 1
    merged += a[i:]
    merged += b[j:]
    return merged


def insertion_sort(xs):
    for i in range(1, len(xs)):
        key = xs[i]
        j = i - 1
        while j >= 0 and xs[j] > key:
            xs[j + 1] = xs[j]
            j -= 1
        xs[j + 1] = key
    return xs


def matrix_add(m1, m2):
    rows = []
    for r1, r2 in zip(m1, m2):
        rows.append([x + y for x, y in zip(r1, r2)])
    return rows


def pairwise_diffs(xs):
    return [b - a for a, b in zip(xs, xs[1:])]


def split_first(xs):
    first, *rest = xs
    return first, rest


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()
ints = st.lists(st.integers(-50, 50), max_size=12)


@checks.case
def extend_aliases_caller_list(m):
    a = [1, 2]
    alias = a
    result = m.extend_in_place(a, [3])
    return result is alias, alias, a


@checks.case
def extend_tuple_into_list(m):
    a = [1]
    alias = a
    m.extend_in_place(a, (2, 3))  # list += tuple works; list + tuple raises TypeError
    return alias


@checks.case
def concat_leaves_caller_list(m):
    a = [1, 2]
    alias = a
    result = m.concat_new(a, [3])
    return result is alias, alias, result


@checks.case
def concat_tuple_raises(m):
    return m.concat_new([1], (2,))


@checks.case
def extend_str_and_tuple(m):
    return m.extend_in_place("ab", "cd"), m.extend_in_place((1,), (2,))


@checks.case
def repeat_aliases(m):
    a = [0, 1]
    alias = a
    m.repeat_in_place(a, 3)
    return alias, m.repeat_in_place("xy", 2)


@checks.case
def append_all_by_keyword(m):
    target = ["a"]
    return m.append_all(items="bc", target=target), target


@checks.case
def running_sums_floats(m):
    return m.running_sums([0.5, float("inf"), -float("inf"), 1.0]), m.running_sums([])


@checks.case
def bump_each_aliases(m):
    xs = [1, 2.5, -0.0]
    alias = xs
    m.bump_each(xs, 0.0)
    return alias, m.bump_each([[1], [2]], [0])


@checks.case
def flatten_nested(m):
    return m.flatten([1, [2, [3, [4, []]]], "ab", [[5]]])


@checks.case
def rotate_cases(m):
    return m.rotate([], 3), m.rotate([1, 2, 3], -1), m.rotate("abc", 4)


@checks.case
def reverse_in_place_alias(m):
    xs = [1, 2, 3]
    alias = xs
    m.reverse_in_place(xs)
    return alias


@checks.case
def chunks_cases(m):
    return m.chunks(list(range(7)), 3), m.chunks("abcdefg", size=2)


@checks.case
def merge_and_sort(m):
    return m.merge_sorted([1, 4, 9], [2, 3, 10, 11]), m.insertion_sort([3.5, -1, 2, float("-inf")])


@checks.case
def insertion_sort_nan(m):
    nan = float("nan")
    return m.insertion_sort([2.0, nan, 1.0, 0.5])


@checks.case
def matrix_add_lists(m):
    return m.matrix_add([[1, 2], [3, 4]], [[10, 20], [30, 40]]), m.matrix_add([["a"]], [["b"]])


@checks.case
def split_first_cases(m):
    return m.split_first([1]), m.split_first("xyz"), m.split_first([])


@checks.prop(ints)
def running_sums_prop(m, xs):
    return m.running_sums(xs)


@checks.prop(st.tuples(ints, ints))
def extend_prop(m, ab):
    a, b = ab
    alias = a
    m.extend_in_place(a, b)
    return alias


@checks.prop(st.tuples(ints, st.integers(-5, 5)))
def rotate_prop(m, xk):
    return m.rotate(*xk)


@checks.prop(st.tuples(st.lists(st.integers(0, 20), max_size=10).map(sorted), st.integers(0, 20)))
def binary_search_prop(m, xs_t):
    xs, t = xs_t
    return m.binary_search(xs, t)


@checks.prop(ints)
def sorting_prop(m, xs):
    return m.insertion_sort(list(xs)), m.dedupe(xs), m.pairwise_diffs(xs), m.flatten([xs, [xs]])
