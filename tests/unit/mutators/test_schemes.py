"""Before/after tests for each scheme (LibCST CodemodTest style), the unsafe cases included.

``mutate_whole`` applies a scheme at every site of a parsable source, so each case is a source and
the exact text expected (or the source itself when the scheme must leave it alone).
"""

from __future__ import annotations

import textwrap

import pytest

from cctest.errors import InputError, UnknownSchemeError
from cctest.mutators import SCHEMES, generate_mutants, mutate_whole


def check(scheme: str, before: str, after: str | None) -> None:
    before = textwrap.dedent(before)
    expected = before if after is None else textwrap.dedent(after)
    got = mutate_whole(before, scheme).text
    assert got == expected, f"\n--- got ---\n{got}\n--- expected ---\n{expected}"
    compile(got, "<mutant>", "exec")


def test_registry_order_and_names():
    assert list(SCHEMES) == [
        *("REP_R", "REP_C", "REL_R", "REL_C", "IRR", "RTF", "GRA_R", "GRA_C", "INI"),
        "FORM",
        *("FMT", "CMP", "LOOP", "DOC"),
    ]


# ---------------------------------------------------------------- REP: parameters


def test_rep_renames_parameters_everywhere_in_the_body():
    check(
        "REP_R",
        """
        def add(a, b=0, /, *args, **kw):
            res = a + b
            return [res + x for x in args], f"{b}", kw
        """,
        """
        def add(Param1, Param2=0, /, *Param3, **Param4):
            res = Param1 + Param2
            return [res + x for x in Param3], f"{Param2}", Param4
        """,
    )


def test_rep_c_uses_the_function_name():
    check(
        "REP_C",
        "def add(*args, **kw):\n    return args, kw\n",
        "def add(*Add_Param_args, **Add_Param_kw):\n    return Add_Param_args, Add_Param_kw\n",
    )


def test_rep_renames_ordinary_parameters_of_a_prompt():
    # the issue's own examples: def add(a, Param1) and def add(a, Add_Param_b)
    prompt = "def add(a, b):\n    res = a + b\n    "
    r = {m.text for m in generate_mutants(prompt, schemes=["REP_R"]).mutants}
    c = {m.text for m in generate_mutants(prompt, schemes=["REP_C"]).mutants}
    assert "def add(Param1, b):\n    res = Param1 + b\n    " in r
    assert "def add(a, Param1):\n    res = a + Param1\n    " in r
    assert "def add(a, Add_Param_b):\n    res = a + Add_Param_b\n    " in c
    assert "def add(Add_Param_a, b):\n    res = Add_Param_a + b\n    " in c
    check(
        "REP_R", "def add(a, b):\n    res = a + b\n", "def add(Param1, Param2):\n    res = Param1 + Param2\n"
    )
    # its own default does not count as a keyword use
    check(
        "REP_C",
        "def area(width, height=1):\n    return width * height\n",
        "def area(Area_Param_width, Area_Param_height=1):\n    return Area_Param_width * Area_Param_height\n",
    )


