"""Before/after tests for FMT, CMP, LOOP and DOC, their refusals, and hypothesis properties that a
mutated function returns what the original returns (or raises what it raises) on generated inputs."""

from __future__ import annotations

import textwrap
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cctest.mutators import generate_mutants, mutate_whole


def check(scheme: str, before: str, after: str | None) -> None:
    before = textwrap.dedent(before)
    expected = before if after is None else textwrap.dedent(after)
    got = mutate_whole(before, scheme).text
    assert got == expected, f"\n--- got ---\n{got}\n--- expected ---\n{expected}"
    compile(got, "<mutant>", "exec")


def prompt_texts(prompt: str, scheme: str, k: int = 30) -> list[str]:
    return [m.text for m in generate_mutants(prompt, schemes=[scheme], k=k).mutants]


# ---------------------------------------------------------------- FMT: layout only


def test_fmt_inserts_blank_lines_and_wraps_conditions():
    check(
        "FMT",
        """
        def f(a, /):
            '''Doc.'''
            if a > 1 and a < 5:
                return a
            while (a):
                a -= 1
            return 0
        """,
        """

        def f(a, /):

            '''Doc.'''

            if (a > 1 and a < 5):

                return a

            while (a):

                a -= 1

            return 0
        """,
    )


def test_fmt_prompt_variants_comment_line_and_parameter_wrap():
    prompt = "def f(a, b):\n    x = a\n    "
    texts = prompt_texts(prompt, "FMT")
    assert "def f(a, b):\n    x = a\n    #\n    " in texts  # before the line being typed
    assert "def f(a, b):\n\n    x = a\n    " in texts
    assert "def f(a,\n        b):\n    x = a\n    " in texts  # no trailing space is left
    assert "def f(\n        a, b):\n    x = a\n    " in texts
    assert "def f(a, b\n):\n    x = a\n    " in texts
    for t in texts:
        compile(t + "pass\n", "<mutant>", "exec")


def test_fmt_two_blank_lines_fill_a_window_that_is_a_def_line_alone():
    """A cursor in a docstring right after a ``def`` line: FMT's two blank lines at each site, tried
    after every other variant, give the k mutants the window has little else to offer."""
    prompt = 'x = 1\n\n\ndef saferepr(obj):\n    """Versio'
    texts = prompt_texts(prompt, "FMT")
    assert 'x = 1\n\n\ndef saferepr(obj):\n\n\n    """Versio' in texts
    assert texts.index('x = 1\n\n\ndef saferepr(obj):\n\n\n    """Versio') >= len(texts) - 2  # tried last
    assert len(generate_mutants(prompt, k=10).mutants) == 10


def test_fmt_keeps_the_encoding_declaration_on_top():
    src = "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nimport os\n"
    assert mutate_whole(src, "FMT").text == "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n\nimport os\n"


def test_fmt_does_not_close_a_parameter_list_after_a_default_or_trailing_comma():
    texts = prompt_texts("def f(a, b=1):\n    x = a\n    ", "FMT") + prompt_texts(
        "def g(a, b,):\n    x = a\n    ", "FMT"
    )
    assert not any("\n):" in t for t in texts)


# ---------------------------------------------------------------- CMP: mirrored comparisons


def test_cmp_mirrors_evident_numbers_and_literal_equality():
    check(
        "CMP",
        """
        def f(xs, y, /):
            n = len(xs)
            if n < 3 or 2.5 >= n or n <= len(xs):
                return y == None, y is not True, 'a' != y
            return xs == y
        """,
        """
        def f(xs, y, /):
            n = len(xs)
            if 3 > n or n <= 2.5 or n <= len(xs):
                return None == y, True is not y, y != 'a'
            return xs == y
        """,
    )


def test_cmp_refusals():
    # an unknown type beside a literal in an ordering, two calls, a chain, 'in', bytes literals
    check(
        "CMP",
        """
        def f(a, b, /):
            c = [1]
            return a < 3, len(a) < len(b), 1 < a < 5, a in b, a == b'x', c < [2], a < b
        """,
        None,
    )


