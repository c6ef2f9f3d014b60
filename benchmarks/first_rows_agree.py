"""How often a request's first rows agree: what adaptive k (a few mutants first, the rest only
when they disagree) would save, read off a finished ``cctest bench`` run.

    python benchmarks/first_rows_agree.py                 # runs the bench below first (minutes)
    cctest bench --dataset humaneval-infill --shuffle --limit 120 --threads 1 --out runs/infill
    python benchmarks/first_rows_agree.py runs/infill     # an existing run

For each prompt that got all its mutants, whether the original's completion and its first m
mutants' are identical (m = 1 .. ``--most``): a request that started with those rows could stop
there only when they agree; otherwise it would need a second call for the rest.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cctest.bench.store import load_run  # noqa: E402
from cctest.errors import ConfigError  # noqa: E402


def agreement(records: Sequence[dict[str, Any]], most: int) -> tuple[int, dict[int, int]]:
    """The prompts with every mutant's completion, and per m how many of them had the original and
    its first m mutants complete identically."""
    full = [r for r in records if isinstance(r.get("completions"), list) and r["completions"]]
    k = max((len(r["completions"]) for r in full), default=0)
    full = [r for r in full if len(r["completions"]) == k]
    agree = {m: 0 for m in range(1, min(most, k - 1) + 1)}
    for r in full:
        texts = [c["text"] for c in r["completions"]]
        for m in agree:
            agree[m] += len(set(texts[: m + 1])) == 1
    return len(full), agree


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, nargs="?", help="a cctest bench run directory (default: run one)")
    ap.add_argument("--most", type=int, default=4, help="first rows counted, up to this many mutants")
    ap.add_argument("--limit", type=int, default=120, help="prompts of the bench run made without RUN")
    args = ap.parse_args(argv)
    if args.most < 1 or args.limit < 1:
        print("--most and --limit must be at least 1.", file=sys.stderr)
        return 2
    if args.run is None:
        with tempfile.TemporaryDirectory(prefix="cctest-first-rows-") as tmp:
            bench = [sys.executable, "-m", "cctest", "bench", "--dataset", "humaneval-infill", "--shuffle"]
            bench += ["--limit", str(args.limit), "--threads", "1", "--out", tmp]
            subprocess.run(bench, check=True, stdout=subprocess.DEVNULL)
            return main([tmp, "--most", str(args.most)])
    try:
        _, records = load_run(args.run)
    except ConfigError as exc:
        print(f"{exc}", file=sys.stderr)
        return 2
    n, agree = agreement(records, args.most)
    print(f"{args.run}: {n} prompts with all their mutants")
    for m, count in agree.items():
        share = count / n if n else 0.0
        print(f"  the original and its first {m} mutant(s) identical: {count}/{n} ({share:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
