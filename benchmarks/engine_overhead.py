"""The engine's own work per request (everything but the model), beside a naive whole-file approach.

A cursor deep inside the standard library's argparse.py (~2,600 lines), k = 10 mutants, the
deterministic rule backend (so the model costs ~nothing and ``timings_ms["engine"]`` is what the
engine itself spends: windowing, mutation, de-mutation, detection, repair). Three figures, in one
run so that they share the machine's load:

- cold: distinct cursor positions inside function bodies (nothing cached for their window);
- warm: successive keystrokes typing out one line (the window before the line is unchanged, so its
  mutants come from the cache and only the renames of the unfinished line are redone);
- naive: what a design that parses and scope-analyses the whole file per request would pay at
  least (libcst parse + ScopeProvider of the whole file; no mutation at all);
- control: a fixed piece of pure-Python work, timed between the requests, which shows how much of
  a p95 is the machine (a shared, loaded machine preempts a process for tens of ms now and then).

Usage: .venv/bin/python benchmarks/engine_overhead.py [--positions 60] [--naive 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, ScopeProvider

from cctest import mutators
from cctest.backends.rules import RuleBackend
from cctest.engine import Engine
from cctest.types import Prompt


def fixed_work() -> float:
    """Milliseconds of a fixed pure-Python loop (about 1 ms on an idle core)."""
    t = time.perf_counter()
    x = 0
    for i in range(15000):
        x += i * i
    return (time.perf_counter() - t) * 1000


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def body_lines(source: str) -> list[int]:
    """1-based lines that lie inside a function body, in the second half of the file ("deep")."""
    tree = ast.parse(source)
    n = len(source.splitlines())
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            out.update(range(node.body[0].lineno, (node.end_lineno or node.body[0].lineno) + 1))
    lines = source.splitlines()
    return sorted(x for x in out if x > n // 2 and lines[x - 1].strip())


def offset(lines: list[str], line: int, col: int) -> int:
    return sum(len(x) + 1 for x in lines[: line - 1]) + col


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=60, help="distinct cold cursor positions")
    ap.add_argument("--keystrokes", type=int, default=60, help="warm keystrokes (over a few lines)")
    ap.add_argument("--naive", type=int, default=5, help="whole-file parses + scope analyses")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    import argparse as target

    path = Path(target.__file__)
    source = path.read_text()
    lines = source.split("\n")
    rng = random.Random(args.seed)
    engine = Engine(RuleBackend(), mutants=10)
    await engine.run(Prompt(text=source[:1000]))  # imports and first-use costs out of the way

    control: list[float] = []
    mutate_ms: list[float] = []  # the mutation stage alone (this part's share of the engine's work)

    async def engine_ms(text: str) -> tuple[float, int]:
        r = await engine.run(Prompt(text=text))
        control.append(fixed_work())
        mutate_ms.append(r.timings_ms["mutate"])
        return r.timings_ms["engine"], len(r.mutants)

    candidates = body_lines(source)
    picked = rng.sample(candidates, min(args.positions, len(candidates)))
    cold, produced = [], []
    for ln in picked:
        mutators.generate.cache.clear()  # distinct positions: nothing of this window is cached
        col = rng.randrange(len(lines[ln - 1]) + 1)
        ms, n = await engine_ms(source[: offset(lines, ln, col)])
        cold.append(ms)
        produced.append(n)
    cold_mutate = mutate_ms[:]

    warm: list[float] = []
    warm_mutate: list[float] = []
    typed = 0
    for ln in rng.sample(candidates, len(candidates)):
        line = lines[ln - 1]
        if len(line.strip()) < 12:
            continue
        start = offset(lines, ln, 0)
        indent = len(line) - len(line.lstrip())
        mutators.generate.cache.clear()
        await engine_ms(source[: start + indent])  # the first keystroke of the line fills the cache
        for j in range(indent + 1, len(line) + 1):
            ms, _ = await engine_ms(source[: start + j])
            warm.append(ms)
            warm_mutate.append(mutate_ms[-1])
            typed += 1
            if typed >= args.keystrokes:
                break
        if typed >= args.keystrokes:
            break

    naive = []
    for _ in range(args.naive):
        t = time.perf_counter()
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        wrapper.resolve(ScopeProvider)
        naive.append((time.perf_counter() - t) * 1000)

    print(f"file: {path} ({len(lines)} lines), k = 10, rule backend; Python {sys.version.split()[0]}")
    print(f"mutants per request (cold): median {statistics.median(produced):.0f}, min {min(produced)}")

    def row(label: str, xs: list[float]) -> None:
        print(f"{label + f' ({len(xs)})':40}{statistics.median(xs):11.2f}{pct(xs, 0.95):10.2f}")

    print(f"{'':40}{'median ms':>11}{'p95 ms':>10}")
    row("cold: distinct positions", cold)
    row("  of which mutation", cold_mutate)
    row("warm: keystrokes in a line", warm)
    row("  of which mutation", warm_mutate)
    row("naive: whole-file parse + scopes", naive)
    row("control: fixed work", control)
    print(
        f"ratio naive/cold: median {statistics.median(naive) / statistics.median(cold):.0f}x, "
        f"p95 {pct(naive, 0.95) / pct(cold, 0.95):.0f}x; naive/warm: median "
        f"{statistics.median(naive) / statistics.median(warm):.0f}x, "
        f"p95 {pct(naive, 0.95) / pct(warm, 0.95):.0f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
