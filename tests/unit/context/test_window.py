"""Half-typed code: the window near the cursor, and mutants of prompts that do not parse."""

from __future__ import annotations

import ast

import pytest

from cctest.context import find_window
from cctest.demutate import demutate
from cctest.mutators import generate_mutants


def parses(src: str) -> bool:
    try:
        ast.parse(src)
    except SyntaxError:
        return False
    return True


PROMPTS = {
    "unfinished line": "import os\n\ndef add(a, b, /):\n    res = a + b\n    total = res + ",
    "open if block": "def f(a, /):\n    n = len(a)\n    if n > 2:\n",
    "open bracket": "def f(a, /):\n    x = 1\n    y = g(a,\n          x,\n",
    "decorated method": (
        "class A:\n    @property\n    @other(1)\n"
        "    def size(self, /, *rest):\n        n = len(rest)\n        return n"
    ),
    "async": "async def fetch(url, /):\n    data = await get(url)\n    if data:\n        return ",
    "tabs": "def f(a, /):\n\tx = a\n\tif x:\n\t\treturn x +",
    "unicode identifiers": "def größe(wert, /):\n    ergebnis = wert * 2\n    return ergebnis + ",
    "nested def": "def outer(a, /):\n    k = 1\n    def inner(b, /):\n        c = b + k\n        return c",
    "open string": 'def f(a, /):\n    s = 1\n    return """abc\n  def',
    "module level": "import os\nx = 1\nif x:\n    y = 2\nz = ",
}


@pytest.mark.parametrize("name", PROMPTS)
def test_window_parts_add_up_and_parse(name):
    prompt = PROMPTS[name]
    w = find_window(prompt)
    assert w is not None
    assert w.head + w.body + w.tail == prompt
    assert parses(w.source)


@pytest.mark.parametrize("name", PROMPTS)
def test_half_typed_prompts_get_mutants_that_only_differ_by_the_mutation(name):
    prompt = PROMPTS[name]
    out = generate_mutants(prompt, k=10)
    assert out.mutants, name
    w = find_window(prompt)
    for m in out.mutants:
        assert m.text != prompt
        assert m.text.startswith(w.head)
        # the unfinished line comes back character for character once renames are mapped back
        last = prompt[prompt.rfind("\n") + 1 :]
        assert demutate(m.text[m.text.rfind("\n") + 1 :], m.renames) == last


def test_the_unfinished_tail_is_renamed_with_the_function():
    prompt = "def add(a, *b):\n    res = a + b\n    return res + b + obj.b + f(b=1)"
    out = generate_mutants(prompt, schemes=["REP_R"], k=10)
    by_name = {tuple(m.renames.items()): m.text for m in out.mutants}
    text = by_name[(("Param1", "b"),)]
    assert text.endswith("    return res + Param1 + obj.b + f(b=1)")
    assert text.startswith("def add(a, *Param1):\n    res = a + Param1\n")


def test_the_tail_is_not_renamed_outside_the_function():
    # the cursor is after a finished function: its locals mean nothing in the new statement
    prompt = "def f():\n    res = 1\n    return res\n\nres = "
    out = generate_mutants(prompt, schemes=["REL_R"], k=10)
    assert out.mutants
    for m in out.mutants:
        assert m.text.endswith("\n\nres = ")


def test_stub_is_not_in_the_mutant():
    prompt = "def f(a, /):\n    if a:\n"
    for m in generate_mutants(prompt, k=10).mutants:
        assert "pass" not in m.text and "cctest" not in m.text


@pytest.mark.parametrize(
    "prompt", ["", "   ", "# only a comment\n# and another\n", "\n\n\n", "x = (", "\x00", "def (:"]
)
def test_nothing_to_analyse_is_not_an_error(prompt):
    out = generate_mutants(prompt, k=10)
    assert isinstance(out.mutants, list)


def test_deterministic_and_seeded():
    prompt = PROMPTS["unfinished line"]
    a = generate_mutants(prompt, k=5, seed=0)
    b = generate_mutants(prompt, k=5, seed=0)
    assert [m.text for m in a.mutants] == [m.text for m in b.mutants]
    c = generate_mutants(prompt, k=5, seed=7)
    assert len(c.mutants) == len(a.mutants)


def test_k_and_round_robin_across_schemes():
    prompt = "def add(a, *b):\n    n = 0\n    res = a + len(b)\n    if res:\n        n += 1\n    return "
    out = generate_mutants(prompt, k=9)
    assert len(out.mutants) == 9
    assert len({m.scheme for m in out.mutants}) == 9  # one per scheme before any scheme twice
    assert len(generate_mutants(prompt, k=3).mutants) == 3
    assert generate_mutants(prompt, k=0).mutants == []


def test_distance_bound_splits_kept_and_dropped():
    prompt = "def f(a, /):\n    if a:\n        return 1\n    "
    out = generate_mutants(prompt, k=10, max_distance=0.0)
    assert all(m.structural_distance == 0.0 for m in out.mutants)
    assert out.dropped and all(m.structural_distance > 0.0 for m in out.dropped)
    loose = generate_mutants(prompt, k=10, max_distance=1.0)
    assert len(loose.mutants) >= len(out.mutants) and not loose.dropped


def test_a_keystroke_reuses_the_window_and_renames_the_new_tail():
    base = "def add(a, *b):\n    res = a + b\n    return "
    first = generate_mutants(base + "r", schemes=["REP_R"], k=4)
    second = generate_mutants(base + "res + b", schemes=["REP_R"], k=4)
    assert [m.renames for m in first.mutants] == [m.renames for m in second.mutants]
    m = next(m for m in second.mutants if m.renames == {"Param1": "b"})
    assert m.text.endswith("return res + Param1")


def test_a_fresh_name_typed_in_the_tail_is_not_reused():
    base = "def add(a, *b):\n    res = a + b\n    return "
    before = generate_mutants(base + "x", k=10)
    assert any("Param1" in m.renames for m in before.mutants)
    out = generate_mutants(base + "Param1", k=10)
    assert out.mutants and all("Param1" not in m.renames for m in out.mutants)


def test_results_depend_on_the_prompt_not_on_the_cache():
    from cctest.cache import clear_caches

    body = "def add(a, *b):\n    res = a + b\n    return "
    with_name = "Param1 = 0\n" + body
    generate_mutants(with_name, schemes=["REP_R"], k=4)  # Param1 taken: Param2 is used
    warm = generate_mutants("x = 0\n" + body, schemes=["REP_R"], k=4)
    clear_caches()
    cold = generate_mutants("x = 0\n" + body, schemes=["REP_R"], k=4)
    assert [m.text for m in warm.mutants] == [m.text for m in cold.mutants]
    assert any("Param1" in m.renames for m in cold.mutants)