def test_cmp_refuses_a_name_aliased_to_a_list():
    check("CMP", "def f(a, /):\n    n = []\n    n += a\n    return n < 3\n", None)


# ---------------------------------------------------------------- LOOP: for-range -> while


def test_loop_rewrites_a_range_loop_whose_target_is_not_used_after():
    check(
        "LOOP",
        """
        def f(xs, /):
            total = 0
            n = len(xs)
            for i in range(1, n):
                total += xs[i]
            for j in range(3):
                total += j
            return total
        """,
        """
        def f(xs, /):
            total = 0
            n = len(xs)
            i = 1
            while i < n:
                total += xs[i]
                i += 1
            j = 0
            while j < 3:
                total += j
                j += 1
            return total
        """,
    )


def test_loop_refusals():
    # the target used after the loop; bound in the body; continue; else; a stop the body changes;
    # a stop of unknown type; a closure over the target; a step; the target in range's arguments
    check(
        "LOOP",
        """
        def f(xs, m, /):
            out = []
            for i in range(3):
                out.append(i)
            out.append(i)
            for j in range(3):
                j = 5
            for k in range(3):
                if k:
                    continue
            for p in range(3):
                pass
            else:
                out.append(0)
            n = 3
            for q in range(n):
                n = 2
            for r in range(m):
                out.append(r)
            for s in range(3):
                out.append(lambda: s)
            for t in range(0, 6, 2):
                out.append(t)
            return out
        """,
        None,
    )


def test_loop_leaves_the_loop_being_typed_alone():
    assert prompt_texts("def f(xs, /):\n    total = 0\n    for i in range(3):\n        ", "LOOP") == []


# ---------------------------------------------------------------- DOC: comments and docstrings


def test_doc_edits_case_spacing_and_closing_quotes():
    check(
        "DOC",
        '''
        def f(a, /):
            """return the value."""
            #walk on
            # Sum it
            return a  # noqa: E501
        ''',
        '''
        def f(a, /):
            """Return the value."""
            # Walk on
            # sum it
            return a  # noqa: E501
        ''',
    )


def test_doc_moves_closing_quotes_only_where_getdoc_reads_the_same():
    check(
        "DOC",
        '''
        def f(a, /):
            """Sum.

            More."""
            return a
        def g(a, /):
            """Sum.
            """
            return a
        ''',
        '''
        def f(a, /):
            """sum.

            More.
            """
            return a
        def g(a, /):
            """sum.
            """
            return a
        ''',
    )


def test_doc_refusals():
    # doctests, pragmas, encoding declarations, identifiers and acronyms are left alone
    check(
        "DOC",
        '''
        # -*- coding: utf-8 -*-
        def f(a, /):
            """>>> f(1)
            1
            """
            # type: ignore
            # iNode and HTTP
            # HTTP first
            return a
        ''',
        None,
    )


def test_doc_leaves_docstrings_of_a_document_reading_doc_alone():
    src = 'def f():\n    """return it."""\n    return f.__doc__\n'
    assert mutate_whole(src, "DOC").text == src


def test_doc_edits_the_docstring_being_typed():
    head = "class C:\n    def weekday(self):\n"
    prompt = head + '        """Return a > b.  Computed by\n        the first ord'
    assert prompt_texts(prompt, "DOC") == [
        head + '        """return a > b.  Computed by\n        the first ord',
        head + '        """Return a > b. Computed by\n        the first ord',
    ]
    # one space becomes two; a raw docstring too
    prompt = head + "        r'''Sum it. Then add.\n        More"
    assert prompt_texts(prompt, "DOC") == [
        head + "        r'''sum it. Then add.\n        More",
        head + "        r'''Sum it.  Then add.\n        More",
    ]
    # the engine adds them to the other schemes' mutants (here FMT and GRA fill k = 10)
    got = generate_mutants(prompt, schemes=["FMT", "GRA_R", "GRA_C", "DOC"], k=10).mutants
    assert len(got) == 10 and "DOC" in {m.scheme for m in got}
    assert all(m.structural_distance == 0 for m in got if m.scheme == "DOC")


