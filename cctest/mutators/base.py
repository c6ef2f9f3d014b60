"""The shape every scheme has, and the analysed window the schemes share.

A scheme (LibCST codemod style) names the site visitors it reads (``visitors``: ``_walk.SiteVisitor``
subclasses, run for every scheme asked for in one batched pass), declares where it applies
(``variants``: its sites, read from its visitors in the ``Analysis``), and rewrites by splicing
libcst's code for new nodes into the source, or with a libcst transformer (``apply``). Results at the boundary
are values: ``apply`` returns an ``Applied`` or ``None`` (the scheme does not apply), never raises
for code it does not understand.
"""

from __future__ import annotations

import random
import zlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import libcst as cst

from ._analysis import FunctionFacts, NamePool
from ._walk import SiteVisitor

V = TypeVar("V", bound=SiteVisitor)


@dataclass
class Analysis:
    """A parsed window (or whole file) with the facts every scheme reads."""

    source: str  # the parsable text that was analysed
    module: cst.Module
    functions: list[FunctionFacts]
    visitors: Mapping[type[SiteVisitor], SiteVisitor]  # the site visitors run, each with its sites
    wanted: set[int]  # ids of the nodes whose offsets the visitors asked for (every scheme's splices)
    shadowed: frozenset[str]  # watched builtins the document may rebind
    open_func: int = -1  # the function the unfinished tail continues, or -1
    # character offsets of the nodes schemes splice at (window mode); None: use transformers
    offsets: dict[int, tuple[int, int]] | None = None
    reads_docs: bool = True  # the document (or its context) may read docstrings: DOC leaves them
    near: bool = True  # sites nearest the cursor first where a scheme has a choice (GRA)

    def found(self, kind: type[V]) -> V:
        """The site visitor ``kind`` after the pass (one of the schemes' ``visitors``)."""
        return cast(V, self.visitors[kind])

    def splice(self, edits: list[tuple[cst.CSTNode | int, str]]) -> str:
        """The source with edits applied: (node, new text) replaces the node's text; (offset, text)
        inserts. Every new text is libcst's code for a new node, so only the edited spans differ."""
        assert self.offsets is not None
        spans = []
        for where, text in edits:
            if isinstance(where, int):
                spans.append((where, where, text))
            else:
                start, end = self.offsets[id(where)]
                spans.append((start, end, text))
        spans.sort(key=lambda x: (x[0], x[1]))
        out, last = [], 0
        for start, end, text in spans:
            if start < last:
                raise ValueError("overlapping edits")
            out.append(self.source[last:start])
            out.append(text)
            last = end
        out.append(self.source[last:])
        return "".join(out)


@dataclass(frozen=True)
class Variant:
    """One way a scheme can mutate a window: a site (or a name) to rewrite."""

    scheme: str
    key: tuple[Any, ...]


@dataclass(frozen=True)
class Applied:
    """A scheme's result on the analysed source."""

    code: str  # the mutated analysed source
    renames: Mapping[str, str] = field(default_factory=dict)  # new -> old
    introduced: frozenset[str] = frozenset()
    tail_renames: Mapping[str, str] = field(default_factory=dict)  # old -> new, for the unfinished tail
    # the mutant's normalised AST is provably the original's (a rename only of names pycode-similar
    # abstracts away), so pycode-similar's distance is known to be 0 without running it
    same_structure: bool = False
    # mutants with the same key differ only in names pycode-similar abstracts away (GRA_R and GRA_C
    # at one site), so they share one pycode-similar score; None: score it on its own
    structure_key: tuple[object, ...] | None = None


class Scheme(ABC):
    """A program-structure-consistent mutation scheme."""

    name: str = ""
    summary: str = ""
    # used when no schemes are named; a scheme goes on by default only once it has passed the
    # behaviour corpus, CPython's suites and the third-party suites (docs/mutant-safety.md)
    default: bool = True
    # the site visitors whose sites ``variants`` reads (run for it in the batched pass)
    visitors: tuple[type[SiteVisitor], ...] = ()

    @abstractmethod
    def variants(self, a: Analysis) -> list[Variant]:
        """The ways this scheme applies to ``a``, nearest to the cursor first."""

    @abstractmethod
    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        """Apply ``variants`` together (one for a prompt mutant, all for a whole file).

        ``full``: visit the whole tree rather than only the paths to the sites (a cross-check).
        """

    def whole(self, a: Analysis) -> Sequence[Variant]:
        """The variants that make up "applied at every site" (``cctest mutate --whole``)."""
        return self.variants(a)

    def renamed(self, v: Variant) -> frozenset[str]:
        """The names ``v`` renames: the engine renames them in the code after the cursor too."""
        return frozenset()

    def sites(self, v: Variant) -> frozenset[Any]:
        """Where ``v`` rewrites: two variants of one scheme that share a site are look-alikes
        (``not not`` and ``bool(...)`` around the same condition), taken only after variety runs out."""
        return frozenset((v.key[0],))

    @property
    def family(self) -> str:
        """REP_R and REP_C are two variants of one family, REP."""
        return self.name.split("_")[0]

    def ordered(self, a: Analysis, seed: int) -> list[Variant]:
        out = self.variants(a)
        if seed:
            random.Random(seed * 1_000_003 + zlib.crc32(self.name.encode())).shuffle(out)
        return out

    def __repr__(self) -> str:
        return f"<scheme {self.name}>"
