"""How a run's flags compare with a baseline run's, per T, with a paired bootstrap interval.

    python benchmarks/verdict_change.py BASELINE:RUN [BASELINE:RUN ...]
    python benchmarks/verdict_change.py base-s0:settled-s0 base-s1:settled-s1 --verdict early

Each pair names two ``cctest bench`` run directories over the same prompts, e.g. one made with
``--no-near-sites`` (the baseline) and one with ``--near-sites --decide-after 16``. The baseline's
flags are its verdict on whole completions; the run's are the one ``--verdict`` names: ``settled``
(the default: the defect log's, ``--decide-after``'s settled entries), ``early`` (the answer's,
made on the first tokens) or ``whole``. Flag-vs-failure F1 is ``cctest bench``'s: every
completion that gave a result, flagged or not against failing its tests or not.

Printed per pair and, with several pairs, pooled (each pair's prompts taken together): per T the
baseline's F1, the run's, their difference, and the 2.5th and 97.5th percentiles of that
difference over ``--resamples`` seeded resamples of the prompts (both runs' completions of a
prompt resampled together). Only prompts both runs tested, with a verdict of that kind, count.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cctest.bench.metrics import VERDICTS, confusion, flag_pairs, per_t_of  # noqa: E402
from cctest.bench.store import RunStore  # noqa: E402

# per prompt, per T: (flagged, failed) of each completion
Prompt = dict[str, list[tuple[bool, bool]]]


def prompts(run: Path, verdict: str) -> dict[str, Prompt]:
    """Each tested prompt of ``run`` (by task id) with its flags under ``verdict``."""
    out: dict[str, Prompt] = {}
    store: RunStore[dict[str, Any]] = RunStore(run)
    for r in store.records():
        per_t = per_t_of(r, verdict)
        if r.get("has_tests") and r.get("completions") and per_t is not None:
            out[r["task_id"]] = {t: flag_pairs(r, v) for t, v in per_t.items()}
    return out


def f1(units: Sequence[Prompt], t: str) -> float:
    return float(confusion(p for u in units for p in u[t])["f1"] or 0.0)


def compare(
    pairs: Sequence[tuple[Mapping[str, Prompt], Mapping[str, Prompt]]], resamples: int, seed: int
) -> list[tuple[str, float, float, float, float, float]]:
    """Per T: baseline F1, run F1, their difference, and the difference's 95% bootstrap interval."""
    units = [(a[k], b[k]) for a, b in pairs for k in sorted(set(a) & set(b))]
    if not units:
        return []
    rng = random.Random(seed)
    draws = [[rng.randrange(len(units)) for _ in units] for _ in range(resamples)]
    rows = []
    for t in units[0][0]:
        base, run = f1([a for a, _ in units], t), f1([b for _, b in units], t)
        diffs = sorted(f1([units[i][1] for i in d], t) - f1([units[i][0] for i in d], t) for d in draws)
        lo, hi = diffs[int(0.025 * (resamples - 1))], diffs[int(0.975 * (resamples - 1))]
        rows.append((t, base, run, run - base, lo, hi))
    return rows


def show(label: str, rows: Sequence[tuple[str, float, float, float, float, float]], count: int) -> None:
    print(f"{label}: {count} prompts")
    for t, base, run, diff, lo, hi in rows:
        print(
            f"  T={t:<4} baseline F1 {base:.4f}  run F1 {run:.4f}  diff {diff:+.4f}"
            f"  95% [{lo:+.4f}, {hi:+.4f}]"
        )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="+", help="BASELINE_DIR:RUN_DIR, two cctest bench run directories")
    ap.add_argument(
        "--verdict", choices=VERDICTS, default="settled", help="the run's verdict (default settled)"
    )
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    loaded = []
    for spec in args.pairs:
        base, _, run = spec.partition(":")
        dirs = [Path(base), Path(run)]
        missing = [d for d in dirs if not (d / "results.jsonl").is_file()]
        if not run or missing or args.resamples < 1:
            print(
                f"{spec}: give BASELINE_DIR:RUN_DIR, two run directories holding results.jsonl, "
                "and --resamples of at least 1.",
                file=sys.stderr,
            )
            return 2
        loaded.append((prompts(dirs[0], "whole"), prompts(dirs[1], args.verdict)))
    for spec, pair in zip(args.pairs, loaded, strict=True):
        show(spec, compare([pair], args.resamples, args.seed), len(set(pair[0]) & set(pair[1])))
    if len(loaded) > 1:
        count = sum(len(set(a) & set(b)) for a, b in loaded)
        show("all pairs", compare(loaded, args.resamples, args.seed), count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
