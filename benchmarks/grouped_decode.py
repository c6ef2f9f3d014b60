"""What one decoding step of a repair-mode request costs, the rows' own keys padded or grouped, in one run.

    python benchmarks/grouped_decode.py --positions 4

At the seeded stdlib cursor positions of ``repair_latency.py``, the hf backend's layout of the
prompt and its k mutants (``Engine`` variants and suffixes, ``HFBackend.fim_inputs``/``encode``,
``row_shares``, ``row_groups``) gives the shape of the batch ``generate`` decodes: the prefix every
row reads (once), and each row's own tokens. A model of SmolLM-135M's shape (random weights, the
bundled tokenizer's vocabulary; ``--layers`` fewer layers for a quick run) then runs decoding
steps (one new token per row, the real model with random keys and values in the cache) with:

* padded+repeat: the rows' own keys padded to the longest row's and copied per query head
  (``repeat_kv``) at every step and layer, as the backend decoded before;
* padded+folded: padded, but the query heads of a key/value head folded (no copy);
* grouped: the backend's cache now: each group of rows' own keys only as long as its longest
  row's, query heads folded;
* plain: one row, the prompt alone, in an ordinary cache (what a plain completion's step costs).

The steps are interleaved (each variant's step i, then step i + 1); the figure is the median CPU
time of a step after the first. The three layouts' logits are compared (largest difference).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mutant_supply import stdlib_positions  # noqa: E402
from repair_latency import SMOLLM_135M_SHAPE, position_arguments  # noqa: E402

from cctest.backends._layout import decode_groups, row_shares  # noqa: E402
from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.types import Prompt  # noqa: E402

BENCH = "cctest_bench_decode"
VARIANTS = ("padded+repeat", "padded+folded", "grouped", "plain")
_mode = {"attention": "new"}


def padded_repeat_attention(
    module: Any, query: Any, key: Any, value: Any, attention_mask: Any, scaling: float | None
) -> Any:
    """The decoding attention before grouping: the rows' own part repeated per query head."""
    import torch
    from transformers.integrations.sdpa_attention import repeat_kv

    groups = int(getattr(module, "num_key_value_groups", 1) or 1)
    pk, pv, rk, rv = key.prefix[0], value.prefix[0], key.rows, value.rows
    if groups > 1:
        rk, rv = repeat_kv(rk, groups), repeat_kv(rv, groups)
    batch, heads, q_len, dim = query.shape
    kv_heads, p_len = pk.shape[0], pk.shape[-2]
    scale = scaling if scaling is not None else dim**-0.5
    folded = query.reshape(batch, kv_heads, groups * q_len, dim).transpose(0, 1).reshape(kv_heads, -1, dim)
    s_prefix = torch.bmm(folded, pk.transpose(1, 2)).view(kv_heads, batch, groups * q_len, p_len)
    s_prefix = s_prefix.transpose(0, 1).reshape(batch, heads, q_len, p_len)
    s_rows = torch.matmul(query, rk.transpose(-1, -2))
    scores = torch.cat([s_prefix, s_rows], dim=-1).float() * scale
    scores.masked_fill_(attention_mask.logical_not(), float("-inf"))
    weights = torch.softmax(scores, dim=-1).to(query.dtype)
    w_prefix = weights[..., :p_len].reshape(batch, kv_heads, groups * q_len, p_len)
    w_prefix = w_prefix.transpose(0, 1).reshape(kv_heads, -1, p_len)
    out = torch.bmm(w_prefix, pv).view(kv_heads, batch, groups * q_len, dim).transpose(0, 1)
    out = out.reshape(batch, heads, q_len, dim) + torch.matmul(weights[..., p_len:], rv)
    return out.transpose(1, 2).contiguous()


def bench_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    from cctest.backends._prefix_attention import SplitKV, shared_prefix_attention

    if _mode["attention"] == "old" and isinstance(key, SplitKV) and query.shape[2] == 1:
        return padded_repeat_attention(module, query, key, value, attention_mask, scaling), None
    return shared_prefix_attention(
        module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
    )


