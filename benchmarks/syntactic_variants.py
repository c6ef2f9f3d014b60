"""Figure: formula variants generated, reduced and checked per second (``cctest.formula``).

One round makes the paper's variant set — the seven equations, distances 1–5, up to 20 variants
each (627 in all) — and times, in the same run and interleaved round by round:

* **generate**: ``variants(eq, d, 20)`` for every equation and distance (mutations applied,
  printed, deduplicated);
* **reduce**: the pre-processing (R1, then R2–R5 to a fixed point) of every variant;
* **check**: SymPy's proof that a variant is equivalent to its original — the variant's
  ``lhs - rhs`` divided by the original's, with random non-zero integer coefficients substituted,
  cancels to a non-zero constant (what the property test asserts).

Prints variants per second for each step and for generate + check, and each step's cost relative
to generating.

    .venv/bin/python benchmarks/syntactic_variants.py             # 3 rounds
    .venv/bin/python benchmarks/syntactic_variants.py --rounds 1
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sympy  # noqa: E402

from cctest.formula import EQUATIONS, EquationVariant, parse_equation, reduce, variants  # noqa: E402


def generate(seed: int) -> list[EquationVariant]:
    out: list[EquationVariant] = []
    for text in EQUATIONS.values():
        eq = parse_equation(text)
        for d in range(1, 6):
            out += variants(eq, d, count=20, seed=seed)
    return out


def check(v: EquationVariant, rng: random.Random) -> bool:
    values = {q: sympy.Integer(rng.choice((-1, 1)) * rng.randint(1, 9)) for q in v.original.coefficients}
    ratio = sympy.cancel(
        sympy.together(v.equation.difference().subs(values) / v.original.difference().subs(values))
    )
    return not ratio.free_symbols and ratio != 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    times: dict[str, list[float]] = {"generate": [], "reduce": [], "check": []}
    n = 0
    for r in range(args.rounds):
        t = time.perf_counter()
        vs = generate(seed=r)  # a new seed per round: nothing is cached between rounds
        times["generate"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for v in vs:
            reduce(v.equation)
        times["reduce"].append(time.perf_counter() - t)
        rng = random.Random(r)
        t = time.perf_counter()
        ok = all(check(v, rng) for v in vs)
        times["check"].append(time.perf_counter() - t)
        assert ok, "a variant failed its equivalence check"
        n = len(vs)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{n} variants (7 equations x distances 1-5, up to 20 each), median of {args.rounds} rounds")
    for k, s in med.items():
        rel = s / med["generate"]
        print(f"  {k:<9} {n / s:9.0f} variants/s   ({1000 * s / n:.2f} ms each, {rel:.1f}x generate)")
    both = med["generate"] + med["check"]
    print(f"  generate + check: {n / both:.0f} variants/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
