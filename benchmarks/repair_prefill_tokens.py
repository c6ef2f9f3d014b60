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

Side by side at each position, from the same engine settings but three: ``spare_suffix`` off (the
schemes' own order of names), on (renames prefer names the shown suffix does not use), and on
with ``near_sites`` (GRA's dead code nearest the cursor; a rename that cannot spare the suffix
only as its family's first mutant), these three with ``prefill_budget`` 0 (the mutants chosen
without their cost), and all three on with ``prefill_budget`` at its default (the costliest mutants
give way to cheaper ones; the defaults), each with the batch layout of today (each row
sharing with the prompt what it has in common with it, rows prefilled in groups; per position)
and with a single prefix shared by every row (the layout before; in the summary).
``--by-scheme``: also, per scheme and setting, how many prefill tokens its rows own (read apart
from the prompt's row) over the positions, and how many of those rows part from the prompt's
row in the suffix (a rename of a name the suffix uses, read from the row's start).
Decoding (k + 1 rows for the token budget) is not counted.
"""

from __future__ import annotations

import argparse
import collections
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import percentile  # noqa: E402

from cctest.backends._layout import row_shares  # noqa: E402
from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.types import Prompt  # noqa: E402

LAYOUTS = {"grouped": True, "one prefix": False}
# (spare_suffix, near_sites, prefill_budget)
SETTINGS = {
    "spare off": (False, False, 0.0),
    "spare on": (True, False, 0.0),
    "spare+near": (True, True, 0.0),
    "budget": (True, True, Settings().prefill_budget),
}


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
    ap.add_argument("--by-scheme", action="store_true", help="the tokens each scheme's rows own")
    args = ap.parse_args(argv)
    if min(args.positions, args.mutants, args.max_new_tokens, args.mutant_pool) < 1:
        print("--positions, -k, --max-new-tokens and --mutant-pool must be at least 1.", file=sys.stderr)
        return 2
    backend = HFBackend(None, threads=1)
    positions = stdlib_positions(args.positions, random.Random(args.seed))
    layout = "left to right" if args.no_suffix else f"FIM {backend.fim_used()}"
    print(
        f"{args.positions} stdlib positions (seed {args.seed}), k = {args.mutants}, mutant pool "
        f"{args.mutant_pool}, {layout}; prefill tokens / plain's, grouped: " + " | ".join(SETTINGS)
    )
    engines = {
        name: Engine(
            backend,
            Settings(
                mutants=args.mutants,
                mutant_pool=args.mutant_pool,
                spare_suffix=spare,
                near_sites=near,
                prefill_budget=budget,
            ),
        )
        for name, (spare, near, budget) in SETTINGS.items()
    }
    table: dict[tuple[str, str], list[float]] = {}
    owned: dict[tuple[str, str], list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    for where, before, after in positions:
        suffix = "" if args.no_suffix else after
        plain = backend.plan_prefill(
            [before], args.max_new_tokens, grouped=False, suffixes=[suffix] if suffix else None
        )
        ratios: dict[tuple[str, str], float] = {}
        own_here: dict[tuple[str, str], list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
        for setting, engine in engines.items():
            prompt = Prompt(text=before, suffix=suffix)
            request = engine._prepare(prompt, None, None, None)  # the rows, with their mutants
            texts, suffixes = request.texts, request.suffixes
            if len(texts) < args.mutants + 1:
                break
            for name, grouped in LAYOUTS.items():
                tokens = backend.plan_prefill(
                    texts, args.max_new_tokens, grouped=grouped, suffixes=suffixes if suffix else None
                )
                ratios[name, setting] = tokens / plain
            if args.by_scheme:
                schemes = [m.scheme for m in request.mutants]
                rows = _owned(backend, texts, suffixes if suffix else None, args.max_new_tokens)
                for scheme, (own, in_suffix) in zip(schemes, rows, strict=True):
                    cell = own_here[setting, scheme]
                    cell[0] += 1
                    cell[1] += own
                    cell[2] += in_suffix
                    cell[3] += own if in_suffix else 0
        else:
            for key, r in ratios.items():
                table.setdefault(key, []).append(r)
            for key, cell in own_here.items():
                owned[key] = [a + b for a, b in zip(owned[key], cell, strict=True)]
            cells = " | ".join(f"{ratios['grouped', name]:5.2f}x" for name in SETTINGS)
            print(f"  {where:<26} plain {plain:5d}  {cells}")
            continue
        print(f"  {where:<26} fewer than {args.mutants} mutants: not counted")
    for name in LAYOUTS:
        for setting in SETTINGS:
            ratios_ = table.get((name, setting), [])
            if ratios_:
                print(
                    f"  {name:<10} {setting:<10} {len(ratios_):3d} positions  "
                    f"median {statistics.median(ratios_):5.2f}x  p90 {percentile(ratios_, 90):5.2f}x  "
                    f"max {max(ratios_):5.2f}x"
                )
    if args.by_scheme and owned:
        print(
            "  prefill tokens each scheme's rows own, all positions: rows, tokens "
            "(of those rows, how many part from the prompt's in the suffix: their tokens)"
        )
        for scheme in sorted({s for _, s in owned}):
            cells = "  ".join(
                f"{owned[setting, scheme][0]:3d} rows {owned[setting, scheme][1]:6d} tok "
                f"({owned[setting, scheme][2]:2d}: {owned[setting, scheme][3]:5d})"
                if (setting, scheme) in owned
                else f"{'-':>31}"
                for setting in SETTINGS
            )
            print(f"    {scheme:<6} {cells}")
    return 0


def _owned(
    backend: HFBackend, texts: list[str], suffixes: list[str] | None, max_new_tokens: int
) -> list[tuple[int, bool]]:
    """Per mutant row (``texts[1:]``), the tokens it owns (those after what it shares with the
    prompt's row, as ``plan_prefill`` counts them) and whether it parts from that row in the
    suffix (a suffix-first layout only)."""
    rows = backend.fim_inputs(texts, suffixes, max_new_tokens) or texts
    enc = backend.encode(rows, max_new_tokens)
    shares = row_shares(enc.ids, enc.max_new, 0) or [0] * len(enc.ids)
    template = backend.fim_template
    end = 0  # where the suffix ends in the prompt's row (suffix first only)
    if rows is not texts and template is not None and template.order == "spm":
        layout = template.layout
        head = layout[: layout.index("{suffix}")]
        between = layout[layout.index("{suffix}") + len("{suffix}") : layout.index("{prefix}")]
        end = rows[0].find(between, len(head))
    out = []
    for row, ids, share in zip(rows[1:], enc.ids[1:], shares[1:], strict=True):
        n = min(len(row), len(rows[0]))
        i = next((i for i in range(n) if rows[0][i] != row[i]), n)
        out.append((len(ids) - share - 1, i < end))
    return out


if __name__ == "__main__":
    sys.exit(main())