def test_rep_keeps_a_name_the_document_passes_by_keyword():
    check(
        "REP_R",
        "def add(a, b):\n    return a + b\n\nprint(add(1, b=2))\n",
        "def add(Param1, b):\n    return Param1 + b\n\nprint(add(1, b=2))\n",
    )
    prompt = "def add(a, b):\n    res = a + b\n    return add(\n        a, b =res)\n"
    for m in generate_mutants(prompt + "    ", schemes=["REP_R", "REP_C"]).mutants:
        assert "b" not in m.renames.values(), m.text
    # the context (the code after the cursor, a test file) counts too, in both entry points
    got = generate_mutants("def add(a, b):\n    res = a + b\n    ", context="add(1, b=2)").mutants
    assert got and all(m.renames.get(n) != "b" for m in got for n in m.renames)
    assert any(m.renames for m in got if m.scheme.startswith("REP"))
    whole = mutate_whole("def add(a, b):\n    return a + b\n", "REP_R", context="t = add(a=1, b=2)\n")
    assert whole.renames == {}
    # recursion by keyword: the recursive call is in the document
    check(
        "REP_R",
        "def total(n, acc=0):\n    return acc if n == 0 else total(n - 1, acc=acc + n)\n",
        "def total(Param1, acc=0):\n    return acc if Param1 == 0 else total(Param1 - 1, acc=acc + Param1)\n",
    )
    # conservative: b= anywhere after '(' or ',', even another function's default, keeps f's b
    # (g's default is g's own signature, so g's b is renamed)
    check(
        "REP_R",
        "def f(b):\n    return b\ndef g(a, b=1):\n    return a\n",
        "def f(b):\n    return b\ndef g(Param1, Param2=1):\n    return Param1\n",
    )
    # == is a comparison, not a keyword
    check(
        "REP_R",
        "def f(b):\n    return b\nx = f(b == 1)\n",
        "def f(Param1):\n    return Param1\nx = f(b == 1)\n",
    )


@pytest.mark.parametrize(
    "source",
    [
        "def f(self, *, key):\n    return key\n",  # keyword-only: only ever passed by keyword
        "@fixture\ndef f(a, b):\n    return a + b\n",  # decorators read parameter names
        "@pytest.mark.parametrize('a', [1])\ndef check(a):\n    return a\n",
        "def test_sum(tmp_path, a):\n    return tmp_path, a\n",  # pytest injects by name
        "class C:\n    def __eq__(self, other):\n        return other\n",  # dunders other than __init__
        "def f(a, b):\n    return a + b\n\nf(**opts)\n",  # ** unpacking
        "def f(a, b):\n    return a + b\n\nf(\n    1,\n    **opts,\n)\n",
        "def f(a, b):\n    return a + b\n\ng = functools.partial(f, 1)\n",
        "def f(a, b):\n    return a + b\n\nh = partial(mod.f, b=1)\n",
        "import inspect\ndef f(a, b):\n    return a + b\n",  # introspection anywhere
        "def f(a, b):\n    return a + b\n\nprint(f.__code__.co_varnames)\n",
        "def f(a, b):\n    return a + b\n\nfs[0](**opts)\n",  # unknown callee unpacked
        "class C:\n    def __init__(self, a):\n        self.a = a\n\nC(**d)\n",
    ],
)
def test_rep_leaves_parameters_whose_name_matters_alone(source):
    for scheme in ("REP_R", "REP_C"):
        assert mutate_whole(source, scheme).text == source
        assert not [m for m in generate_mutants(source, schemes=[scheme]).mutants if m.renames]


def test_rep_renames_method_parameters_but_not_the_instance():
    check(
        "REP_R",
        """
        class C:
            def __init__(this, a):
                this.a = a
            def m(self, x, /):
                return x
        """,
        """
        class C:
            def __init__(this, Param1):
                this.a = Param1
            def m(self, Param2, /):
                return Param2
        """,
    )


def test_rep_at_a_cursor_in_a_method_keeps_the_instance_and_sees_the_class():
    # the window is the method alone (under an 'if 1:' wrapper): the class is found above it
    method = "class C:\n    def m(this, a):\n        res = a\n        "
    got = [m.renames for m in generate_mutants(method, schemes=["REP_R"]).mutants]
    assert got == [{"Param1": "a"}]
    init = "class C:\n    x = 1\n\n    def __init__(this, a):\n        res = a\n        "
    assert [m.renames for m in generate_mutants(init, schemes=["REP_R"]).mutants] == [{"Param1": "a"}]
    # C(**d) after the cursor: C's __init__ may receive any keyword
    assert not generate_mutants(init, schemes=["REP_R"], context="C(**d)").mutants
    # a nested function is not a method: its first parameter is renamed
    nested = "def outer():\n    def inner(x, y):\n        res = x + y\n        "
    assert {"x", "y"} <= {
        v for m in generate_mutants(nested, schemes=["REP_R"]).mutants for v in m.renames.values()
    }


