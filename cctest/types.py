"""The values that flow through the pipeline: frozen dataclasses, serialisable with ``to_dict``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ORIGINAL = "original"


@dataclass(frozen=True)
class Prompt:
    """The code before the cursor (what the model sees) and, optionally, the code after it."""

    text: str
    suffix: str = ""
    path: str | None = None
    line: int | None = None  # 1-based, as in compiler messages
    col: int | None = None  # 1-based; the cursor sits before this character

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "suffix": self.suffix,
            "path": self.path,
            "line": self.line,
            "col": self.col,
        }


@dataclass(frozen=True)
class Mutant:
    """A program-structure-consistent variant of a prompt.

    ``renames`` maps each identifier the mutant invented to the user's identifier it replaces
    (new -> old), so completions of the mutant can be mapped back.
    """

    scheme: str
    text: str
    renames: Mapping[str, str] = field(default_factory=dict)
    structural_distance: float = 0.0
    # identifiers the mutant added with no counterpart in the prompt (GRA's dead variable): a
    # completion that uses one cannot be mapped back, so it is never returned to the user
    introduced: frozenset[str] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme,
            "text": self.text,
            "renames": dict(self.renames),
            "structural_distance": round(self.structural_distance, 6),
        }


@dataclass(frozen=True)
class Completion:
    """One completion: of the original prompt (``source == "original"``) or of a mutant.

    ``raw`` is what the model returned; ``text`` is ``raw`` with the mutant's renames mapped back.
    ``error`` is set when the backend failed for this prompt; such a completion, like an empty one,
    is a "no result" (the paper's #No Results) and takes no part in detection or repair.
    """

    source: str
    raw: str
    text: str
    error: str | None = None
    cut: bool = False  # ended where the engine decided early which completion to finish

    @property
    def is_result(self) -> bool:
        return self.error is None and self.text.strip() != ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "raw": self.raw, "text": self.text}
        if self.error is not None:
            d["error"] = self.error
        if self.cut:
            d["cut"] = True
        return d


@dataclass(frozen=True)
class Verdict:
    """What outlier detection and repair decided, as indices into the completions."""

    outliers: tuple[int, ...]
    chosen: int | None  # None when no completion produced a result
    no_results: tuple[int, ...]
    counts: tuple[int, ...]  # per completion: how many of its similarities fell below the median
    threshold: float  # the absolute T that was applied

    @property
    def original_is_outlier(self) -> bool:
        return 0 in self.outliers

    @property
    def original_no_result(self) -> bool:
        return 0 in self.no_results


@dataclass(frozen=True)
class Prefill:
    """What a request's rows cost the model to read, in estimated tokens, and the budget the
    mutants were chosen in (the setting ``prefill_budget``; 0: none)."""

    plain: int  # the prompt's own row, as the model is shown it
    own: tuple[int, ...]  # per mutant, the tokens after its first difference from the prompt
    budget: float
    horizon: int  # the tokens before the cursor the costs are counted within
    ratio: float  # the batch's prefill over the plain prompt's (``mutators.selection.Costs.ratio``)

    def to_dict(self) -> dict[str, Any]:
        return {
            "plain_tokens": self.plain,
            "mutant_tokens": list(self.own),
            "ratio": round(self.ratio, 3),
            "budget": self.budget,
            "horizon": self.horizon,
        }


@dataclass(frozen=True)
class EngineResult:
    """Everything one engine request produced, and the time each stage took."""

    prompt: Prompt
    mutants: tuple[Mutant, ...]
    dropped_mutants: tuple[Mutant, ...]  # farther than the structural-distance bound
    completions: tuple[Completion, ...]  # [original, mutant_1, ..., mutant_k]
    similarity: tuple[tuple[float, ...], ...]  # between completions; 0 rows/cols for no-results
    verdict: Verdict
    timings_ms: Mapping[str, float]
    # decided early: the verdict was made on every completion's first this many tokens, and only
    # the chosen completion was written on (the others end there); None: every one is whole
    decided_after: int | None = None
    # decided early, then every completion run on to its end (``Engine.run_settling``): the
    # completions and the outliers are the whole ones, the chosen completion is still the one the
    # early decision answered with
    settled: bool = False
    # what the rows cost the model to read (estimated tokens) and the budget they were chosen in
    prefill: Prefill | None = None

    @property
    def outliers(self) -> tuple[int, ...]:
        return self.verdict.outliers

    @property
    def chosen(self) -> int | None:
        return self.verdict.chosen

    @property
    def completion(self) -> str:
        """The repaired completion ("" when no completion produced a result)."""
        return "" if self.verdict.chosen is None else self.completions[self.verdict.chosen].text

    @property
    def original_completion(self) -> str:
        return self.completions[0].text

    @property
    def original_is_outlier(self) -> bool:
        return self.verdict.original_is_outlier

    @property
    def is_suspect(self) -> bool:
        """The original completion was flagged, or gave no result while a mutant did."""
        return self.verdict.original_is_outlier or (
            self.verdict.original_no_result and self.verdict.chosen is not None
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt.text,
            "suffix": self.prompt.suffix,
            "mutants": [m.to_dict() for m in self.mutants],
            "dropped_mutants": [m.to_dict() for m in self.dropped_mutants],
            "completions": [c.to_dict() for c in self.completions],
            "similarity": [[round(x, 6) for x in row] for row in self.similarity],
            "outliers": list(self.verdict.outliers),
            "no_results": list(self.verdict.no_results),
            "threshold": self.verdict.threshold,
            "chosen": self.verdict.chosen,
            "completion": self.completion,
            "original_is_outlier": self.original_is_outlier,
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
            "decided_after": self.decided_after,
            "settled": self.settled,
            "prefill": self.prefill.to_dict() if self.prefill is not None else None,
        }
