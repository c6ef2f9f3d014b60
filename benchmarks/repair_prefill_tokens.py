"""How many tokens a repair-mode request runs through the model, as a ratio to a plain completion.

    python benchmarks/repair_prefill_tokens.py --positions 20

The load-independent side of ``repair_latency.py``: at the same seeded stdlib cursor positions it
counts, for the bundled tokenizer and the model's context, the tokens the hf backend prefills
(``HFBackend.plan_prefill``) for the prompt alone and for the prompt with its k mutants, with the
batch layout of today (each row sharing with the prompt what it has in common with it, rows
prefilled in groups) and with a single prefix shared by every row (the layout before), for
``mutant_pool`` 1 and the default. Decoding (k + 1 rows for the token budget) is not counted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import percentile  # noqa: E402

from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.types import Prompt  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20231116)
    ap.add_argument("-k", "--mutants", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    args = ap.parse_args(argv)
    if min(args.positions, args.mutants, args.max_new_tokens) < 1:
        print("--positions, -k and --max-new-tokens must be at least 1.", file=sys.stderr)
        return 2
    backend = HFBackend(None, threads=1)
    positions = stdlib_positions(args.positions, random.Random(args.seed))
    pools = sorted({1, Settings().mutant_pool})
    print(
        f"{args.positions} stdlib positions (seed {args.seed}), k = {args.mutants}; prefill tokens / plain's"
    )
    table: dict[tuple[int, str], list[float]] = {}
    for where, before, after in positions:
        plain = backend.plan_prefill([before], args.max_new_tokens, grouped=False)
        cells = []
        for pool in pools:
            engine = Engine(backend, Settings(mutants=args.mutants, mutant_pool=pool))
            texts = engine.variants(Prompt(text=before, suffix=after))
            if len(texts) < args.mutants + 1:
                break
            for grouped in (False, True):
                r = backend.plan_prefill(texts, args.max_new_tokens, grouped=grouped) / plain
                table.setdefault((pool, "grouped" if grouped else "one prefix"), []).append(r)
                cells.append(f"pool {pool} {'grouped' if grouped else 'one prefix'} {r:5.2f}x")
        else:
            print(f"  {where:<26} plain {plain:5d}  " + "  ".join(cells))
            continue
        print(f"  {where:<26} fewer than {args.mutants} mutants: not counted")
    for (pool, layout), ratios in sorted(table.items()):
        print(
            f"  mutant pool {pool}, {layout:<10} {len(ratios):3d} positions  median "
            f"{statistics.median(ratios):5.2f}x  p90 {percentile(ratios, 90):5.2f}x  max {max(ratios):5.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