def test_rep_keyword_facts_are_not_shared_between_documents():
    # the same window under two documents: the cached window must not leak REP's eligibility
    body = "def add(a, b):\n    res = a + b\n    "
    plain = generate_mutants(body, schemes=["REP_R"]).mutants
    assert any(m.renames.get("Param1") == "b" or "b" in m.renames.values() for m in plain)
    kw = generate_mutants("x = add(1, b=2)\n" + body, schemes=["REP_R"]).mutants
    assert kw and all("b" not in m.renames.values() for m in kw)
    with_context = generate_mutants(body, schemes=["REP_R"], context="add(1, b=2)").mutants
    assert with_context and all("b" not in m.renames.values() for m in with_context)
    again = generate_mutants(body, schemes=["REP_R"]).mutants
    assert [m.text for m in again] == [m.text for m in plain]


def test_rep_keeps_defaults_attributes_and_call_keywords():
    check(
        "REP_R",
        """
        b = 1
        def f(a=b, /, *b_, **kw):
            return a.b + g(a=a) + b
        """,
        """
        b = 1
        def f(Param1=b, /, *Param2, **Param3):
            return Param1.b + g(a=Param1) + b
        """,
    )


def test_rep_skips_a_parameter_a_nested_scope_rebinds():
    check(
        "REP_R",
        """
        def f(*a):
            g = lambda a: a
            return g(a)
        """,
        None,
    )


def test_rep_renames_closure_uses():
    check(
        "REP_R",
        """
        def f(*a):
            def g():
                return a * 2
            return g
        """,
        """
        def f(*Param1):
            def g():
                return Param1 * 2
            return g
        """,
    )


# ---------------------------------------------------------------- REL: locals


def test_rel_renames_locals_in_every_binding_form():
    check(
        "REL_R",
        """
        def f(xs):
            total = 0
            for item in xs:
                total += item
            with open(xs) as fh:
                pass
            try:
                pass
            except ValueError as err:
                print(err)
            del item
            return total, fh
        """,
        """
        def f(xs):
            LocalVar1 = 0
            for LocalVar2 in xs:
                LocalVar1 += LocalVar2
            with open(xs) as LocalVar3:
                pass
            try:
                pass
            except ValueError as LocalVar4:
                print(LocalVar4)
            del LocalVar2
            return LocalVar1, LocalVar3
        """,
    )


def test_rel_renames_walrus_targets_and_comprehension_variables():
    check(
        "REL_R",
        """
        def f(xs, rows):
            if (n := len(xs)) > 2:
                xs = xs[:n]
            total = sum([x * 2 for x in xs])
            pairs = {k: v for k, v in rows}
            grid = [[c for c in row] for row in rows]
            late = [lambda: y for y in xs]
            return total, pairs, grid, late, (z for z in xs)
        """,
        """
        def f(xs, rows):
            if (LocalVar3 := len(xs)) > 2:
                xs = xs[:LocalVar3]
            LocalVar4 = sum([LocalVar1 * 2 for LocalVar1 in xs])
            LocalVar5 = {LocalVar6: LocalVar7 for LocalVar6, LocalVar7 in rows}
            LocalVar8 = [[LocalVar9 for LocalVar9 in LocalVar2] for LocalVar2 in rows]
            LocalVar10 = [lambda: LocalVar11 for LocalVar11 in xs]
            return LocalVar4, LocalVar5, LocalVar8, LocalVar10, (LocalVar12 for LocalVar12 in xs)
        """,
    )


