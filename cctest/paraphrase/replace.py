"""ReplaceWord paraphrases: replace k distinct words of a description with neighbours.

A *k-th order* paraphrase replaces k distinct words, each with one of its ``n`` nearest
neighbours (``neighbours.NeighbourSource``). ``paraphrases(text, source, n, k)`` makes those of
orders 1..k as the paper's generator does: **every** k-th order mutant, order by order (each
replaceable word times each of its neighbours, then every pair of words times their neighbours,
and so on), in a fixed order, so the same arguments always give the same paraphrases.

``limit`` bounds the paraphrases one call makes (each is a copy of the text, and a search measures
every one): orders are taken whole from 1 up while they fit; the first order that does not fit is a
seeded sample filling what is left (``generate(...).sampled`` says so) and the orders above it are
left out. ``per_order=N`` is cctest's earlier generator instead: order 1 complete (a seeded sample
in text order when it alone would pass ``limit``) and up to N drawn per order above 1.

Any word may be replaced, as the paper's Table 2 replaces "a", "to" and "with", except
(``replaceable_words``): code identifiers (names with ``_``, digits or inner capitals, the
``protect`` names such as the function and its arguments), numbers, quoted or back-quoted strings,
calls written in the text (``round(x, 2)``, ``a*sin(x)``; the called name is then a code name
everywhere in the text), words written in a formula (next to ``* / ^ % + = < >`` or a minus that
is not a hyphen: ``a*x + b = 0``), the docstring's examples (a ``>>>`` line and the lines after it
up to a blank line, lines that read like code: ``==``, ``=>``, ``->``, or starting with a bracket or
a number), ``None``, ``True`` and ``False``, a word of one or two letters that is not a function word
(``x``, the ``th`` of ``i-th``), and a "word" longer than ``MAX_WORD_CHARS`` (no English word is; a
blob of letters has no neighbours worth looking up). ``protect_stop_words=True`` is cctest's
earlier rule: short function words, words under three letters and every Python keyword stay too.
"""

from __future__ import annotations

import itertools
import keyword
import random
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass

from .neighbours import NeighbourSource

_WORD = re.compile(r"[A-Za-z][a-z]*(?:'[a-z]+)?")
_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:'[a-z]+)?")
_QUOTED = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])")
_CODE_LINE = re.compile(r">>>|==|=>|->|^\s*[\[{(]|^\s*[-+]?\d")
_CALL = re.compile(r"\b(\w+)\([^)]*\)")  # a call in prose: only its own span is code
_OPERATOR = re.compile(r"\*\*|[-+*/^%<>=]")  # in a formula written in the text
_CONSTANTS = frozenset(("None", "True", "False"))
MAX_WORD_CHARS = 50  # the longest English words (45 letters) are shorter
STOPWORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it its "
    "this that these those then than there their they them he she his her we you your i not no do "
    "does did so such can will would should may might must which who whom what when where how all "
    "any each".split()
)  # never replaced under cctest's earlier rule (protect_stop_words)


@dataclass(frozen=True)
class Paraphrase:
    """One paraphrase: its text and the replacements made (original word, neighbour, offset)."""

    text: str
    replaced: tuple[tuple[str, str, int], ...]

    @property
    def order(self) -> int:
        return len(self.replaced)

    def to_dict(self) -> dict[str, object]:
        return {"text": self.text, "replaced": [list(r) for r in self.replaced]}


def _protected_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _QUOTED.finditer(text)] + [m.span() for m in _CALL.finditer(text)]
    offset = 0
    in_example = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if ">>>" in line:
            in_example = True
        elif not stripped:
            in_example = False
        if in_example or _CODE_LINE.search(line):
            spans.append((offset, offset + len(line)))
        offset += len(line)
    return spans


def _formula_spans(text: str) -> list[tuple[int, int]]:
    """The operators of formulas written in the text (``a*x + b = 0``): a word next to one is code.
    A minus between two letters is a hyphen (``non-zero``), not an operator."""
    spans = []
    for m in _OPERATOR.finditer(text):
        i = m.start()
        if m.group() == "-" and 0 < i < len(text) - 1 and text[i - 1].isalpha() and text[i + 1].isalpha():
            continue
        spans.append(m.span())
    return spans


