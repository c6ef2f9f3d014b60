"""ReplaceWord paraphrases: replace k distinct words of a description with neighbours.

A *k-th order* paraphrase replaces k distinct words, each with one of its ``n`` nearest
neighbours (``neighbours.NeighbourSource``). ``paraphrases(text, source, n, k)`` makes those of
orders 1..k: every order-1 paraphrase (each replaceable word times each of its neighbours), and
for each higher order up to ``per_order`` distinct ones drawn with a seeded generator, so the same
arguments always give the same paraphrases.

Never touched (``replaceable_words``): code identifiers (names with ``_``, digits or inner capitals,
the ``protect`` names such as the function and its arguments), numbers, quoted or back-quoted
strings, calls written in the text (``round(x, 2)``, ``a*sin(x)``; the called name is then a code
name everywhere in the text), and the docstring's examples (a ``>>>`` line and the lines after it
up to a blank line, lines that read like code: ``==``, ``=>``, ``->``, or starting with a bracket or
a number), plus short function words and Python's keywords (``None``, ``True``), and a "word"
longer than ``MAX_WORD_CHARS`` (no English word is; a blob of letters has no neighbours worth
looking up).

``limit`` bounds the paraphrases one call makes (each is a copy of the text, and a search measures
every one): when order 1 alone would pass it, a seeded sample of the (word, neighbour) pairs is
taken instead, in text order, and the higher orders are drawn until the limit is reached.
"""

from __future__ import annotations

import keyword
import random
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from .neighbours import NeighbourSource

_WORD = re.compile(r"[A-Za-z][a-z]*(?:'[a-z]+)?")
_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:'[a-z]+)?")
_QUOTED = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])")
_CODE_LINE = re.compile(r">>>|==|=>|->|^\s*[\[{(]|^\s*[-+]?\d")
_CALL = re.compile(r"\b(\w+)\([^)]*\)")  # a call in prose: only its own span is code
MAX_WORD_CHARS = 50  # the longest English words (45 letters) are shorter
STOPWORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it its "
    "this that these those then than there their they them he she his her we you your i not no do "
    "does did so such can will would should may might must which who whom what when where how all "
    "any each".split()
)


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


def replaceable_words(text: str, protect: Collection[str] = ()) -> list[tuple[int, str]]:
    """(offset, word) of every word ReplaceWord may replace, in order."""
    spans = _protected_spans(text)
    guarded = {p.lower() for p in protect} | {m.group(1).lower() for m in _CALL.finditer(text)}
    out: list[tuple[int, str]] = []
    for m in _TOKEN.finditer(text):
        word, start = m.group(), m.start()
        if not 3 <= len(word) <= MAX_WORD_CHARS or not _WORD.fullmatch(word):
            continue  # identifiers (snake_case, digits, camelCase), numbers, short and overlong words
        if word.lower() in STOPWORDS or keyword.iskeyword(word):
            continue
        if word.lower() in guarded or any(a <= start < b for a, b in spans):
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


def paraphrases(
    text: str,
    source: NeighbourSource,
    n: int,
    k: int,
    *,
    seed: int = 0,
    per_order: int = 50,
    protect: Collection[str] = (),
    limit: int | None = None,
) -> list[Paraphrase]:
    """ReplaceWord paraphrases of orders 1..k with the ``n`` nearest neighbours of each word.

    Order 1 is complete; each higher order holds up to ``per_order`` distinct paraphrases drawn
    with ``random.Random`` seeded by (seed, order): the same arguments give the same list. No
    paraphrase equals ``text`` and none repeats. With ``limit``, at most that many: order 1 is
    then a seeded sample when complete it would leave no room for the higher orders' share.
    """
    looked: dict[str, list[str]] = {}  # one lookup per distinct word
    slots = []
    for o, w in replaceable_words(text, protect):
        key = w.lower()
        if key not in looked:
            looked[key] = [nb for nb in source.neighbours(w, n) if nb.lower() != key]
        if looked[key]:
            slots.append((o, w, looked[key]))
    seen = {text}
    out: list[Paraphrase] = []

    def add(replaced: tuple[tuple[str, str, int], ...]) -> None:
        t = apply(text, replaced)
        if t not in seen:
            seen.add(t)
            out.append(Paraphrase(t, tuple(sorted(replaced, key=lambda r: r[2]))))

    pairs = [(o, w, nb) for o, w, nbs in slots for nb in nbs]
    orders = range(2, min(k, len(slots)) + 1)
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
    return out