@pytest.mark.parametrize(
    "source",
    [
        # the name is also the function's own variable, or its first iterable (read in the function)
        "def f(xs):\n    x = 1\n    return [x for x in xs]\n",
        "def f(x):\n    return [x for x in x]\n",
        # a nested function reads a global of the same name; a lambda's parameter has it
        "def f(xs):\n    def g():\n        return x\n    return [x for x in xs], g\n",
        "def f(xs):\n    return [x for x in xs], (lambda x: x)\n",
        # a class body binds it; an f-string shows it; the function reads its own names
        "def f(xs):\n    class C:\n        x = 1\n    return [x for x in xs], C\n",
        "def f(xs):\n    return [x for x in xs], f'{x=}'\n",
        "def f(xs):\n    return [x for x in xs], locals()\n",
    ],
)
def test_rel_leaves_comprehension_variables_that_are_not_only_that(source):
    check("REL_R", source, None)


def test_rel_renames_of_comprehension_variables_do_not_reach_the_line_being_typed():
    prompt = "def f(xs):\n    ys = [x for x in xs]\n    return x"
    for m in generate_mutants(prompt, schemes=["REL_R"], k=10).mutants:
        assert m.text.endswith("    return x"), m.text
    assert any("for LocalVar1 in xs]" in m.text for m in generate_mutants(prompt, schemes=["REL_R"]).mutants)


def test_rel_c_uses_the_function_name():
    check(
        "REL_C",
        "def compare(a, b):\n    res = a > b\n    return res\n",
        "def compare(a, b):\n    compare_res = a > b\n    return compare_res\n",
    )


@pytest.mark.parametrize(
    "source",
    [
        # the function can observe its own variable names
        "def f():\n    x = 1\n    return locals()\n",
        "def f():\n    x = 1\n    return eval('x')\n",
        "def f():\n    x = 1\n    exec('print(x)')\n",
        "def f():\n    x = 1\n    return vars()\n",
        # global: not a local at all
        "def f():\n    global x\n    x = 1\n",
        # f-string debug field prints the name
        "def f():\n    x = 1\n    return f'{x=}'\n",
        # bound by import / def / class: renaming would change a module or __name__
        "def f():\n    import os\n    return os\n",
        "def f():\n    def helper():\n        pass\n    return helper\n",
        # a nested scope assigns it (nonlocal), or shadows it
        "def f():\n    x = 1\n    def g():\n        nonlocal x\n        x = 2\n    return g\n",
        "def f():\n    x = 1\n    return [x for x in range(3)]\n",
        # mangled private names (symtable reports them mangled, as _A__x, inside a class)
        "def f():\n    __x = 1\n    return __x\n",
        "class A:\n    def f(self):\n        __x = 1\n        return __x\n",
    ],
)
def test_rel_leaves_unsafe_locals_alone(source):
    check("REL_R", source, None)


def test_rel_renames_nonlocal_readers_and_fstring_fields():
    check(
        "REL_R",
        """
        def f(a):
            x = a
            def g():
                nonlocal x
                return f"{x!r:>{x}}"
            return g
        """,
        """
        def f(a):
            LocalVar1 = a
            def g():
                nonlocal LocalVar1
                return f"{LocalVar1!r:>{LocalVar1}}"
            return g
        """,
    )


def test_fresh_names_never_collide_with_the_document():
    # LocalVar1 occurs (in a string, even): the next free name is taken
    check(
        "REL_R",
        """
        LocalVar1 = "LocalVar2"
        def f():
            y = 1
            return y
        """,
        """
        LocalVar1 = "LocalVar2"
        def f():
            LocalVar3 = 1
            return LocalVar3
        """,
    )
    check(
        "REP_C",
        "def add(*a):\n    return a, Add_Param_a\n",
        "def add(*Add_Param_a2):\n    return Add_Param_a2, Add_Param_a\n",
    )


# ---------------------------------------------------------------- IRR


def test_irr_rewrites_evident_int_arithmetic():
    check(
        "IRR",
        """
        def f(xs):
            count = 0
            n = len(xs)
            for i in range(n):
                count += 1
                count = count - i
            return count + 1, 2 * n
        """,
        """
        def f(xs):
            count = 0
            n = len(xs)
            for i in range(n):
                count = count + 1
                count -= i
            return 1 + count, n * 2
        """,
    )


