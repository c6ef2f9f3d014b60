"""What the rows' attention costs in a repair-mode request's grouped prefill, before and after, in one run.

    python benchmarks/prefix_attention.py --positions 4

At the seeded stdlib cursor positions of ``repair_latency.py``, the hf backend's layout of the
prompt and its k mutants (``HFBackend.encode``, ``row_shares``, ``row_groups``) on a model of
SmolLM-135M's shape (its context, 9 query / 3 key-value heads of 64, 30 layers; random weights,
the bundled tokenizer) gives each prefill call's shape: the rows of a group, their own tokens,
the prefix they read. For each call, one layer's attention on random tensors of that shape, CPU
time (the least of ``--repeats``), times the layers:

* cascade: the two-part attention over the whole shared prefix, scores materialised (how the
  rows' own tokens were prefilled before);
* fused: ``shared_prefix_attention`` as the backend calls it now, one SDPA over the prefix cut to
  the most the group shares.

Both give the same output (the largest difference is printed). The model itself (its matmuls) is
not run: this isolates the part whose cost grew with the prefix.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import SMOLLM_135M_SHAPE, model_dir, position_arguments  # noqa: E402

from cctest.backends._layout import CALL_TOKENS, row_groups, row_shares  # noqa: E402
from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.types import Prompt  # noqa: E402


def cpu_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    out = fn()  # first call: allocations and kernel choice out of the figure
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return best, out


def group_call(rows: int, own: int, prefix: int, seen: int, repeats: int) -> tuple[float, float, float]:
    """One layer's attention for one prefill call: (cascade s, fused s, largest difference)."""
    import torch

    from cctest.backends._prefix_attention import SplitKV, cascade_attention, shared_prefix_attention

    kv_heads = SMOLLM_135M_SHAPE["num_key_value_heads"]
    groups = SMOLLM_135M_SHAPE["num_attention_heads"] // kv_heads
    dim = SMOLLM_135M_SHAPE["hidden_size"] // SMOLLM_135M_SHAPE["num_attention_heads"]
    gen = torch.Generator().manual_seed(0)
    pk, pv = (torch.randn(1, kv_heads, prefix, dim, generator=gen) for _ in range(2))
    rk, rv = (torch.randn(rows, kv_heads, own, dim, generator=gen) for _ in range(2))
    query = torch.randn(rows, kv_heads * groups, own, dim, generator=gen)
    mask = torch.ones(rows, 1, own, prefix + own, dtype=torch.bool)
    mask[..., seen:prefix] = False  # the prefix after the group's share
    mask[..., prefix:] = torch.ones(own, own, dtype=torch.bool).tril()
    module = torch.nn.Module()
    module.num_key_value_groups = groups  # type: ignore[assignment]
    before, want = cpu_seconds(
        lambda: cascade_attention(module, query, SplitKV(pk, rk), SplitKV(pv, rv), mask, None), repeats
    )
    cut = torch.cat([mask[..., :seen], mask[..., prefix:]], dim=-1)
    after, (got, _) = cpu_seconds(
        lambda: shared_prefix_attention(
            module, query, SplitKV(pk[..., :seen, :], rk), SplitKV(pv[..., :seen, :], rv), cut
        ),
        repeats,
    )
    return before, after, float((want - got).abs().max())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    position_arguments(ap, positions=4)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if min(args.positions, args.mutants, args.max_new_tokens, args.repeats, args.threads) < 1:
        print(
            "--positions, -k, --max-new-tokens, --repeats and --threads must be at least 1.", file=sys.stderr
        )
        return 2
    import torch

    torch.set_num_threads(args.threads)
    layers = SMOLLM_135M_SHAPE["num_hidden_layers"]
    positions = stdlib_positions(args.positions, random.Random(args.seed))
    print(
        f"{args.positions} stdlib positions (seed {args.seed}), k = {args.mutants}, "
        f"{args.threads} thread(s); rows' prefill attention of a 135M Llama-shaped model "
        f"({layers} layers), CPU ms"
    )
    total_before = total_after = 0.0
    with model_dir("llama135m") as path:
        backend = HFBackend(path, threads=args.threads)
        engine = Engine(backend, Settings(mutants=args.mutants))
        for where, before, after in positions:
            texts = engine.variants(Prompt(text=before, suffix=after))
            enc = backend.encode(texts, args.max_new_tokens)
            shares = row_shares(enc.ids, enc.max_new, backend.context)
            if shares is None:
                print(f"  {where:<26} {len(texts):2d} variants: no shared layout")
                continue
            own = [len(x) - d - 1 for x, d in zip(enc.ids, shares, strict=True)]
            cascade = fused = worst = 0.0
            for group in row_groups(own, CALL_TOKENS):
                width = max(own[i] for i in group)
                if width:
                    b, a, diff = group_call(
                        len(group), width, max(shares), max(shares[i] for i in group), args.repeats
                    )
                    cascade, fused, worst = cascade + b * layers, fused + a * layers, max(worst, diff)
            total_before, total_after = total_before + cascade, total_after + fused
            print(
                f"  {where:<26} {len(texts):2d} variants  cascade {cascade * 1000:7.0f}"
                f"  fused {fused * 1000:7.0f}"
                f"  {cascade / max(fused, 1e-9):5.1f}x less  (largest difference {worst:.1e})"
            )
    print(
        f"  all positions: cascade {total_before * 1000:.0f} ms, fused {total_after * 1000:.0f} ms, "
        f"{total_before / max(total_after, 1e-9):.1f}x less"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
