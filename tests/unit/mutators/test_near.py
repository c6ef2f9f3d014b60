"""Mutants changed near the cursor (``generate_mutants(near=True)``, the engine's ``near_sites``):
a batched local model reads each row from its first change on, so GRA's dead code goes nearest the
cursor, REL renames the local whose first occurrence is nearest it, and, with ``spare``, a rename
that cannot spare the code after the cursor is kept only as its family's first. The count of
mutants and the families they span stay what they were."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from cctest.mutators import SCHEMES, generate_mutants, used_names
from cctest.types import Mutant

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from mutant_supply import stdlib_positions  # noqa: E402

# a parameter (renamed at the def line) and a local first assigned just above the cursor
LATE_LOCAL = (
    "def mean_gap(points, scale):\n"
    "    count = len(points)\n"
    "    gaps = [b - a for a, b in zip(points, points[1:])]\n"
    "    last = gaps[-1]\n"
    "    "
)
# every parameter is used after the cursor; the locals out and v are not
SCALE = (
    "def scale(values, factor):\n"
    "    out = []\n"
    "    for v in values:\n"
    "        out.append(v * factor)\n"
    "    total = sum(out)\n"
    "    "
)
SCALE_SUFFIX = "return total / factor, values\n"


def _reach(prompt: str, m: Mutant) -> int:
    """Characters from the mutant's first change to the cursor."""
    return len(prompt) - len(os.path.commonprefix([prompt, m.text]))


def _first(mutants: list[Mutant], scheme: str) -> Mutant:
    return next(m for m in mutants if m.scheme == scheme)


def _touches(m: Mutant, text: str) -> bool:
    return bool(used_names(text) & set(m.renames.values()))


def _families(mutants: list[Mutant]) -> set[str]:
    return {SCHEMES[m.scheme].family for m in mutants}


def test_dead_code_and_local_renames_go_nearest_the_cursor() -> None:
    near = generate_mutants(LATE_LOCAL, k=10).mutants
    far = generate_mutants(LATE_LOCAL, k=10, near=False).mutants
    # the same schemes in the same order: only the sites differ
    assert [m.scheme for m in near] == [m.scheme for m in far] and len(near) == 10
    above_last = "    if False: TempVar = points\n    last = gaps[-1]\n"
    assert above_last in _first(near, "GRA_R").text
    assert "def mean_gap(points, scale):\n    if False: TempVar = points\n" in _first(far, "GRA_R").text
    assert _reach(LATE_LOCAL, _first(near, "GRA_R")) == len("last = gaps[-1]\n    ")  # after the indent
    # the local first assigned just above the cursor is renamed first; the parameter's family keeps
    # its mutant, changed at the def line
    assert _first(near, "REL_R").renames == {"LocalVar1": "last"}
    assert _first(near, "REP_R").renames == {"Param1": "scale"}
    # REL_R's second local: of a and b, a first occurs nearer the cursor (b is read first in the
    # comprehension), where the schemes' own order takes b, the first found in the source
    second_near = [m.renames["LocalVar1"] for m in near if m.scheme == "REL_R"][1]
    second_far = [m.renames["LocalVar1"] for m in far if m.scheme == "REL_R"][1]
    assert (second_near, second_far) == ("a", "b")
    assert sum(_reach(LATE_LOCAL, m) for m in near) < sum(_reach(LATE_LOCAL, m) for m in far)


def test_a_rename_that_cannot_spare_the_suffix_is_kept_only_as_its_familys_first() -> None:
    near = generate_mutants(SCALE, k=8, context=SCALE_SUFFIX, spare=SCALE_SUFFIX).mutants
    far = generate_mutants(SCALE, k=8, context=SCALE_SUFFIX, spare=SCALE_SUFFIX, near=False).mutants
    assert len(near) == len(far) == 8 and _families(near) == _families(far)
    # REP can only rename parameters the suffix uses: REP_R stays (the family stays in the vote),
    # REP_C, whose row the model would read whole again, gives its place to another candidate
    assert [m.scheme for m in far if _touches(m, SCALE_SUFFIX)] == ["REP_R", "REP_C"]
    assert [m.scheme for m in near if _touches(m, SCALE_SUFFIX)] == ["REP_R"]
    assert "REP_C" not in {m.scheme for m in near}
    # REL spares the suffix (v, not total) and takes the local first used nearest the cursor
    assert _first(near, "REL_R").renames == {"LocalVar1": "v"}
    assert _first(far, "REL_R").renames == {"LocalVar1": "out"}
    assert sum(_reach(SCALE, m) for m in near) < sum(_reach(SCALE, m) for m in far)


def test_a_rename_put_last_still_fills_k_when_nothing_else_is_left() -> None:
    only = ("REP_R", "REP_C")
    near = generate_mutants(SCALE, k=4, context=SCALE_SUFFIX, spare=SCALE_SUFFIX, schemes=only).mutants
    far = generate_mutants(
        SCALE, k=4, context=SCALE_SUFFIX, spare=SCALE_SUFFIX, schemes=only, near=False
    ).mutants
    assert len(near) == len(far) > 2
    assert sorted(m.text for m in near) == sorted(m.text for m in far)
    assert near[0].scheme == "REP_R" and "REP_C" in {m.scheme for m in near}


def test_no_spare_text_no_deferral() -> None:
    near = generate_mutants(SCALE, k=8, context=SCALE_SUFFIX).mutants
    far = generate_mutants(SCALE, k=8, context=SCALE_SUFFIX, near=False).mutants
    assert [m.scheme for m in near] == [m.scheme for m in far]


def test_supply_and_families_unchanged_at_stdlib_positions() -> None:
    fewer = 0
    for _, before, after in stdlib_positions(8, random.Random(20231116)):
        shown = after[:1000]  # about what the bundled model is shown of it
        near = generate_mutants(before, k=10, context=after, spare=shown).mutants
        far = generate_mutants(before, k=10, context=after, spare=shown, near=False).mutants
        assert len(near) == len(far)
        assert _families(near) == _families(far)
        touching = sum(_touches(m, shown) for m in near)
        assert touching <= sum(_touches(m, shown) for m in far)
        assert touching <= len({SCHEMES[m.scheme].family for m in near if m.renames})
        fewer += touching < sum(_touches(m, shown) for m in far)
        assert sum(_reach(before, m) for m in near) <= sum(_reach(before, m) for m in far)
    assert fewer >= 2  # the choice had something to change at some of them