@pytest.mark.parametrize(
    "source",
    [
        # a += b vs a = a + b: differ for a list aliased elsewhere
        "def f(a, b):\n    a += b\n    return a\n",
        "def f(b):\n    a = [1]\n    alias = a\n    a += b\n    return alias\n",
        # x + 1 vs 1 + x: __add__ vs __radd__ for a user class
        "def f(x):\n    return x + 1\n",
        # both operands calls: swapping would change the order of their side effects
        "def f(a, b):\n    return len(a) + len(b)\n",
        # the local is not always an int
        "def f(c):\n    n = 0\n    if c:\n        n = 'x'\n    n += 1\n    return n\n",
        # len is rebound in the document
        "len = str\ndef f(a):\n    return len(a) + 1\n",
        # ** may give an int, a float or a complex: no evident type
        "def f(e):\n    n = 2 ** e\n    n += 1\n    return n\n",
    ],
)
def test_irr_leaves_unproven_arithmetic_alone(source):
    check("IRR", source, None)


# ---------------------------------------------------------------- RTF


def test_rtf_negates_twice_in_test_positions_only():
    check(
        "RTF",
        """
        def add(a, b, ignore):
            if ignore:
                return a
            elif a or b:
                pass
            while a and b:
                break
            assert ignore, "msg"
            x = a if b else ignore
            flag = a and b
            return [v for v in a if v], flag, x
        """,
        """
        def add(a, b, ignore):
            if not not ignore:
                return a
            elif not not (a or b):
                pass
            while not not (a and b):
                break
            assert not not ignore, "msg"
            x = a if not not b else ignore
            flag = a and b
            return [v for v in a if not not v], flag, x
        """,
    )


def test_rtf_adds_the_space_a_keyword_needs():
    check(
        "RTF",
        "def f(a, b):\n    while(a):\n        a = 0\n    assert(b)\n    if(a):\n"
        "        pass\n    return 1 if(a)else 2\n",
        "def f(a, b):\n    while not not (a):\n        a = 0\n    assert not not (b)\n    if not not (a):\n"
        "        pass\n    return 1 if not not (a)else 2\n",
    )
    out = generate_mutants("def f(a):\n    while(a):\n        a = 0\n    return ", schemes=["RTF"], k=4)
    assert {m.text.splitlines()[1] for m in out.mutants} == {"    while not not (a):", "    while bool((a)):"}


def test_rtf_never_uses_the_slides_unsafe_form():
    out = generate_mutants(
        "def add(a, b, ignore):\n    if ignore:\n        return a\n", schemes=["RTF"], k=10
    )
    assert out.mutants
    texts = [m.text for m in out.mutants]
    assert all("==" not in t for t in texts)
    assert any("if not not ignore:" in t for t in texts) and any("if bool(ignore):" in t for t in texts)


def test_rtf_does_not_use_bool_when_it_is_rebound():
    out = generate_mutants("bool = int\ndef f(a):\n    if a:\n        return 1\n", schemes=["RTF"], k=10)
    assert out.mutants and all("bool(a)" not in m.text for m in out.mutants)


# ---------------------------------------------------------------- GRA


def test_gra_inserts_dead_code_after_the_docstring():
    check(
        "GRA_R",
        '''
        def add(a, b):
            """Add."""
            res = a + b
            return res
        ''',
        '''
        def add(a, b):
            """Add."""
            if False: TempVar = a
            res = a + b
            return res
        ''',
    )
    check(
        "GRA_C",
        "def add(a, b):\n    return a + b\n",
        "def add(a, b):\n    if False: Add_TempVar = a\n    return a + b\n",
    )


