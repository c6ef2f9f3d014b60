# ruff: noqa
"""Corpus: boolean conditions over arbitrary objects.

The slides' RTF example (``if ignore:`` -> ``if ignore == (b == b):``) is wrong for ``ignore = 5``
or ``b = nan``; ``a and b`` returns an operand, not a bool; ``__eq__`` may return anything; ``__bool__``
may be counted or raise; chained comparisons evaluate the middle operand once.
"""


def pick(a, b, ignore):
    if ignore:
        return a
    return b


def pick_not(a, b, flag):
    if not flag:
        return a
    return b


def both(a, b):
    return a and b


def either(a, b):
    return a or b


def both_truth(a, b):
    if a and b:
        return "both"
    return "not both"


def neither(a, b):
    if not (a or b):
        return True
    return False


def equal(a, b):
    return a == b


def not_equal(a, b):
    return a != b


def not_of_equal(a, b):
    return not (a == b)


def in_range(lo, x, hi):
    return lo < x < hi


def ternary(cond, a, b):
    return a if cond else b


def is_missing(x):
    if x is None:
        return "missing"
    return "present"


def countdown(flag_source):
    steps = 0
    while flag_source:
        steps += 1
    return steps


def first_truthy(values):
    for v in values:
        if v:
            return v
    return None


def all_positive(xs):
    return all(x > 0 for x in xs)


def contains(container, item):
    return item in container


def classify(n):
    if n < 0:
        kind = "negative"
    elif n == 0:
        kind = "zero"
    elif n > 100 and n % 2 == 0:
        kind = "big even"
    else:
        kind = "positive"
    return kind


def self_equal(b):
    # the slides' RTF example compares b == b: false for nan, an array for array-likes
    if b == b:
        return "reflexive"
    return "irreflexive"


def assert_positive(x):
    assert x > 0, "must be positive"
    return x


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()
nan = float("nan")


class Flag:
    """Truthiness that counts how often it is asked (an extra bool() call is observable)."""

    def __init__(self, value):
        self.value = value
        self.asked = 0

    def __bool__(self):
        self.asked += 1
        return self.value


class Weird:
    """== and != return strings, not bools; both are truthy."""

    def __eq__(self, other):
        return "eq-result"

    def __ne__(self, other):
        return "ne-result"

    __hash__ = object.__hash__


class ArrayLike:
    """Like a numpy array: comparisons return an array whose truth value is ambiguous."""

    def __init__(self, *values):
        self.values = values

    def _cmp(self, other, op):
        other_values = other.values if isinstance(other, ArrayLike) else (other,) * len(self.values)
        return ArrayLike(*(op(a, b) for a, b in zip(self.values, other_values)))

    def __eq__(self, other):
        return self._cmp(other, lambda a, b: a == b)

    def __ne__(self, other):
        return self._cmp(other, lambda a, b: a != b)

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b)

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b)

    def __bool__(self):
        raise ValueError("The truth value of an array with more than one element is ambiguous")

    __hash__ = object.__hash__

    def __repr__(self):
        return f"ArrayLike{self.values}"


class Exploding:
    """Truthiness raises."""

    def __bool__(self):
        raise RuntimeError("no truth value")


class Draining:
    """Truthy until asked three times (a while loop over it terminates only if asked exactly)."""

    def __init__(self):
        self.left = 3

    def __bool__(self):
        self.left -= 1
        return self.left >= 0


class Middle:
    """Counts how often it is compared (a < b < c must compare the middle operand once each side)."""

    def __init__(self, v):
        self.v = v
        self.compared = 0

    def __gt__(self, other):
        self.compared += 1
        return self.v > other

    def __lt__(self, other):
        self.compared += 1
        return self.v < other


ODD_VALUES = [5, 0, -1, 0.0, -0.0, nan, "", "0", [], [0], {}, None, (), (None,), Weird(), range(0)]


@checks.case
def pick_over_odd_values(m):
    return [m.pick("a", "b", v) for v in ODD_VALUES] + [m.pick_not("a", "b", v) for v in ODD_VALUES]


