"""How many tokens a repair-mode request runs through the model, as a ratio to a plain completion.

    python benchmarks/repair_prefill_tokens.py --positions 20
    python benchmarks/repair_prefill_tokens.py --positions 20 --no-suffix --mutant-pool 2

The load-independent side of ``repair_latency.py``: at the same seeded stdlib cursor positions it
counts, for the bundled model's tokenizer, template and context, the tokens the hf backend
prefills (``HFBackend.plan_prefill``) for the prompt alone and for the prompt with its k mutants.
Each row is laid out as ``generate`` lays it out: with the code after the cursor in the model's
fill-in-the-middle template (``fim_inputs``; the bundled model's is suffix-first, SPM), each
mutant's suffix in its own names, as the engine sends it; ``--no-suffix``: left to right, the
prompt alone. Plain is the same layout for the prompt alone.

Side by side at each position, from the same engine settings but one: ``spare_suffix`` off (the
schemes' own order of names) and on (renames prefer names the shown suffix does not use), each
with the batch layout of today (each row sharing with the prompt what it has in common with it,
rows prefilled in groups) and with a single prefix shared by every row (the layout before).
Decoding (k + 1 rows for the token budget) is not counted.
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

LAYOUTS = {"grouped": True, "one prefix": False}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20231116)
    ap.add_argument("-k", "--mutants", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument(
        "--mutant-pool",
        type=int,
        default=Settings().mutant_pool,
        help="candidates drawn per kept mutant (the setting mutant_pool)",
    )
    ap.add_argument("--no-suffix", action="store_true", help="left to right: no code after the cursor")
    args = ap.parse_args(argv)
    if min(args.positions, args.mutants, args.max_new_tokens, args.mutant_pool) < 1:
        print("--positions, -k, --max-new-tokens and --mutant-pool must be at least 1.", file=sys.stderr)
        return 2
    backend = HFBackend(None, threads=1)
    positions = stdlib_positions(args.positions, random.Random(args.seed))
    layout = "left to right" if args.no_suffix else f"FIM {backend.fim_used()}"
    print(
        f"{args.positions} stdlib positions (seed {args.seed}), k = {args.mutants}, mutant pool "
        f"{args.mutant_pool}, {layout}; prefill tokens / plain's, spare_suffix off | on"
    )
    engines = {
        spare: Engine(
            backend, Settings(mutants=args.mutants, mutant_pool=args.mutant_pool, spare_suffix=spare)
        )
        for spare in (False, True)
    }
    table: dict[tuple[str, bool], list[float]] = {}
    gains: list[float] = []
    for where, before, after in positions:
        suffix = "" if args.no_suffix else after
        plain = backend.plan_prefill(
            [before], args.max_new_tokens, grouped=False, suffixes=[suffix] if suffix else None
        )
        ratios: dict[tuple[str, bool], float] = {}
        for spare, engine in engines.items():
            texts, suffixes = engine.rows(Prompt(text=before, suffix=suffix))
            if len(texts) < args.mutants + 1:
                break
            for name, grouped in LAYOUTS.items():
                tokens = backend.plan_prefill(
                    texts, args.max_new_tokens, grouped=grouped, suffixes=suffixes if suffix else None
                )
                ratios[name, spare] = tokens / plain
        else:
            for key, r in ratios.items():
                table.setdefault(key, []).append(r)
            gains.append(ratios["grouped", False] / ratios["grouped", True])
            cells = "  ".join(
                f"{name} {ratios[name, False]:5.2f}x | {ratios[name, True]:5.2f}x" for name in LAYOUTS
            )
            print(f"  {where:<26} plain {plain:5d}  {cells}")
            continue
        print(f"  {where:<26} fewer than {args.mutants} mutants: not counted")
    for name in LAYOUTS:
        for spare in (False, True):
            ratios_ = table.get((name, spare), [])
            if ratios_:
                print(
                    f"  {name:<10} spare_suffix {'on ' if spare else 'off'} {len(ratios_):3d} positions  "
                    f"median {statistics.median(ratios_):5.2f}x  p90 {percentile(ratios_, 90):5.2f}x  "
                    f"max {max(ratios_):5.2f}x"
                )
    if gains:
        print(
            f"  grouped, off / on per position: median {statistics.median(gains):5.2f}x, "
            f"max {max(gains):5.2f}x, min {min(gains):5.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