def test_gra_never_goes_before_a_future_import():
    src = '"""Doc."""\nfrom __future__ import annotations\nx = 1\n'
    got = mutate_whole(src, "GRA_R").text
    assert got == '"""Doc."""\nfrom __future__ import annotations\nif False: TempVar = 0\nx = 1\n'
    compile(got, "<m>", "exec")


# ---------------------------------------------------------------- INI


def test_ini_prints_only_values_whose_str_runs_no_user_code():
    check(
        "INI",
        """
        def f(obj, xs):
            label = "items"
            n = len(xs)
            other = obj
            ratio = 0.5
            return label, n, other, ratio
        """,
        """
        def f(obj, xs):
            print('f')
            label = "items"
            print(label)
            n = len(xs)
            print(n)
            other = obj
            ratio = 0.5
            print(ratio)
            return label, n, other, ratio
        """,
    )


def test_ini_prints_the_target_of_a_small_range_loop_first_in_its_body():
    check(
        "INI",
        """
        def f(xs, n, /):
            out = []
            for i in range(3):
                out.append(i)
            for j in range(10, -2, -1):
                out.append(j)
            for k in range(n):
                out.append(k)
            for m in xs:
                out.append(m)
            for p in range(1 << 70):
                break
            return out
        """,
        """
        def f(xs, n, /):
            print('f')
            out = []
            for i in range(3):
                print(i)
                out.append(i)
            for j in range(10, -2, -1):
                print(j)
                out.append(j)
            for k in range(n):
                out.append(k)
            for m in xs:
                out.append(m)
            for p in range(1 << 70):
                break
            return out
        """,
    )
    # refused: a bound of unknown size, a huge literal, range rebound, print rebound, async for
    # (the function's name is printed at its start all the same, except where print is rebound)
    for source in (
        "def f(n):\n    for i in range(0, n):\n        n -= 1\n",
        "def f():\n    for i in range(10**30):\n        break\n",
        "def f():\n    for i in range(1000000000000000000000):\n        break\n",
        "range = lambda n: [object()]\ndef f():\n    for i in range(3):\n        pass\n",
        "async def f(xs):\n    async for i in xs:\n        pass\n",
    ):
        check("INI", source, source.replace(":\n", ":\n    print('f')\n", 1))
    check("INI", "print = len\ndef f():\n    for i in range(3):\n        pass\n", None)
    # at a cursor: not in the loop being typed (only its stub so far)
    assert not generate_mutants("def f():\n    for i in range(3):\n        ", schemes=["INI"]).mutants


def test_ini_never_prints_a_computed_int():
    # str() of an int over 4,300 digits raises ValueError: printing it would change behaviour
    source = "def f(n):\n    big = 1 << n\n    size = len('ab') * n\n    return big, size\n"
    check("INI", source, source.replace(":\n", ":\n    print('f')\n", 1))


def test_ini_is_off_when_print_is_rebound_and_in_class_bodies():
    check("INI", "print = len\ndef f():\n    n = 1\n    return n\n", None)
    check("INI", "class A:\n    n = 1\n", None)


# ---------------------------------------------------------------- the whole-file API


def test_mutate_whole_rejects_a_file_that_does_not_parse():
    with pytest.raises(InputError, match="does not parse"):
        mutate_whole("def f(:\n", "RTF")


def test_unknown_scheme():
    with pytest.raises(UnknownSchemeError):
        mutate_whole("x = 1\n", "NOPE")
    with pytest.raises(UnknownSchemeError):
        generate_mutants("def f():\n    ", schemes=["NOPE"])


def test_whole_mutants_behave_like_the_original():
    src = textwrap.dedent(
        """
        def stats(xs, /, *extra):
            # their mean x solves count*x = total
            count = 0
            total = 0
            n = len(xs)
            for i in range(n):
                count += 1
                total = total + xs[i]
            if count and total > 0:
                return count, total, extra
            if n == 0:
                return None
            return count + 1, -total, extra
        """
    )

    def run(code):
        ns = {}
        exec(compile(code, "<m>", "exec"), ns)
        return [ns["stats"](xs, 7) for xs in ([], [1, 2], [-1.5, 0.5], [10**30, 1])]

    want = run(src)
    for scheme in SCHEMES:
        m = mutate_whole(src, scheme)
        assert m.text != src, scheme
        assert run(m.text) == want, scheme


