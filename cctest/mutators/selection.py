"""Which mutants, in which order: variety before quantity, nearest the cursor, sparing a suffix.

The generator (``generate``) asks every scheme for its variants and tries them in the order
``for_variety`` gives, ``sparing`` having first moved a renaming scheme's variants that touch the
code after the cursor behind the others; ``add_for_variety`` fits in mutants made apart from the
window (DOC's edits of a docstring being typed); the engine keeps ``nearest_the_cursor`` of them
for a local model. Pure functions of the schemes' variants and mutants: no parsing here.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from ..demutate import identifiers
from ..types import Mutant
from .base import Scheme, Variant
from .registry import SCHEMES, family


def for_variety(
    names: list[str], per_scheme: list[list[Variant]], avoid: frozenset[str] = frozenset()
) -> list[Variant]:
    """The candidates in the order they are tried: variety before quantity.

    Round after round, each scheme offers its next variant, the first scheme of every family
    before the second of any (REP_R, REL_R, ..., then REP_C, REL_C, ...), so that k smaller than
    the number of schemes still spans the families. A variant at a site where the same scheme
    already has one (the other form of one condition, a rename overlapping another) waits until
    every scheme's distinct sites are used up.

    ``avoid``: the names of the code after the cursor that a suffix-first model reads before the
    prompt (``generate_mutants``'s ``spare``). A rename of one of them changes its row from the
    start, so the model reads the whole row again: such a variant keeps its place only as its
    family's first (the family stays in the vote); any other waits until last, after every other
    scheme's candidates, look-alikes included.

    >>> from cctest.mutators.base import Variant
    >>> per = [[Variant("REP_R", (0, ("a",))), Variant("REP_R", (0, ("b",)))],
    ...        [Variant("REP_C", (0, ("a",)))], [Variant("GRA_R", ("site",))]]
    >>> [v.scheme for v in for_variety(["REP_R", "REP_C", "GRA_R"], per)]
    ['REP_R', 'GRA_R', 'REP_C', 'REP_R']
    """
    first: list[int] = []
    second: list[int] = []
    families: set[str] = set()
    for i, n in enumerate(names):
        fam = SCHEMES[n].family
        (second if fam in families else first).append(i)
        families.add(fam)
    order = first + second
    used: dict[str, set[object]] = {n: set() for n in names}
    out: list[Variant] = []
    later: list[Variant] = []
    last: list[Variant] = []
    present: set[str] = set()  # the families with a variant in ``out``
    depth = max((len(v) for v in per_scheme), default=0)
    for d in range(depth):
        for i in order:
            if d < len(per_scheme[i]):
                v = per_scheme[i][d]
                scheme = SCHEMES[v.scheme]
                where = scheme.sites(v)
                if avoid and scheme.family in present and scheme.renamed(v) & avoid:
                    last.append(v)
                elif where & used[v.scheme]:
                    later.append(v)
                else:
                    used[v.scheme] |= where
                    present.add(scheme.family)
                    out.append(v)
    return out + later + last


def sparing(scheme: Scheme, variants: list[Variant], avoid: frozenset[str]) -> list[Variant]:
    """``variants`` (one scheme's, in its order) with those that rename none of ``avoid`` first.

    A stable partition: nothing is added or lost, so the scheme offers as many candidates as
    before, and ``for_variety`` spreads the schemes as before; within each part the scheme's own
    order (nearest the cursor first, or seeded) stays. Schemes that rename nothing are unchanged.
    """
    if not avoid:
        return variants
    free = [not (scheme.renamed(v) & avoid) for v in variants]
    if all(free):
        return variants
    return [v for v, ok in zip(variants, free, strict=True) if ok] + [
        v for v, ok in zip(variants, free, strict=True) if not ok
    ]


def add_for_variety(kept: list[Mutant], extra: list[Mutant], k: int) -> None:
    """Add ``extra`` (one scheme's mutants, made apart from the window's) to ``kept`` as the
    variety order would: into free places, and when ``kept`` is full, the first of them in place of
    the last mutant of the scheme that has the most (a family no mutant has goes before a third
    or fourth of another's). Their distance is 0: the tail is not scored, as for renames in it."""
    for i, m in enumerate(extra):
        if len(kept) < k:
            kept.append(m)
            continue
        counts = collections.Counter(x.scheme for x in kept)
        most, n = counts.most_common(1)[0] if counts else ("", 0)
        if i > 0 or n < 2 or any(SCHEMES[x.scheme].family == SCHEMES[m.scheme].family for x in kept):
            return
        last = max(j for j, x in enumerate(kept) if x.scheme == most)
        kept[last] = m


def nearest_the_cursor(prompt: str, mutants: Sequence[Mutant], k: int, spare: str = "") -> list[Mutant]:
    """``k`` of ``mutants`` (of ``prompt``, the text before the cursor), those whose first change
    is nearest the cursor, but first each scheme family's nearest one (the families ``mutants``
    span stay), in their given order.

    A local model reads every row from its first changed token on (what precedes it is shared
    with the prompt), so a mutant changed near the cursor costs a few tokens, one changed at the
    ``def`` line the whole function. ``spare``: the code after the cursor where the model reads it
    first (see ``generate_mutants``); a mutant that renames a name it uses changes its row there,
    before the whole prompt, so it counts as farther than any mutant that does not.

    >>> from cctest.types import Mutant
    >>> p = "a = 1; b = a; c = b; "
    >>> ms = [Mutant("REP_R", p.replace("a", "x")), Mutant("REP_C", p.replace("b", "y")),
    ...       Mutant("GRA_R", p.replace("c", "z"))]
    >>> [m.scheme for m in nearest_the_cursor(p, ms, 2)]
    ['REP_C', 'GRA_R']
    """
    if len(mutants) <= k:
        return list(mutants)

    def first_change(m: Mutant) -> int:
        n = min(len(prompt), len(m.text))
        i = next((i for i in range(n) if prompt[i] != m.text[i]), n)
        return len(prompt) - i  # characters from the first change to the cursor

    reach = [first_change(m) for m in mutants]
    if spare:
        used = used_names(spare)
        reach = [
            r + (len(prompt) + 1) * any(old in used for old in m.renames.values())
            for r, m in zip(reach, mutants, strict=True)
        ]
    order = sorted(range(len(mutants)), key=lambda i: reach[i])
    chosen: list[int] = []
    families: set[str] = set()
    for i in order:
        fam = family(mutants[i].scheme)
        if fam not in families:
            families.add(fam)
            chosen.append(i)
    chosen = chosen[:k]
    chosen += [i for i in order if i not in chosen][: k - len(chosen)]
    return [mutants[i] for i in sorted(chosen)]


def used_names(text: str) -> frozenset[str]:
    """The names ``text`` refers to as variables: what ``demutate.rename`` would rename there.

    >>> sorted(used_names("total = f(x.count, key=k)  # y"))
    ['f', 'k', 'total', 'x']
    """
    return frozenset(text[s:e] for s, e in identifiers(text))
