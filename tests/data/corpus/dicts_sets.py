# ruff: noqa
"""Corpus: dicts and sets. Counting with d[k] += 1, in-place union on aliased dicts and sets."""

from collections import Counter, defaultdict


def word_counts(text):
    counts = {}
    for word in text.split():
        if word in counts:
            counts[word] += 1
        else:
            counts[word] = 1
    return counts


def char_histogram(s):
    hist = defaultdict(int)
    for ch in s:
        hist[ch] += 1
    return dict(hist)


def invert(d):
    inverted = {}
    for key, value in d.items():
        inverted.setdefault(value, []).append(key)
    return inverted


def merge_into(base, extra):
    # dict |= mutates base in place (the caller sees it); base = base | extra would not
    base |= extra
    return base


def union_into(s, t):
    s |= t
    return s


def difference_new(s, t):
    s = s - t
    return s


def symmetric_update(s, t):
    s ^= t
    return s


def group_by_length(words):
    groups = {}
    for w in words:
        key = len(w)
        groups[key] = groups.get(key, []) + [w]
    return groups


def deep_get(d, path, default=None):
    current = d
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return default
        current = current[part]
    return current


def top_n(items, n):
    return Counter(items).most_common(n)


def common_keys(*dicts):
    if not dicts:
        return set()
    keys = set(dicts[0])
    for d in dicts[1:]:
        keys &= set(d)
    return sorted(keys)


def squares_by_parity(n):
    return {parity: {i * i for i in range(n) if i % 2 == parity} for parity in (0, 1)}


def nested_totals(orders):
    totals = {}
    for customer, amount in orders:
        totals[customer] = totals.get(customer, 0) + amount
    return totals


def frozen_pairs(pairs):
    return frozenset(frozenset(p) for p in pairs)


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()
words = st.lists(st.sampled_from(["a", "bb", "a", "ccc", "dd", "e"]), max_size=15)


@checks.case
def counts(m):
    return m.word_counts("the cat the dog the end"), m.char_histogram("mississippi")


@checks.case
def invert_cases(m):
    return m.invert({"a": 1, "b": 2, "c": 1}), m.invert({})


@checks.case
def merge_into_aliases(m):
    base = {"a": 1}
    alias = base
    result = m.merge_into(base, {"b": 2, "a": 3})
    return result is alias, alias


@checks.case
def merge_into_counter(m):
    # Counter's |= keeps maximums; a Counter and a dict differ for | but not for |=
    c = Counter(a=3, b=1)
    alias = c
    m.merge_into(c, Counter(a=1, b=5))
    return sorted(alias.items())


@checks.case
def set_ops_alias(m):
    s = {1, 2}
    alias = s
    m.union_into(s, {3})
    t = {1, 2, 3}
    alias_t = t
    diff = m.difference_new(t, {1})
    u = {1, 2}
    m.symmetric_update(u, {2, 3})
    return alias, alias_t, diff, u


@checks.case
def union_into_frozenset(m):
    f = frozenset({1})
    return m.union_into(f, {2}), f


@checks.case
def set_ops_bad_types(m):
    return m.union_into({1}, [2])


@checks.case
def grouping(m):
    return m.group_by_length(["a", "bb", "cc", "d", "eee"])


@checks.case
def deep_get_cases(m):
    d = {"a": {"b": {"c": 0}}, "x": [1]}
    return (
        m.deep_get(d, "a.b.c"),
        m.deep_get(d, "a.b.z", default="none"),
        m.deep_get(d, "x.y"),
        m.deep_get(path="a.b", d=d),
    )


@checks.case
def misc(m):
    return (
        m.top_n("abracadabra", 2),
        m.common_keys({"a": 1, "b": 2}, {"b": 3, "a": 0}, {"a": 5}),
        m.common_keys(),
        m.squares_by_parity(7),
        m.nested_totals([("x", 1), ("y", 2.5), ("x", -1)]),
        m.frozen_pairs([(1, 2), (2, 1), (3, 3)]),
    )


@checks.prop(words)
def counting_prop(m, ws):
    return m.word_counts(" ".join(ws)), m.group_by_length(ws), m.top_n(ws, 3)


@checks.prop(st.tuples(st.sets(st.integers(0, 9)), st.sets(st.integers(0, 9))))
def set_prop(m, st_):
    s, t = st_
    return m.union_into(set(s), t), m.difference_new(s, t), m.symmetric_update(set(s), t)