@pytest.mark.parametrize(
    "source,rebound",
    [
        ("print(x)\nlen(y)\n# to print the len of it\nobj.print = 1\n", set()),
        ("print = log\n", {"print"}),
        ("def len(x):\n    pass\n", {"len"}),
        ("from m import print\n", {"print"}),
        ("import x as bool\n", {"bool"}),
        ("for range in xs:\n    pass\n", {"range"}),
        ("map(len, xs)\n", {"len"}),
        # a call inside a call, after a comma or '*' is not a binding; def and class are
        ("f(len(xs), *range(3))\nrange(len(xs))\nprint(bool (1))\n", set()),
        ("class len (Base):\n    pass\n", {"len"}),
        ("def f(a, len):\n    pass\n", {"len"}),
        ("from m import *\n", {"len", "print", "bool", "range"}),
    ],
)
def test_rebinding_of_the_builtins_schemes_rely_on(source, rebound):
    from cctest.mutators._analysis import shadowed_builtins

    assert set(shadowed_builtins(source)) == rebound


# ---------------------------------------------------------------- IRR beyond ints, INI's trace print


def test_irr_rewrites_str_tuple_and_float_locals():
    check(
        "IRR",
        """
        def f(xs, /):
            label = 'n='
            label += f'{len(xs)}'
            sep = ', '.join(xs)
            sep = sep + '!'
            pair = ()
            pair += (1,)
            ratio = 0.5
            ratio -= 1
            scaled = ratio * 2.0
            shifted = 1.5 + len(xs)
            half = 1 / 2
            half += 1
            return label, sep, pair, ratio, scaled, shifted, half
        """,
        """
        def f(xs, /):
            label = 'n='
            label = label + f'{len(xs)}'
            sep = ', '.join(xs)
            sep += '!'
            pair = ()
            pair = pair + (1,)
            ratio = 0.5
            ratio = ratio - 1
            scaled = 2.0 * ratio
            shifted = len(xs) + 1.5
            half = 1 / 2
            half = half + 1
            return label, sep, pair, ratio, scaled, shifted, half
        """,
    )


@pytest.mark.parametrize(
    "source",
    [
        # a list: += extends it in place, = + makes a new one (an alias sees the difference)
        "def f(b):\n    a = []\n    alias = a\n    a += b\n    a = a + b\n    return alias\n",
        # a name bound to a list anywhere is not evidently a str
        "def f(c, b):\n    s = ''\n    if c:\n        s = []\n    s += b\n    return s\n",
        # unknown type: a parameter, a call of unknown result, str() (rebindable)
        "def f(s, t):\n    s += t\n    u = g()\n    u += t\n    return s, u\n",
        "def f(t):\n    v = str(t)\n    v += 'x'\n    return v\n",
        # concatenation does not commute: no swap for str or tuple
        "def f():\n    s = 'a'\n    return s + 'b', 'b' + s, (1,) + ()\n",
        # a str with something of unknown type added is no longer evidently a str
        "def f(t):\n    s = 'a'\n    s += t\n    s += 'b'\n    return s\n",
        # ** and / on floats are left alone (not in the rewritten operators)
        "def f():\n    r = 2.0\n    r **= 2\n    r /= 3\n    return r\n",
        # a float literal swapped only against a number: x of unknown type stays
        "def f(x):\n    return x * 2.0, 0.5 + x\n",
    ],
)
def test_irr_leaves_other_types_alone(source):
    check("IRR", source, None)


