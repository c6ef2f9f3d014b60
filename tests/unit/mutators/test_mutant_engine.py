"""End to end through the engine with the deterministic rule backend: renamed mutants' completions
come back de-mutated and equal to the original's; a pruned transform equals a full one."""

from __future__ import annotations

from cctest.backends.rules import RuleBackend
from cctest.engine import Engine
from cctest.mutators import SCHEMES, analyse
from cctest.mutators._analysis import NamePool, shadowed_builtins


async def test_renamed_mutants_complete_to_the_original_after_demutation():
    prompt = "def add(a, b, /, *rest):\n    res = a + b\n    "
    result = await Engine(RuleBackend(), mutants=10, schemes=()).run(prompt)
    pairs = zip(result.mutants, result.completions[1:], strict=True)
    renamed = [(m, c) for m, c in pairs if m.scheme.startswith("REP")]
    assert len(renamed) >= 2  # the backend's completion uses the parameters, so REP shows in it
    original = result.completions[0].text
    assert original == "return a + b + rest\n"
    for m, c in renamed:
        assert c.raw != c.text  # the model saw and used the invented name...
        assert any(new in c.raw for new in m.renames)
        assert c.text == original  # ...and de-mutation maps it back
    assert result.completion == original
    assert not result.original_is_outlier


async def test_a_completion_using_a_dead_variable_is_never_chosen():
    prompt = "def add(a, b):\n    return "
    result = await Engine(RuleBackend(), mutants=10, schemes=("GRA_R",)).run(prompt)
    assert result.mutants and all(m.introduced for m in result.mutants)
    assert result.chosen == 0 or not any(n in result.completion for m in result.mutants for n in m.introduced)


def test_pruned_transforms_equal_full_transforms():
    src = (
        "def f(a, /, *rest):\n"
        "    '''doc'''\n"
        "    n = 0\n"
        "    for i in range(len(rest)):\n"
        "        n += 1\n"
        "        if n > 2 and a:\n"
        "            total = [x for x in rest if x]\n"
        "            n = n + i\n"
        "    def g():\n"
        "        return a + n\n"
        "    return (n * 2) if a else g\n"
    )
    a = analyse(src, shadowed_builtins(src))
    checked = 0
    for scheme in SCHEMES.values():
        for v in scheme.variants(a):
            pruned = scheme.apply(a, [v], NamePool(src))
            full = scheme.apply(a, [v], NamePool(src), full=True)
            assert pruned is not None and full is not None
            assert pruned.code == full.code, (scheme.name, v)
            assert pruned.code != src
            compile(pruned.code, "<m>", "exec")
            checked += 1
    assert checked > 30


def test_renames_known_to_score_zero_do_score_zero_with_pycode_similar():
    # the engine skips pycode-similar for renames of names it abstracts away; check the claim
    import difflib as target
    import inspect
    import textwrap

    from cctest.mutators._distance import distances

    sources = [
        textwrap.dedent(inspect.getsource(fn))
        for fn in (
            target.SequenceMatcher.find_longest_match,
            target.unified_diff,
            target._mdiff,
            target.get_close_matches,
        )
    ]
    sources.append(
        "def f(xs, /):\n    total = 0\n    for x in xs:\n        try:\n            total += x\n"
        "        except TypeError as err:\n            print(err)\n    return total\n"
    )
    same = other = 0
    for src in sources:
        a = analyse(src, shadowed_builtins(src))
        for name in ("REP_R", "REL_R"):
            for v in SCHEMES[name].variants(a):
                applied = SCHEMES[name].apply(a, [v], NamePool(src))
                assert applied is not None
                d = distances(src, [applied.code])[0]
                if applied.same_structure:
                    assert d == 0.0, (name, v)
                    same += 1
                else:
                    other += 1
    assert same > 20 and other >= 1  # 'err' (except ... as) is kept by pycode-similar