def _next_to(text: str, start: int, end: int, operators: list[tuple[int, int]]) -> bool:
    """Whether the word text[start:end] has an operator as its nearest neighbour on either side
    (spaces between allowed, on the same line)."""
    before = len(text[:start]) - len(text[:start].rstrip(" \t"))
    after = len(text[end:]) - len(text[end:].lstrip(" \t"))
    left, right = start - before, end + after
    return any(b == left or a == right for a, b in operators)


def replaceable_words(
    text: str, protect: Collection[str] = (), *, protect_stop_words: bool = False
) -> list[tuple[int, str]]:
    """(offset, word) of every word ReplaceWord may replace, in order (the module says which are
    not); ``protect_stop_words``: cctest's earlier rule, function words and short words kept."""
    spans = _protected_spans(text)
    guarded = {p.lower() for p in protect} | {m.group(1).lower() for m in _CALL.finditer(text)}
    operators = [] if protect_stop_words else _formula_spans(text)
    out: list[tuple[int, str]] = []
    for m in _TOKEN.finditer(text):
        word, start = m.group(), m.start()
        if len(word) > MAX_WORD_CHARS or not _WORD.fullmatch(word):
            continue  # identifiers (snake_case, digits, camelCase), numbers, overlong words
        if protect_stop_words:
            if len(word) < 3 or word.lower() in STOPWORDS or keyword.iskeyword(word):
                continue
        elif word in _CONSTANTS or (
            len(word) < 3
            and (
                word.lower() not in STOPWORDS or "-" in text[start - 1 : start] + text[m.end() : m.end() + 1]
            )
        ):
            continue  # None, True, False; a one- or two-letter name (x, n) or piece (i-th)
        if word.lower() in guarded or any(a <= start < b for a, b in spans):
            continue
        if operators and _next_to(text, start, m.end(), operators):
            continue
        out.append((start, word))
    return out


def cased(neighbour: str, like: str) -> str:
    """``neighbour`` written in the case of the word it replaces."""
    if like.isupper() and len(like) > 1:
        return neighbour.upper()
    return neighbour[:1].upper() + neighbour[1:] if like[:1].isupper() else neighbour


def apply(text: str, replaced: Iterable[tuple[str, str, int]]) -> str:
    """``text`` with each (word, neighbour, offset) replacement made."""
    out = text
    for word, neighbour, offset in sorted(replaced, key=lambda r: -r[2]):
        out = out[:offset] + cased(neighbour, word) + out[offset + len(word) :]
    return out


@dataclass(frozen=True)
class Generated:
    """What one ``generate`` call made: the paraphrases, how many mutants of orders 1..k exist
    (``total``), and whether they were ``sampled`` (fewer made than exist: over ``limit``, or
    cctest's earlier ``per_order`` draw)."""

    paraphrases: list[Paraphrase]
    total: int
    sampled: bool


def _mutants(counts: list[int], k: int) -> list[int]:
    """How many mutants of each order 0..k there are: the elementary symmetric sums of ``counts``
    (each replaceable word's number of neighbours)."""
    e = [1] + [0] * k
    for c in counts:
        for o in range(k, 0, -1):
            e[o] += e[o - 1] * c
    return e


def _every(slots: list[tuple[int, str, list[str]]], order: int) -> Iterator[tuple[tuple[str, str, int], ...]]:
    """Every replacement of ``order`` distinct words: words in text order, nearest neighbours first."""
    for picks in itertools.combinations(range(len(slots)), order):
        for choice in itertools.product(*(slots[i][2] for i in picks)):
            yield tuple((slots[i][1], nb, slots[i][0]) for i, nb in zip(picks, choice, strict=True))


_ENUMERATE = 100_000  # an order with at most this many mutants is sampled exactly (uniformly)