def test_ini_prints_a_function_name_at_its_start_where_nothing_else_prints():
    # at a cursor: only where no computed value can be printed, after the docstring
    prompt = 'class C:\n    def area(self, other):\n        """Doc."""\n        self.w = other\n        '
    ini = [m.text for m in generate_mutants(prompt, schemes=["INI"]).mutants]
    assert ini == [prompt.replace('"""Doc."""\n', '"""Doc."""\n        print(\'area\')\n')]
    # a function with a printable local gets only that print
    prompt = "def f(xs):\n    n = len(xs)\n    "
    assert [m.text for m in generate_mutants(prompt, schemes=["INI"]).mutants] == [
        "def f(xs):\n    n = len(xs)\n    print(n)\n    "
    ]
    # an empty body: before the line being typed, which stays as typed
    got = generate_mutants("def f(a):\n    ret", schemes=["INI"]).mutants
    assert [m.text for m in got] == ["def f(a):\n    print('f')\n    ret"]
    # a body that is only its docstring: after it
    got = generate_mutants('def f(a):\n    """Doc."""\n', schemes=["INI"]).mutants
    assert [m.text for m in got] == ['def f(a):\n    """Doc."""\n    print(\'f\')\n']
    # whole file: at every function's start too, never before a docstring
    check(
        "INI",
        'def f(a):\n    """Doc."""\n    return a\n',
        'def f(a):\n    """Doc."""\n    print(\'f\')\n    return a\n',
    )


@pytest.mark.parametrize(
    "prompt",
    [
        # the line being typed starts the docstring: a print before it would take its place
        'def f(a):\n    """Doc',
        "def f(a):\n    'Doc",
        'def f(a):\n    r"""Doc',
        'def f(a):\n    # note\n    """Doc',
        # print rebound in the document
        "print = len\ndef f(a):\n    ",
        # the stub's indentation is a guess that the line being typed does not confirm
        "def f(a,\n      b):\n    # a comment being typed",
        "def f(a):\n\tret",
        "def f(a):\n  ret",
        # a class body is no function
        "class C:\n    ",
        # a name that might not encode on stdout
        "def größe(a):\n    ",
    ],
)
def test_ini_trace_print_refusals(prompt):
    assert not generate_mutants(prompt, schemes=["INI"]).mutants


def test_ini_prints_bools_and_floats_after_they_are_computed():
    check(
        "INI",
        """
        def f(xs, d, k):
            found = k in d
            missing = d is None
            neg = not xs
            half = len(xs) / 2
            scaled = half * 3
            return found, missing, neg, scaled
        """,
        """
        def f(xs, d, k):
            print('f')
            found = k in d
            print(found)
            missing = d is None
            print(missing)
            neg = not xs
            print(neg)
            half = len(xs) / 2
            print(half)
            scaled = half * 3
            print(scaled)
            return found, missing, neg, scaled
        """,
    )


@pytest.mark.parametrize(
    "value",
    [
        "k == 1",  # __eq__ may return any object
        "2 ** len(xs)",  # a computed int may be too long to print
        "(k, xs)",  # str() of a tuple calls its items' __repr__
        "', '.join(xs)",  # a str from data may not encode on stdout (lone surrogates)
        "k * 2.0",  # k of unknown type: k.__mul__ decides
        "k < 1",  # ordering may return any object
    ],
)
def test_ini_leaves_values_that_may_not_print_alone(value):
    source = f"def f(xs, k):\n    v = {value}\n    return v\n"
    check("INI", source, source.replace(":\n", ":\n    print('f')\n", 1))


def test_irr_flips_a_conditional_expression_whatever_its_types():
    check(
        "IRR",
        """
        def f(a, b, c, d):
            x = a if c else b
            y = a if c and d else (lambda: 1)
            z = a if c else b if d else c
            return x, y, z, [v if v > 0 else -v for v in a]
        """,
        """
        def f(a, b, c, d):
            x = b if not c else a
            y = (lambda: 1) if not (c and d) else a
            z = (c if not d else b) if not c else a
            return x, y, z, [-v if not (v > 0) else v for v in a]
        """,
    )