def test_doc_refuses_to_edit_other_text_being_typed():
    head = "class C:\n    def weekday(self):\n"
    for tail in (
        '        """Retu',  # the word being typed
        '        """Return it. With\n        >>> weekday(',  # a doctest
        '        """Return it::\n\n            Then',  # a literal block
        '        """Return \\n it. Then',  # an escape
        '        f"""Return it. Then',  # an f-string (not a docstring)
        '        b"""Return it. Then',  # bytes
    ):
        assert prompt_texts(head + tail, "DOC") == [], tail
    # a string that is not the first statement of a def or class body is a value, not a docstring
    assert prompt_texts("def f(a):\n    x = a\n    '''Return it. Then", "DOC") == []
    assert prompt_texts("def f(a):\n    if a:\n        '''Return it. Then", "DOC") == []
    # a document that reads docstrings
    prompt = "def g():\n    return f.__doc__\ndef f(a):\n    '''Return it. Then"
    assert prompt_texts(prompt, "DOC") == []


# ---------------------------------------------------------------- behaviour on generated inputs

FUNCTIONS = textwrap.dedent(
    '''
    def walk(xs, m, /):
        """sum every item."""
        total = 0
        n = len(xs)
        # from the start
        for i in range(n):
            if xs[i] > 0 and i < 4:
                total += xs[i]
            elif xs[i] == 0:
                total -= 1
        for j in range(2, n):
            if j == 3 or m is None:
                break
            total = total * 2
        if n >= 2 and total != 7:
            return total, n
        return -total
    def text(s, k, /):
        #count the vowels
        out = 0
        size = len(s)
        for i in range(size):
            if s[i] in "aeiou" and 1 <= i:
                out += 1
        if k == "x" or None is k:
            return out, size
        while out > 3:
            out -= 2
        return out
    '''
)

NEW_SCHEMES = ("FMT", "CMP", "LOOP", "DOC")


def load(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<module>", "exec"), namespace)
    return namespace


def outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except Exception as exc:
        return "raise", type(exc).__name__


ORIGINAL = load(FUNCTIONS)
MUTANTS = {s: load(mutate_whole(FUNCTIONS, s).text) for s in NEW_SCHEMES}
values = st.one_of(st.integers(-5, 5), st.floats(allow_nan=True), st.none(), st.text(max_size=2))


def test_every_new_scheme_changes_the_functions():
    for s in NEW_SCHEMES:
        assert mutate_whole(FUNCTIONS, s).text != FUNCTIONS, s


@settings(max_examples=150, deadline=None)
@given(xs=st.lists(st.one_of(st.integers(-3, 3), st.floats(allow_nan=True)), max_size=7), m=values)
def test_walk_returns_the_same_after_every_new_scheme(xs, m):
    expected = outcome(ORIGINAL["walk"], xs, m)
    for s, ns in MUTANTS.items():
        assert outcome(ns["walk"], list(xs), m) == expected, s


@settings(max_examples=150, deadline=None)
@given(s=st.one_of(st.text(max_size=8), st.lists(st.text(max_size=1), max_size=5)), k=values)
def test_text_returns_the_same_after_every_new_scheme(s, k):
    expected = outcome(ORIGINAL["text"], s, k)
    for name, ns in MUTANTS.items():
        assert outcome(ns["text"], s, k) == expected, name


def test_the_docstring_edit_is_the_one_difference_doc_makes():
    assert ORIGINAL["walk"].__doc__ == "sum every item."
    assert MUTANTS["DOC"]["walk"].__doc__ != ORIGINAL["walk"].__doc__
    import inspect

    assert inspect.getdoc(MUTANTS["DOC"]["walk"]) == "Sum every item."


def test_loop_is_off_unless_named_and_applies_at_a_cursor_when_named():
    from cctest.mutators import DEFAULT_SCHEMES

    assert "LOOP" not in DEFAULT_SCHEMES and {"FMT", "CMP", "DOC"} <= set(DEFAULT_SCHEMES)
    prompt = "def f(xs, /):\n    total = 0\n    for i in range(3):\n        total += i\n    x = total\n    "
    out = generate_mutants(prompt, schemes=["LOOP"], k=5, max_distance=1.0)
    assert [m.scheme for m in out.mutants] == ["LOOP"]
    assert "while i < 3:" in out.mutants[0].text
    assert all(m.scheme != "LOOP" for m in generate_mutants(prompt, k=30).mutants)


COMPREHENSIONS = textwrap.dedent(
    """
    def shape(xs, k, /):
        evens = [x * 2 for x in xs if x != k]
        pairs = {i: v for i, v in enumerate(xs)}
        nested = [[c for c in str(v)][:2] for v in xs]
        late = [lambda: y for y in xs]
        return evens, pairs, nested, [g() for g in late], sum(z for z in range(len(xs)) if z != k)
    """
)
REL_MUTANTS = {s: mutate_whole(COMPREHENSIONS, s) for s in ("REL_R", "REL_C")}


@settings(max_examples=150, deadline=None)
@given(xs=st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=2)), max_size=6), k=values)
def test_comprehension_variables_renamed_by_rel_return_the_same(xs, k):
    expected = outcome(load(COMPREHENSIONS)["shape"], xs, k)
    for s, m in REL_MUTANTS.items():
        # every comprehension variable is renamed
        assert {"x", "i", "v", "c", "y", "z", "g"} <= set(m.renames.values()), s
        assert outcome(load(m.text)["shape"], list(xs), k) == expected, s


