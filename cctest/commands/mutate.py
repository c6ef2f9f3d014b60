"""``cctest mutate``: print the structure-consistent mutants of the prompt at a cursor, or of a whole file.

    cctest mutate FILE:LINE:COL [--scheme NAME]... [-k N] [--json]
    cctest mutate FILE --whole [--scheme NAME]... [--json]

JSON: ``{"prompt": str, "mutants": [{"scheme", "text", "renames", "structural_distance"}]}``; with
``--whole``, ``prompt`` is the whole file and each ``text`` the whole file with one scheme applied at
every site (one entry per scheme that applies).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys

from ..config import Settings
from ..document import parse_location, prompt_at, read_source
from ._common import add_setting, read_python


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "location",
        metavar="FILE:LINE:COL | FILE",
        help="1-based cursor (the cursor sits before the character at COL), or a file with --whole",
    )
    p.add_argument("--whole", action="store_true", help="apply each scheme at every site of the whole file")
    add_setting(p, "schemes")
    add_setting(p, "mutants", help="number of mutants at a cursor (default {default})")
    add_setting(p, "max_distance", help="drop mutants structurally farther than this (default {default})")
    add_setting(p, "seed")
    p.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="FILE",
        help=(
            "another file whose calls count (e.g. the tests): REP keeps a parameter it passes by "
            "keyword (repeatable)"
        ),
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from ..mutators import generate_mutants, mutate_whole, scheme_names

    # the settings' one validation (as `cctest complete`'s), before reading anything
    settings = Settings().replace(
        schemes=tuple(args.scheme), mutants=args.mutants, max_distance=args.max_distance, seed=args.seed
    )
    names = scheme_names(settings.schemes)
    context = "\n".join(read_source(f) for f in args.context)
    if args.whole:
        prompt = read_python(args.location)
        mutants = [m for m in (mutate_whole(prompt, n, context=context) for n in names) if m.text != prompt]
    else:
        path, line, col = parse_location(args.location)
        at = prompt_at(read_python(path), line, col, path=path)
        prompt = at.text
        mutants = generate_mutants(
            prompt,
            schemes=names,
            k=settings.mutants,
            max_distance=settings.max_distance,
            seed=settings.seed,
            context=at.suffix + "\n" + context,  # keyword calls after the cursor count too
        ).mutants
    if args.json:
        json.dump(
            {"prompt": prompt, "mutants": [m.to_dict() for m in mutants]},
            sys.stdout,
            indent=2,
            ensure_ascii=False,
        )
        sys.stdout.write("\n")
        return 0
    if not mutants:
        print("# cctest: no scheme applies here.", file=sys.stderr)
    for m in mutants:
        renames = ", ".join(f"{new} <- {old}" for new, old in m.renames.items())
        print(f"# {m.scheme}  distance {m.structural_distance:.3f}" + (f"  ({renames})" if renames else ""))
        diff = difflib.unified_diff(
            prompt.splitlines(keepends=True), m.text.splitlines(keepends=True), "prompt", m.scheme, n=1
        )
        for d in diff:
            sys.stdout.write(d if d.endswith("\n") else d + "\n")
    return 0