def generate(
    text: str,
    source: NeighbourSource,
    n: int,
    k: int,
    *,
    seed: int = 0,
    per_order: int | None = None,
    protect: Collection[str] = (),
    limit: int | None = None,
    protect_stop_words: bool = False,
) -> Generated:
    """ReplaceWord paraphrases of orders 1..k with the ``n`` nearest neighbours of each word.

    By default every mutant (the paper's generator), orders whole from 1 up while they fit in
    ``limit``, the first that does not a seeded sample filling the rest. ``per_order=N``: cctest's
    earlier generator, order 1 complete and up to N drawn per higher order with ``random.Random``
    seeded by (seed, order). No paraphrase equals ``text`` and none repeats; the same arguments
    give the same list.
    """
    looked: dict[str, list[str]] = {}  # one lookup per distinct word
    slots: list[tuple[int, str, list[str]]] = []
    for o, w in replaceable_words(text, protect, protect_stop_words=protect_stop_words):
        key = w.lower()
        if key not in looked:
            looked[key] = [nb for nb in source.neighbours(w, n) if nb.lower() != key]
        if looked[key]:
            slots.append((o, w, looked[key]))
    top = min(k, len(slots))
    per = _mutants([len(nbs) for _, _, nbs in slots], top)
    total = sum(per[1:])
    seen = {text}
    out: list[Paraphrase] = []

    def add(replaced: tuple[tuple[str, str, int], ...]) -> None:
        t = apply(text, replaced)
        if t not in seen:
            seen.add(t)
            out.append(Paraphrase(t, tuple(sorted(replaced, key=lambda r: r[2]))))

    if per_order is not None:
        _draw_per_order(slots, top, per_order, seed, limit, add, out)
        return Generated(out, total, len(out) < total)
    room = total if limit is None else limit
    sampled = False
    for order in range(1, top + 1):
        left = room - len(out)
        if left <= 0:
            sampled = True
            break
        if per[order] <= left:
            for replaced in _every(slots, order):
                add(replaced)
            continue
        sampled = True
        rng = random.Random(f"{seed}:{order}")
        if per[order] <= _ENUMERATE:
            every = list(_every(slots, order))
            for i in sorted(rng.sample(range(len(every)), left)):
                add(every[i])
        else:  # too many to list: distinct draws of ``order`` words, each with one neighbour
            for _ in range(20 * left):
                if len(out) >= room:
                    break
                picks = sorted(rng.sample(range(len(slots)), order))
                add(tuple((slots[i][1], rng.choice(slots[i][2]), slots[i][0]) for i in picks))
        break
    return Generated(out, total, sampled)


def _draw_per_order(
    slots: list[tuple[int, str, list[str]]],
    top: int,
    per_order: int,
    seed: int,
    limit: int | None,
    add: Callable[[tuple[tuple[str, str, int], ...]], None],
    out: list[Paraphrase],
) -> None:
    """cctest's earlier generator (``per_order``): order 1 complete (a seeded sample in text order
    when it would leave no room in ``limit`` for the higher orders' share), up to ``per_order``
    drawn per higher order."""
    pairs = [(o, w, nb) for o, w, nbs in slots for nb in nbs]
    orders = range(2, top + 1)
    if limit is not None:
        quota = max(limit - min(per_order * len(orders), limit // 2), 0)
        if len(pairs) > quota:
            rng = random.Random(f"{seed}:1")
            pairs = [pairs[i] for i in sorted(rng.sample(range(len(pairs)), quota))]
    for o, w, nb in pairs:
        add(((w, nb, o),))
    attempts = 0
    for order in orders:
        rng = random.Random(f"{seed}:{order}")
        made = 0
        for _ in range(per_order * 20):
            if made >= per_order or (limit is not None and (len(out) >= limit or attempts >= 20 * limit)):
                break
            attempts += 1
            picks = sorted(rng.sample(range(len(slots)), order))
            before = len(out)
            add(tuple((slots[i][1], rng.choice(slots[i][2]), slots[i][0]) for i in picks))
            made += len(out) > before


def paraphrases(
    text: str,
    source: NeighbourSource,
    n: int,
    k: int,
    *,
    seed: int = 0,
    per_order: int | None = None,
    protect: Collection[str] = (),
    limit: int | None = None,
    protect_stop_words: bool = False,
) -> list[Paraphrase]:
    """``generate(...).paraphrases``: every mutant of orders 1..k by default (see ``generate``)."""
    return generate(
        text,
        source,
        n,
        k,
        seed=seed,
        per_order=per_order,
        protect=protect,
        limit=limit,
        protect_stop_words=protect_stop_words,
    ).paraphrases