LOOPS = textwrap.dedent(
    """
    def tally(xs, k, /):
        out = 0
        for i in range(4):
            if i < len(xs) and xs[i] == k:
                out += 1
        for j in range(-3, 3, 2):
            out = out * 2 + j
        return out
    """
)


@settings(max_examples=150, deadline=None)
@given(xs=st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=1)), max_size=6), k=values)
def test_ini_prints_of_range_targets_change_only_the_output(xs, k):
    import contextlib
    import io

    mutant = mutate_whole(LOOPS, "INI").text
    assert mutant.count("print(") == 4  # the function's name, out = 0, and each loop's target
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        got = outcome(load(mutant)["tally"], list(xs), k)
    assert got == outcome(load(LOOPS)["tally"], xs, k)
    assert printed.getvalue() == "tally\n0\n0\n1\n2\n3\n-3\n-1\n1\n"


TYPED = textwrap.dedent(
    """
    def typed(xs, k, /):
        label = 'n='
        label += f'{len(xs)}:'
        for x in xs:
            label = label + ','
        seen = ()
        for x in xs:
            seen += (x,)
            seen = seen + (k,)
        ratio = 1 / 2
        for x in xs:
            ratio = ratio * 2.0
            ratio += 0.5
        words = ' '.join(str(x) for x in xs)
        words += '!' * len(xs)
        first = xs[0] if xs else k
        return label, seen, ratio, 1.5 + len(xs), words, first, [x if x else k for x in xs]
    """
)


def test_irr_rewrites_every_str_tuple_and_float_site_of_typed():
    mutant = mutate_whole(TYPED, "IRR").text
    assert "label = label + f'{len(xs)}:'" in mutant and "label += ','" in mutant
    assert "seen = seen + (x,)" in mutant and "seen += (k,)" in mutant
    assert "ratio = 2.0 * ratio" in mutant and "ratio = ratio + 0.5" in mutant
    assert "len(xs) + 1.5" in mutant and "words = words + ('!' * len(xs))" in mutant
    assert "first = k if not xs else xs[0]" in mutant and "[k if not x else x for x in xs]" in mutant


@settings(max_examples=150, deadline=None)
@given(
    xs=st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=2), st.floats(allow_nan=False)), max_size=6),
    k=values,
)
def test_irr_on_str_tuple_and_float_locals_returns_the_same(xs, k):
    expected = outcome(load(TYPED)["typed"], xs, k)
    got = outcome(load(mutate_whole(TYPED, "IRR").text)["typed"], list(xs), k)
    assert got == expected or (expected[0] == got[0] == "ok" and repr(got) == repr(expected))
