# ruff: noqa
"""Corpus: closures, nonlocal, nested functions, lambdas, decorators, recursion, globals,
mutable default arguments, generators (yield, yield from, send)."""

import functools

CALLS = 0
registry = {}


def make_counter(start=0):
    count = start

    def increment(step=1):
        nonlocal count
        count += step
        return count

    return increment


def make_accumulator():
    items = []

    def add(x):
        items.append(x)  # no nonlocal: mutates the enclosing list
        return len(items)

    def snapshot():
        return tuple(items)

    return add, snapshot


def adders(n):
    late = [lambda x: x + i for i in range(n)]
    early = [lambda x, i=i: x + i for i in range(n)]
    return [f(10) for f in late], [f(10) for f in early]


def compose(*funcs):
    def composed(x):
        result = x
        for f in reversed(funcs):
            result = f(result)
        return result

    return composed


def counted(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        global CALLS
        CALLS += 1
        wrapper.calls += 1
        return func(*args, **kwargs)

    wrapper.calls = 0
    return wrapper


def register(name):
    def decorator(func):
        registry[name] = func
        return func

    return decorator


@counted
def square(x):
    return x * x


@register("cube")
@counted
def cube(x):
    return x**3


def factorial(n):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


def fib_memo(n, memo={}):
    # the mutable default is shared between calls on purpose: it is the cache
    if n in memo:
        return memo[n]
    value = n if n < 2 else fib_memo(n - 1) + fib_memo(n - 2)
    memo[n] = value
    return value


def append_default(x, acc=[]):
    acc.append(x)
    return acc


def hanoi(n, source="A", target="C", spare="B", moves=None):
    if moves is None:
        moves = []
    if n:
        hanoi(n - 1, source=source, target=spare, spare=target, moves=moves)
        moves.append((source, target))
        hanoi(n - 1, source=spare, target=target, spare=source, moves=moves)
    return moves


def bump_global(amount):
    global CALLS
    CALLS += amount
    return CALLS


def read_global():
    return CALLS * 2


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def chain_gens(*iterables):
    for it in iterables:
        yield from it
    return "done"


def delegate():
    result = yield from chain_gens([1, 2], countdown(2))
    yield result


def running_average():
    total = 0.0
    count = 0
    average = None
    while True:
        value = yield average
        if value is None:
            break
        total += value
        count += 1
        average = total / count
    return count


def pipeline(xs):
    evens = (x for x in xs if x % 2 == 0)
    squares = (e * e for e in evens)
    return sum(squares)


def nested_three():
    a = 1

    def middle():
        b = 2

        def inner():
            nonlocal a, b
            a += 10
            b += 20
            return a + b

        return inner() + b

    return middle(), a


def lambda_sort(words):
    return sorted(words, key=lambda w: (-len(w), w))


def outer_shadow(x):
    def inner(x):
        return x * 2

    return inner(x + 1) + x


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()


@checks.case
def counters(m):
    c = m.make_counter(start=5)
    d = m.make_counter()
    return c(), c(step=3), d(), c(), [cell.cell_contents for cell in c.__closure__]


@checks.case
def accumulator(m):
    add, snap = m.make_accumulator()
    add(1)
    add("x")
    return snap()


@checks.case
def late_binding(m):
    return m.adders(3), m.compose(str, lambda v: v + 1, abs)(-4)


@checks.case
def decorators(m):
    before = m.CALLS
    r = (m.square(4), m.square(x=5), m.cube(2), m.registry["cube"](3))
    return r, m.CALLS - before, m.square.calls, m.cube.calls, m.square.__name__, m.cube.__wrapped__(2)


@checks.case
def recursion(m):
    return (
        m.factorial(10),
        m.fib_memo(60),
        len(m.fib_memo.__defaults__[0]),
        m.hanoi(3),
        m.hanoi(n=2, spare="S"),
    )


@checks.case
def mutable_default(m):
    m.append_default(1)
    m.append_default(2)
    return m.append_default(3), m.append_default(0, acc=[9])


@checks.case
def globals_flow(m):
    return m.bump_global(3), m.read_global(), m.bump_global(amount=-1), m.CALLS


@checks.case
def generators(m):
    g = m.chain_gens("ab", m.countdown(3))
    items = list(g)
    return items, list(m.delegate()), list(m.countdown(0)), m.pipeline(range(10))


@checks.case
def generator_send(m):
    g = m.running_average()
    out = [next(g), g.send(10), g.send(20), g.send(0)]
    try:
        g.send(None)
    except StopIteration as stop:
        out.append(("stopped", stop.value))
    return out


@checks.case
def nesting(m):
    return m.nested_three(), m.lambda_sort(["bb", "a", "ccc", "ab"]), m.outer_shadow(3), m.outer_shadow(x="a")


@checks.case
def generator_return_value(m):
    g = m.chain_gens([1])
    next(g)
    try:
        next(g)
    except StopIteration as stop:
        return stop.value


@checks.prop(st.lists(st.integers(-20, 20), max_size=10))
def functional_prop(m, xs):
    return m.pipeline(xs), list(m.chain_gens(xs, m.countdown(len(xs)))), m.lambda_sort([str(x) for x in xs])


@checks.prop(st.integers(0, 15))
def recursion_prop(m, n):
    return m.factorial(n), m.fib_memo(n), len(m.hanoi(min(n, 6)))
