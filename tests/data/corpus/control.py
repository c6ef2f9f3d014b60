# ruff: noqa
"""Corpus: control flow. try/except/else/finally, raise from, custom exceptions, context managers,
walrus (which binds in the enclosing function even inside a comprehension), match statements,
for/else, while/else, del, star-unpacking."""

import contextlib
import io


class ParseError(Exception):
    def __init__(self, line, message):
        super().__init__(f"line {line}: {message}")
        self.line = line


def parse_pairs(text):
    result = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            key, value = line.split("=")
        except ValueError as exc:
            raise ParseError(lineno, "expected key=value") from exc
        result[key.strip()] = int(value)
    return result


def safe_int(text, default=0):
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = default
    else:
        value *= 2
    finally:
        text = None
    return value


def finally_wins(log):
    try:
        log.append("try")
        return "from try"
    finally:
        log.append("finally")


def finally_overrides():
    try:
        raise KeyError("lost")
    finally:
        return "finally value"  # noqa: B012 - swallowing is the behaviour under test


def retry(func, attempts):
    errors = []
    for attempt in range(attempts):
        try:
            return func(attempt), errors
        except Exception as e:
            errors.append(type(e).__name__)
    else:
        return None, errors


class Tracker:
    def __init__(self, suppress=False):
        self.events = []
        self.suppress = suppress

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.events.append(("exit", exc_type.__name__ if exc_type else None))
        return self.suppress


def use_tracker(fail, suppress):
    t = Tracker(suppress=suppress)
    with t as tracked:
        tracked.events.append("body")
        if fail:
            raise ValueError("boom")
    return t.events


@contextlib.contextmanager
def tag(log, name):
    log.append(f"<{name}>")
    try:
        yield name.upper()
    finally:
        log.append(f"</{name}>")


def nested_tags():
    log = []
    with tag(log, "a") as a, tag(log, "b") as b:
        log.append(a + b)
    return log


def read_all(stream):
    chunks = []
    while chunk := stream.read(3):
        chunks.append(chunk)
    return chunks


def walrus_in_comprehension(values):
    results = [y for x in values if (y := x * 2) > 4]
    return results, y  # y leaks to the function scope


def describe_shape(shape):
    match shape:
        case {"kind": "circle", "r": r}:
            return f"circle {r}"
        case {"kind": "rect", "w": w, "h": h} if w == h:
            return f"square {w}"
        case {"kind": "rect", "w": w, "h": h}:
            return f"rect {w}x{h}"
        case [x, y]:
            return f"point {x},{y}"
        case [first, *rest]:
            return f"list of {1 + len(rest)} from {first}"
        case str() as s:
            return f"text {s}"
        case Point(x=0, y=yy):
            return f"on y axis at {yy}"
        case Point(x=xx, y=yy):
            return f"point object {xx},{yy}"
        case 0 | 1 | 2:
            return "small"
        case _:
            return "unknown"


class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y


def find_first_negative(rows):
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            if value < 0:
                break
        else:
            continue
        return i, j
    return None


def while_else(n):
    tries = 0
    while tries < n:
        tries += 1
        if tries == 5:
            break
    else:
        return "exhausted", tries
    return "broke", tries


def delete_and_check(flag):
    value = 1
    if flag:
        del value
    try:
        return value
    except NameError:
        return "deleted"


def capture_print(items):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        for item in items:
            print(item, end=";")
    return buf.getvalue()


def swap_and_unpack(pair, triple):
    a, b = pair
    a, b = b, a
    (x, *ys), z = triple, "z"
    return a, b, x, ys, z


# ==== CHECKS (never mutated) ====
from _checks import Checks

checks = Checks()


@checks.case
def parsing(m):
    return m.parse_pairs("a=1\n\n b = 2 \n")


@checks.case
def parsing_error(m):
    try:
        m.parse_pairs("a=1\nnope")
    except m.ParseError as e:
        return str(e), e.line, type(e.__cause__).__name__


@checks.case
def parsing_error_escapes(m):
    return m.parse_pairs("x=1\ny=oops")


@checks.case
def try_else_finally(m):
    log = []
    return (
        m.safe_int("21"),
        m.safe_int("x"),
        m.safe_int(None, default=-1),
        m.finally_wins(log),
        log,
        m.finally_overrides(),
    )


@checks.case
def retries(m):
    def flaky(attempt):
        if attempt < 2:
            raise [KeyError, ZeroDivisionError][attempt]("x")
        return attempt

    return m.retry(flaky, 5), m.retry(flaky, 2), m.retry(func=flaky, attempts=0)


@checks.case
def context_managers(m):
    return m.use_tracker(False, False), m.use_tracker(True, True), m.nested_tags()


@checks.case
def context_manager_propagates(m):
    return m.use_tracker(fail=True, suppress=False)


@checks.case
def walrus(m):
    import io as _io

    return m.read_all(_io.StringIO("abcdefgh")), m.walrus_in_comprehension([1, 2, 3, 4])


@checks.case
def walrus_unbound(m):
    return m.walrus_in_comprehension([])


@checks.case
def match_statement(m):
    shapes = [
        {"kind": "circle", "r": 2},
        {"kind": "rect", "w": 3, "h": 3},
        {"kind": "rect", "w": 3, "h": 4},
        [1, 2],
        [1, 2, 3],
        "hi",
        m.Point(0, 7),
        m.Point(1, 2),
        1,
        2.0,
        None,
        {"kind": "other"},
    ]
    return [m.describe_shape(s) for s in shapes]


@checks.case
def loops_with_else(m):
    return (
        m.find_first_negative([[1, 2], [3, -4, 5], [-1]]),
        m.find_first_negative([[1]]),
        m.while_else(3),
        m.while_else(10),
    )


@checks.case
def deletion(m):
    return m.delete_and_check(False), m.delete_and_check(True)


@checks.case
def printing_captured(m):
    return m.capture_print([1, "a", None]), m.swap_and_unpack((1, 2), [3, 4, 5])
