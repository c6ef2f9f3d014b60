"""Structural distance between a window and its mutants, with pycode-similar (as in the paper).

pycode-similar normalises the ASTs of both programs (names are abstracted away) and diffs their
dumps function by function; its similarity is the share of the original's AST lines found in the
mutant. distance = 1 - similarity: 0 for a pure rename, a few hundredths for a changed condition
or an inserted statement in a function of normal size. ``print`` calls are kept (INI inserts one).
"""

from __future__ import annotations

from collections.abc import Sequence

import pycode_similar


def _one(original: str, mutated: str) -> float:
    try:
        result = pycode_similar.detect(
            [original, mutated], diff_method=pycode_similar.UnifiedDiff, keep_prints=True, module_level=True
        )
        return max(0.0, 1.0 - pycode_similar.summarize(result[0][1])[0])
    except Exception:  # a mutant pycode-similar cannot read counts as maximally distant
        return 1.0


def distances(original: str, mutated: Sequence[str]) -> list[float]:
    """The distance of each mutated source from ``original`` (1.0 when it cannot be measured)."""
    if not mutated:
        return []
    try:
        result = pycode_similar.detect(
            [original, *mutated], diff_method=pycode_similar.UnifiedDiff, keep_prints=True, module_level=True
        )
    except Exception:  # one unreadable mutant must not cost the others their score
        return [_one(original, m) for m in mutated]
    out = [1.0] * len(mutated)
    for index, diffs in result:
        out[index - 1] = max(0.0, 1.0 - pycode_similar.summarize(diffs)[0])
    return out
