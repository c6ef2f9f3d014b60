"""Which mutants, in which order: variety before quantity, nearest the cursor, sparing a suffix.

The generator (``generate``) asks every scheme for its variants and tries them in the order
``for_variety`` gives, ``sparing`` having first moved a renaming scheme's variants that touch the
code after the cursor behind the others; ``add_for_variety`` fits in mutants made apart from the
window (DOC's edits of a docstring being typed); the engine keeps ``nearest_the_cursor`` of them
for a local model. Pure functions of the schemes' variants and mutants: no parsing here.
"""

from __future__ import annotations

import bisect
import collections
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..demutate import identifiers
from ..strings import common_prefix_length
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


# about one token of a code model's tokenizer per word, punctuation mark or run of whitespace
_TOKEN = re.compile(r"\w+|[^\w\s]|\s+")
# the least prompt a cost is counted against: below it the decoding steps, not the prefill, are
# most of a request's work, so a short prompt's rows owning "several times" its tokens cost little
MIN_PLAIN_TOKENS = 1024


def estimate_tokens(text: str) -> int:
    """About how many tokens a code model reads for ``text`` (a tokenizer-free estimate: one per
    word, punctuation mark or run of whitespace; within 0.95-1.3x the bundled model's count on
    standard-library code). The same for every backend, so every face chooses alike.

    >>> estimate_tokens("def f(a, b):\\n    return a + b\\n")
    19
    """
    return sum(1 for _ in _TOKEN.finditer(text))


@dataclass(frozen=True)
class Reading:
    """How the model reads a row: what a mutant's cost counts.

    ``horizon``: the tokens of the prompt the model is shown before the cursor (the backend's
    context; 0: all of it). ``suffix``: the code after the cursor the model is shown ("": none, left
    to right). ``suffix_first``: it is read before the prompt (a suffix-first FIM layout), so a
    mutant that renames a name it uses parts from the prompt's row at the row's start.
    """

    horizon: int = 0
    suffix: str = ""
    suffix_first: bool = False


@dataclass(frozen=True)
class Costs:
    """The prefill a request's rows cost, in estimated tokens (``prefill_costs``)."""

    plain: int  # the prompt's own row: what a plain completion prefills
    own: tuple[int, ...]  # per mutant, the tokens after its first difference from the prompt's row

    def ratio(self, chosen: Sequence[int] | None = None) -> float:
        """The batch's prefill (the prompt's row, then each mutant's own tokens) over the plain
        prompt's, of the mutants ``chosen`` (indices; None: all), the plain prompt counted as at
        least ``MIN_PLAIN_TOKENS``."""
        own = self.own if chosen is None else [self.own[i] for i in chosen]
        return 1 + sum(own) / max(self.plain, MIN_PLAIN_TOKENS)


def first_difference(a: str, b: str) -> int:
    """The first index at which ``a`` and ``b`` differ (the length of the shorter when one starts
    the other; ``cctest.strings.common_prefix_length``).

    >>> first_difference("abcdef", "abXdef"), first_difference("abc", "abcd")
    (2, 3)
    """
    return common_prefix_length(a, b)


def prefill_costs(prompt: str, mutants: Sequence[Mutant], reading: Reading) -> Costs:
    """What each mutant's row costs the model beyond the prompt's own row: the tokens after its
    first difference from the prompt (what a batched model prefills beyond the shared prefix),
    counted within the prompt the model is shown (``reading.horizon``), plus the code after the
    cursor where it is read after the prompt. A mutant that renames a name the shown suffix uses,
    read suffix first, owns its whole row.

    The prompt's tokens are found once; a mutant's own tokens are the prompt's after its first
    difference, give or take its change in length (at the prompt's characters per token), so the
    cost of k mutants is k searches, not k tokenizations (it runs on every keystroke).
    """
    starts = _token_starts(prompt, reading.horizon)
    visible = starts[0] if starts else len(prompt)
    suffix = estimate_tokens(reading.suffix) if reading.suffix else 0
    plain = len(starts) + suffix
    per_token = (len(prompt) - visible) / len(starts) if starts else 1.0
    used = used_names(reading.suffix) if reading.suffix_first and reading.suffix else frozenset()
    own = []
    for m in mutants:
        if used and any(old in used for old in m.renames.values()):
            own.append(plain)
            continue
        at = max(visible, first_difference(prompt, m.text))
        cost = len(starts) - bisect.bisect_left(starts, at)
        if at < len(m.text):  # the token the change falls in, and what it adds or takes away
            cost = max(1, cost + 1 + round((len(m.text) - len(prompt)) / max(per_token, 1.0)))
        own.append(cost if reading.suffix_first else cost + suffix)
    return Costs(plain, tuple(own))


def _token_starts(prompt: str, horizon: int) -> list[int]:
    """Where each of the last ``horizon`` estimated tokens of ``prompt`` starts (0: every token)."""
    start = max(0, len(prompt) - horizon * 16) if horizon > 0 else 0  # a token is seldom 16 characters
    starts = [m.start() for m in _TOKEN.finditer(prompt, start)]
    return starts[-horizon:] if horizon > 0 else starts


def within_budget(
    costs: Costs, families: Sequence[str], k: int, budget: float, min_families: int = 3
) -> list[int]:
    """Which ``k`` of the candidates to complete: the first ``k`` (the schemes' own order: variety
    first) when their batch's prefill is within ``budget`` times the plain prompt's
    (``Costs.ratio``); otherwise, one at a time, the costliest chosen mutant is replaced by the
    cheapest candidate not chosen that costs less, keeping as many scheme families as before
    where a candidate allows, and never fewer than ``min_families`` (or as many as the candidates
    span), until the batch is within the budget or no such swap is left. Indices into
    ``costs.own``/``families``, in the candidates' order. ``budget`` 0: no bound.

    >>> c = Costs(plain=1000, own=(900, 10, 20, 800, 30, 5))
    >>> fams = ["REP", "GRA", "FMT", "REP", "INI", "DOC"]
    >>> within_budget(c, fams, 4, 0), within_budget(c, fams, 4, 1.5)
    ([0, 1, 2, 3], [1, 2, 4, 5])
    """
    n = len(costs.own)
    chosen = list(range(min(k, n)))
    if budget <= 0 or costs.ratio(chosen) <= budget:
        return chosen
    floor = min(min_families, len(set(families)))
    rest = sorted((i for i in range(n) if i not in chosen), key=lambda i: costs.own[i])
    tried: set[int] = set()
    while costs.ratio(chosen) > budget:
        out = max((i for i in chosen if i not in tried), key=lambda i: costs.own[i], default=None)
        if out is None:
            break
        tried.add(out)
        now = len({families[i] for i in chosen})
        without = [i for i in chosen if i != out]
        best: int | None = None
        best_key: tuple[int, int] | None = None
        for j in rest:
            if costs.own[j] >= costs.own[out]:
                break
            spread = len({families[i] for i in without} | {families[j]})
            if spread < floor:
                continue
            key = (0 if spread >= now else 1, costs.own[j])
            if best_key is None or key < best_key:
                best, best_key = j, key
        if best is None:
            continue
        chosen[chosen.index(out)] = best
        rest.remove(best)
        rest.append(out)
        rest.sort(key=lambda i: costs.own[i])
    return sorted(chosen)
