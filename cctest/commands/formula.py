"""``cctest formula``: the formula mutations and reductions of the syntactic-robustness suite.

    cctest formula mutate "a*x + b = 0" --distance N [--count M] [--seed S] [--variable x] [--json]
    cctest formula reduce "a*x + b = 0" [--variable x] [--json]

JSON: ``mutate`` prints ``[{"formula", "distance", "mutations", "size"}]`` (``mutations`` such as
``["M3(b)", "M1"]``); ``reduce`` prints ``{"formula", "size", "steps"}``.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..extras import require


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="formula_command", metavar="ACTION", parser_class=type(p))
    sub.required = True
    m = sub.add_parser("mutate", help="equivalent variants at a syntactic distance (mutations M1-M5)")
    m.add_argument("equation", help='an equation, e.g. "a*x + b = 0"')
    m.add_argument("--distance", type=int, required=True, help="number of mutations (1-8)")
    m.add_argument("--count", type=int, default=20, help="at most this many distinct variants (default 20)")
    m.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("reduce", help="the reduced formula (R1, then R2-R5 to a fixed point)")
    r.add_argument("equation", help='an equation, e.g. "0 + b = a*x + b + b"')
    for q in (m, r):
        q.add_argument("--variable", default="x", help="the unknown (default x); other names: coefficients")
        q.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    require("suites", "cctest formula")
    from ..formula import parse_equation, reduce, variants

    eq = parse_equation(args.equation, variable=args.variable)
    if args.formula_command == "mutate":
        found = variants(eq, args.distance, count=args.count, seed=args.seed)
        if args.json:
            json.dump([v.to_dict() for v in found], sys.stdout, indent=2)
            sys.stdout.write("\n")
        for v in found if not args.json else ():
            print(f"{v.text}    # {' '.join(str(m) for m in v.mutations)}, size {v.equation.size}")
        return 0
    result = reduce(eq)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"{result.equation.text}    # {' '.join(result.steps)}, size {result.equation.size}")
    return 0
