"""The selection logic on its own (``cctest.mutators.selection``): variety before quantity,
sparing a suffix, fitting in mutants made apart, nearest the cursor. Variants and mutants are
built by hand, so nothing here parses code."""

from __future__ import annotations

from cctest.mutators.base import Variant
from cctest.mutators.registry import SCHEMES
from cctest.mutators.selection import add_for_variety, for_variety, nearest_the_cursor, sparing, used_names
from cctest.types import Mutant


def _rename(scheme: str, *names: str) -> Variant:
    return Variant(scheme, (0, names))


def test_every_family_before_a_second_scheme_of_one() -> None:
    per = [
        [_rename("REP_R", "a"), _rename("REP_R", "b")],
        [_rename("REP_C", "a")],
        [Variant("RTF", ("if", "not"))],
    ]
    order = for_variety(["REP_R", "REP_C", "RTF"], per)
    assert [v.scheme for v in order] == ["REP_R", "RTF", "REP_C", "REP_R"]


def test_a_look_alike_waits_until_every_distinct_site_is_used() -> None:
    # RTF's second form at the site it already rewrote, and a rename of all names overlapping one
    per = [
        [Variant("RTF", ("s1", "not")), Variant("RTF", ("s1", "bool")), Variant("RTF", ("s2", "not"))],
        [_rename("REL_R", "x"), _rename("REL_R", "x", "y"), _rename("REL_R", "y")],
    ]
    order = for_variety(["RTF", "REL_R"], per)
    assert order[:4] == [per[0][0], per[1][0], per[0][2], per[1][2]]
    assert set(order[4:]) == {per[0][1], per[1][1]}


def test_a_rename_of_a_spared_name_keeps_only_its_familys_first_place() -> None:
    per = [[_rename("REP_R", "s"), _rename("REP_R", "t")], [Variant("GRA_R", ("g",))]]
    order = for_variety(["REP_R", "GRA_R"], per, frozenset({"s", "t"}))
    assert order == [per[0][0], per[1][0], per[0][1]]


def test_sparing_is_a_stable_partition() -> None:
    variants = [_rename("REL_R", "a"), _rename("REL_R", "b"), _rename("REL_R", "c")]
    assert sparing(SCHEMES["REL_R"], variants, frozenset({"a"})) == [variants[1], variants[2], variants[0]]
    assert sparing(SCHEMES["REL_R"], variants, frozenset()) is variants
    rtf = [Variant("RTF", ("s", "not"))]
    assert sparing(SCHEMES["RTF"], rtf, frozenset({"a"})) is rtf  # renames nothing


def test_a_mutant_made_apart_takes_a_free_place_or_the_last_of_the_most_common_scheme() -> None:
    kept = [Mutant("GRA_R", "1"), Mutant("GRA_R", "2"), Mutant("REP_R", "3")]
    add_for_variety(kept, [Mutant("DOC", "4")], 4)
    assert [m.text for m in kept] == ["1", "2", "3", "4"]
    kept = [Mutant("GRA_R", "1"), Mutant("GRA_R", "2"), Mutant("REP_R", "3")]
    add_for_variety(kept, [Mutant("DOC", "4"), Mutant("DOC", "5")], 3)
    assert [m.text for m in kept] == ["1", "4", "3"]
    add_for_variety(kept, [Mutant("DOC", "6")], 3)  # DOC's family is there already
    assert [m.text for m in kept] == ["1", "4", "3"]


def test_nearest_the_cursor_keeps_each_family_then_the_nearest() -> None:
    p = "a = 1\nb = a\nc = b\n"
    ms = [
        Mutant("REP_R", p.replace("a", "x")),
        Mutant("REP_C", p.replace("c", "z")),
        Mutant("GRA_R", p.replace("b = a", "b = (a)")),
        Mutant("GRA_C", p + "if False: T = 0\n"),
    ]
    assert [m.scheme for m in nearest_the_cursor(p, ms, 2)] == ["REP_C", "GRA_C"]
    assert [m.scheme for m in nearest_the_cursor(p, ms, 3)] == ["REP_C", "GRA_R", "GRA_C"]
    assert nearest_the_cursor(p, ms, 4) == ms
    # a rename of a name the spared suffix uses counts as farthest
    renamed = [Mutant("REP_R", p.replace("c", "z"), renames={"z": "c"}), Mutant("REP_C", p.replace("a", "y"))]
    assert [m.scheme for m in nearest_the_cursor(p, renamed, 1, spare="c + 1")] == ["REP_C"]


def test_used_names_are_the_variables_a_rename_would_touch() -> None:
    assert used_names("obj.attr(k=v)  # z\n'q'") == frozenset({"obj", "v"})