def build_model(vocab: int, layers: int, threads: int) -> Any:
    import torch
    from transformers import AttentionInterface, LlamaConfig, LlamaForCausalLM
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    shape = {**SMOLLM_135M_SHAPE, "num_hidden_layers": layers}
    model = LlamaForCausalLM(LlamaConfig(vocab_size=vocab, **shape)).eval()
    AttentionInterface.register(BENCH, bench_attention)
    AttentionMaskInterface.register(BENCH, sdpa_mask)
    model.set_attn_implementation(BENCH)
    return model


def layout(engine: Engine, backend: HFBackend, before: str, after: str, max_new: int) -> Any:
    """(rows' token counts, shares with the first row) of the request's batch; None: no shared layout."""
    request = engine._prepare(Prompt(text=before, suffix=after), None, None, None)
    inputs = backend.fim_inputs(request.texts, request.suffixes, max_new) or request.texts
    enc = backend.encode(inputs, max_new)
    shares = row_shares(enc.ids, enc.max_new, backend.context)
    return [len(x) for x in enc.ids], shares


def caches(lengths: list[int], shares: list[int], layers: int, steps: int) -> dict[str, Any]:
    """The three layouts' caches (same keys and values) and the plain row's, with their 2-D masks."""
    import torch
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    from cctest.backends._prefix_attention import SharedPrefixLayer

    kv = SMOLLM_135M_SHAPE["num_key_value_heads"]
    dim = SMOLLM_135M_SHAPE["hidden_size"] // SMOLLM_135M_SHAPE["num_attention_heads"]
    own = [n - d - 1 for n, d in zip(lengths, shares, strict=True)]
    rows, prefix, width = len(own), max(shares), max(own)
    groups = [torch.tensor(g) for g in decode_groups(own)]
    gen = torch.Generator().manual_seed(1)
    out: dict[str, Any] = {v: DynamicCache() for v in VARIANTS}
    for cache in out.values():
        cache.layers = []
    for _ in range(layers):
        pk, pv = (torch.randn(1, kv, prefix, dim, generator=gen) for _ in range(2))
        rk, rv = (torch.randn(rows, kv, width, dim, generator=gen) for _ in range(2))
        for name in ("padded+repeat", "padded+folded"):
            layer = SharedPrefixLayer(pk, pv, capacity=width + steps + 1)
            layer.update(rk, rv)
            out[name].layers.append(layer)
        layer = SharedPrefixLayer(pk, pv, capacity=width + steps + 1)
        part = [(g, rk[g][:, :, width - max(own[i] for i in g.tolist()) :]) for g in groups]
        layer.set_groups([(g, k, rv[g][:, :, width - k.shape[-2] :]) for g, k in part], steps + 1)
        out["grouped"].layers.append(layer)
        plain = DynamicLayer()
        plain.update(*(torch.randn(1, kv, lengths[0], dim, generator=gen) for _ in range(2)))
        out["plain"].layers.append(plain)
    mask = torch.zeros(rows, prefix + width + 1, dtype=torch.long)
    for i, (d, n) in enumerate(zip(shares, own, strict=True)):
        mask[i, :d] = 1
        mask[i, prefix + width - n :] = 1
    return {"caches": out, "mask": mask, "plain_mask": torch.ones(1, lengths[0] + 1, dtype=torch.long)}