def test_gra_r_and_gra_c_at_one_site_score_alike_with_pycode_similar():
    from cctest.mutators._distance import distances

    src = "def add(a, b):\n    '''Add.'''\n    res = a + b\n    if res:\n        return res\n    return 0\n"
    a = analyse(src, shadowed_builtins(src))
    pairs = 0
    for vr, vc in zip(SCHEMES["GRA_R"].variants(a), SCHEMES["GRA_C"].variants(a), strict=True):
        r = SCHEMES["GRA_R"].apply(a, [vr], NamePool(src))
        c = SCHEMES["GRA_C"].apply(a, [vc], NamePool(src))
        assert r is not None and c is not None and r.code != c.code
        assert r.structure_key == c.structure_key
        assert distances(src, [r.code]) == distances(src, [c.code])
        pairs += 1
    assert pairs >= 4


def test_splicing_inside_match_cases_keeps_the_indentation():
    src = (
        "def f(shape):\n"
        "    match shape:\n"
        "        case {'r': r}:\n"
        "            n = 1\n"
        "            if r:\n"
        "                return n + 1\n"
        "        case _:\n"
        "            return 0\n"
    )
    a = analyse(src, shadowed_builtins(src))
    for scheme in SCHEMES.values():
        for v in scheme.variants(a):
            spliced = scheme.apply(a, [v], NamePool(src))
            full = scheme.apply(a, [v], NamePool(src), full=True)
            assert spliced is not None and full is not None and spliced.code == full.code, scheme.name
            compile(spliced.code, "<m>", "exec")


def test_splicing_equals_transforming_on_real_windows():
    import random
    import sysconfig
    from pathlib import Path

    from cctest.context import find_window

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    rng = random.Random(7)
    checked = 0
    for name in ("argparse.py", "difflib.py", "asyncio/tasks.py", "enum.py"):
        text = (stdlib / name).read_text()
        for _ in range(6):
            prompt = text[: rng.randrange(len(text))]
            w = find_window(prompt)
            if w is None:
                continue
            a = analyse(w.source, shadowed_builtins(prompt), wrapped=bool(w.wrapper))
            for scheme in SCHEMES.values():
                for v in scheme.variants(a)[:3]:
                    spliced = scheme.apply(a, [v], NamePool(prompt))
                    full = scheme.apply(a, [v], NamePool(prompt), full=True)
                    assert spliced is not None and full is not None
                    assert spliced.code == full.code, (name, scheme.name, v)
                    checked += 1
    assert checked > 100


def test_variety_before_quantity_no_scheme_twice_at_one_site_while_others_can_fill_k():
    from cctest.mutators import generate_mutants

    prompt = "def f(a, /):\n    x = 1\n    if a:\n        x = 2\n    y = x\n    "
    # one condition: RTF's second form of it waits while GRA has distinct sites left
    out = generate_mutants(prompt, schemes=("RTF", "GRA_R"), k=3)
    assert [m.scheme for m in out.mutants].count("RTF") == 1
    assert len(out.mutants) == 3
    # quantity still comes when variety runs out: both forms of the one condition
    rtf = generate_mutants(prompt, schemes=("RTF",), k=10).mutants
    assert sorted("bool(" in m.text for m in rtf) == [False, True]
    # the first k mutants span the families before any family's second scheme (k = 4: 4 families)
    four = generate_mutants(prompt, schemes=("REL_R", "REL_C", "GRA_R", "GRA_C", "RTF", "INI"), k=4)
    assert len({m.scheme.split("_")[0] for m in four.mutants}) == 4


def test_a_rename_of_all_locals_waits_for_the_single_renames():
    from cctest.mutators import generate_mutants

    prompt = "def f(a, /):\n    x = a\n    y = x\n    "
    got = [sorted(m.renames.values()) for m in generate_mutants(prompt, schemes=("REL_R",), k=3).mutants]
    assert got[:2] in (
        [["y"], ["x"]],
        [["x"], ["y"]],
    )  # distinct sites first
    assert got[2] == ["x", "y"]