@checks.case
def pick_by_keyword(m):
    return m.pick(ignore=5, a=1, b=2), m.pick(1, 2, ignore=nan), m.ternary(a=1, b=2, cond=[])


@checks.case
def pick_counts_bool_calls(m):
    f = Flag(True)
    g = Flag(False)
    return m.pick(1, 2, f), f.asked, m.pick_not(1, 2, g), g.asked


@checks.case
def pick_exploding(m):
    return m.pick(1, 2, Exploding())


@checks.case
def pick_arraylike(m):
    return m.pick(1, 2, ArrayLike(1, 2))


@checks.case
def and_or_return_operands(m):
    return [(m.both(a, b), m.either(a, b)) for a in ODD_VALUES[:12] for b in (0, "x", None, nan)]


@checks.case
def and_counts_bool_calls(m):
    a, b = Flag(True), Flag(False)
    r1 = m.both_truth(a, b)
    c, d = Flag(False), Flag(True)
    r2 = m.neither(c, d)
    return r1, a.asked, b.asked, r2, c.asked, d.asked


@checks.case
def equality_non_bool(m):
    w = Weird()
    return (
        m.equal(w, 1),
        m.not_equal(w, 1),
        m.not_of_equal(w, 1),
        m.equal(nan, nan),
        m.not_equal(nan, nan),
        m.not_of_equal(nan, nan),
    )


@checks.case
def equality_arraylike(m):
    a = ArrayLike(1, 2, 3)
    return m.equal(a, 2), m.not_equal(a, 2)


@checks.case
def not_of_equal_arraylike(m):
    return m.not_of_equal(ArrayLike(1, 2), 1)


@checks.case
def chained_comparison_once(m):
    mid = Middle(5)
    r = m.in_range(1, mid, 10)
    return r, mid.compared, m.in_range(0, nan, 1), m.in_range(lo=0, x=0.5, hi=1)


@checks.case
def chained_arraylike(m):
    return m.in_range(0, ArrayLike(1, 2), 3)


@checks.case
def none_checks(m):
    return [m.is_missing(v) for v in (None, 0, "", Weird(), ArrayLike(1, 2))]


@checks.case
def while_counts_truth(m):
    return m.countdown(Draining()), m.countdown([])


@checks.case
def first_truthy_cases(m):
    return m.first_truthy([0, "", None, [], 0.0, -0.0, "x", 5]), m.first_truthy([nan, 1]), m.first_truthy([])


@checks.case
def comprehension_conditions(m):
    return (
        m.all_positive([1, 2]),
        m.all_positive([1, nan]),
        m.all_positive([]),
        m.contains("abc", "bc"),
        m.contains([nan], nan),
    )


@checks.case
def classify_cases(m):
    return [m.classify(n) for n in (-3, 0, 0.0, -0.0, 7, 102, 103, 1e10, nan)]


@checks.case
def self_equal_cases(m):
    return [m.self_equal(v) for v in (1, nan, Weird(), "a", None)]


@checks.case
def self_equal_arraylike(m):
    return m.self_equal(ArrayLike(1, 2))


@checks.case
def assertion(m):
    return m.assert_positive(3), m.assert_positive(0.5)


@checks.case
def assertion_fails(m):
    return m.assert_positive(nan)


anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(),
    st.text(max_size=2),
    st.lists(st.integers(0, 1), max_size=2),
)


@checks.prop(st.tuples(anything, anything, anything))
def truthiness_prop(m, abc):
    a, b, c = abc
    return (
        m.pick(a, b, c),
        m.pick_not(a, b, c),
        m.both(a, b),
        m.either(a, c),
        m.both_truth(a, b),
        m.neither(b, c),
        m.ternary(c, a, b),
        m.is_missing(a),
        m.first_truthy([a, b, c]),
    )


@checks.prop(st.tuples(st.one_of(st.integers(), st.floats()), st.one_of(st.integers(), st.floats())))
def comparison_prop(m, ab):
    a, b = ab
    return (
        m.equal(a, b),
        m.not_equal(a, b),
        m.not_of_equal(a, b),
        m.in_range(a, b, a),
        m.classify(a),
        m.self_equal(b),
    )
