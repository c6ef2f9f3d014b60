"""``cctest complete FILE:LINE:COL``: run the engine at a cursor and print the repaired completion.

The completion is written exactly to a pipe or a file; on a terminal its control characters (a
model's screen clear or window-title change) are shown as ``\\xNN`` escapes (``for_stream``).
``--json`` output is exact everywhere (JSON escapes control characters itself)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter

from ..backends.base import FimLayout
from ..document import parse_location, prompt_at
from ..safe_text import for_stream
from ._common import add_backend_arguments, add_setting, read_python, settings_from_args


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "location",
        metavar="FILE:LINE:COL",
        help="1-based cursor; the cursor sits before the character at COL",
    )
    for name in ("mutants", "threshold", "relative_threshold", "schemes", "max_distance", "prefill_budget"):
        add_setting(p, name)
    p.add_argument("--no-suffix", action="store_true", help="do not send the text after the cursor")
    add_setting(p, "decide_after")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    add_backend_arguments(p)


def run(args: argparse.Namespace) -> int:
    from ..backends import create_backend
    from ..engine import Engine
    from ..model_load import load

    settings = settings_from_args(  # a bad setting or scheme name before reading anything
        args,
        mutants=args.mutants,
        threshold=args.threshold,
        relative_threshold=args.relative_threshold,
        schemes=tuple(args.scheme),
        max_distance=args.max_distance,
        prefill_budget=args.prefill_budget,
        decide_after=args.decide_after,
    )
    path, line, col = parse_location(args.location)
    prompt = prompt_at(read_python(path), line, col, path=path)
    if args.no_suffix:
        prompt = type(prompt)(text=prompt.text, path=path, line=line, col=col)

    fim: list[str | None] = [None]  # the FIM template used (None: left to right)

    async def go():  # type: ignore[no-untyped-def]
        async with load(create_backend, settings) as backend:  # told on stderr: it takes seconds
            result = await Engine(backend, settings).run(prompt)
            # the layout the rows got, known once they were asked (a server may refuse a field)
            fim[0] = backend.fim_used() if isinstance(backend, FimLayout) and prompt.suffix.strip() else None
            return result

    result = asyncio.run(go())
    failed = Counter(c.error for c in result.completions if c.error)
    if failed:  # said on stderr in every output mode: a verdict on fewer rows than asked
        why, count = failed.most_common(1)[0]
        others = sum(failed.values()) - count
        print(
            f"# cctest: {sum(failed.values())} of {len(result.completions)} rows failed ({count}: {why}"
            + (f"; {others} for other reasons)" if others else ")"),
            file=sys.stderr,
        )
    if args.json:
        json.dump({**result.to_dict(), "fim": fim[0]}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    n = len(result.completions)
    verdict = (
        "original completion flagged as an outlier · repaired"
        if result.original_is_outlier
        else "original completion consistent"
    )
    if result.verdict.original_no_result:
        verdict = "original prompt gave no completion · repaired from a mutant"
    sys.stdout.write(for_stream(result.completion, sys.stdout))
    if not result.completion.endswith("\n"):
        sys.stdout.write("\n")
    print(
        f"# cctest: {len(result.outliers)}/{n} outliers, {len(result.verdict.no_results)} no result; "
        f"{verdict}; "
        f"chosen: {result.completions[result.chosen].source if result.chosen is not None else 'none'}; "
        f"engine {result.timings_ms['engine']:.1f} ms, model {result.timings_ms['complete']:.0f} ms",
        file=sys.stderr,
    )
    return 0