def run_position(model: Any, lengths: list[int], shares: list[int], layers: int, steps: int) -> Any:
    from cctest.backends.loaded import cache_keyword

    cache_kw = cache_keyword(model)
    import torch

    state = caches(lengths, shares, layers, steps)
    mask, plain_mask = state["mask"], state["plain_mask"]
    rows = len(lengths)
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    worst = 0.0
    gen = torch.Generator().manual_seed(2)
    with torch.inference_mode():
        for _ in range(steps):
            token = torch.randint(0, model.config.vocab_size, (rows, 1), generator=gen)
            logits = {}
            for name in VARIANTS:
                _mode["attention"] = "old" if name == "padded+repeat" else "new"
                m = plain_mask if name == "plain" else mask
                t = time.process_time()
                got = model(
                    input_ids=token[:1] if name == "plain" else token,
                    attention_mask=m,
                    position_ids=m.sum(-1, keepdim=True) - 1,
                    use_cache=True,
                    **{cache_kw: state["caches"][name]},
                ).logits
                times[name].append(time.process_time() - t)
                logits[name] = got
            base = logits["padded+repeat"]
            worst = max(worst, *(float((logits[n] - base).abs().max()) for n in VARIANTS[1:3]))
            mask = torch.cat([mask, torch.ones(rows, 1, dtype=torch.long)], dim=-1)
            plain_mask = torch.cat([plain_mask, torch.ones(1, 1, dtype=torch.long)], dim=-1)
    per_step = {n: statistics.median(t[1:] if len(t) > 1 else t) for n, t in times.items()}
    return per_step, worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    position_arguments(ap, positions=4)
    ap.add_argument("--steps", type=int, default=6, help="decoding steps timed per position")
    ap.add_argument("--layers", type=int, default=SMOLLM_135M_SHAPE["num_hidden_layers"])
    ap.add_argument("--where", default="", help="only the positions whose file:line contains this")
    args = ap.parse_args(argv)
    if min(args.positions, args.mutants, args.max_new_tokens, args.steps, args.layers, args.threads) < 1:
        print(
            "--positions, -k, --max-new-tokens, --steps, --layers and --threads must be at least 1.",
            file=sys.stderr,
        )
        return 2
    positions = stdlib_positions(args.positions, random.Random(args.seed))
    positions = [p for p in positions if args.where in p[0]]
    backend = HFBackend(None, threads=args.threads)  # the bundled tokenizer: the 135M model's
    # the rows laid out as for the 135M model: its context, not the bundled model's
    backend.loaded.context = SMOLLM_135M_SHAPE["max_position_embeddings"]
    engine = Engine(backend, Settings(mutants=args.mutants))
    model = build_model(len(backend.tokenizer), args.layers, args.threads)
    print(
        f"{len(positions)} stdlib positions (seed {args.seed}), k = {args.mutants}, {args.threads} "
        f"thread(s); one decoding step of a 135M Llama-shaped model ({args.layers} layers), "
        f"CPU ms (median of {args.steps} steps after the first)"
    )
    totals = dict.fromkeys(VARIANTS, 0.0)
    for where, before, after in positions:
        lengths, shares = layout(engine, backend, before, after, args.max_new_tokens)
        if shares is None:
            print(f"  {where:<26} {len(lengths):2d} rows: no shared layout")
            continue
        per_step, worst = run_position(model, lengths, shares, args.layers, args.steps + 1)
        for name in VARIANTS:
            totals[name] += per_step[name]
        own = [n - d - 1 for n, d in zip(lengths, shares, strict=True)]
        cells = "  ".join(f"{name} {per_step[name] * 1000:6.0f}" for name in VARIANTS)
        padded = len(own) * max(own)
        print(
            f"  {where:<26} {len(lengths):2d} rows, own {sum(own):5d} tokens (padded {padded:5d})"
            f"  {cells}  padded+repeat/grouped {per_step['padded+repeat'] / per_step['grouped']:4.1f}x"
            f"  grouped/plain {per_step['grouped'] / per_step['plain']:4.1f}x"
            f"  (largest logit difference {worst:.1e})"
        )
    print(
        "  all positions: "
        + ", ".join(f"{name} {totals[name] * 1000:.0f} ms" for name in VARIANTS)
        + f"; padded+repeat/grouped {totals['padded+repeat'] / max(totals['grouped'], 1e-9):.1f}x"
        + f", padded+folded/grouped {totals['padded+folded'] / max(totals['grouped'], 1e-9):.1f}x"
        + f", grouped/plain {totals['grouped'] / max(totals['plain'], 1e-9):.1f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
