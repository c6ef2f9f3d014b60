"""Attention over a key/value prefix shared by every row of a batch, stored once.

The prompt and its mutants share a long prefix. Repeating its key/value cache over the batch
(``DynamicCache.batch_repeat_interleave``) makes every decoding step read, and copy, that prefix
once per row; on a CPU, where a small model's decoding is bound by memory traffic, this is most of
the cost of a batch. Here the prefix stays a batch-1 tensor:

* ``SharedPrefixLayer`` replaces a ``DynamicLayer`` of the cache: it keeps the prefix's keys and
  values once, grows only the rows' own part, and hands the attention both halves
  (``SplitKV``) instead of one concatenated tensor;
* ``shared_prefix_attention`` (registered with transformers' ``AttentionInterface`` under
  ``IMPLEMENTATION``) computes attention in two halves (a "cascade"): the scores against the
  prefix with the batch folded into the query axis, so the one copy is read once, then the rows'
  own part; one softmax over both. Plain tensors (no shared prefix) go to transformers' SDPA.

Masks are transformers' SDPA masks, built for the full length (prefix + rows), so padding between
a row's prefix and its suffix is masked as usual. Models whose attention does not go through the
``AttentionInterface`` cannot use this; ``enable`` says so and the caller falls back to repeating
the prefix.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from transformers import AttentionInterface, DynamicCache
from transformers.cache_utils import DynamicLayer
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

IMPLEMENTATION = "cctest_shared_prefix"


class SplitKV(NamedTuple):
    prefix: torch.Tensor  # [1, heads, P, dim]: the shared prefix, once
    rows: torch.Tensor  # [batch, heads, L, dim]: each row's own tokens


class SharedPrefixLayer(DynamicLayer):
    """A cache layer holding a batch-1 prefix and growing each row's own keys/values."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        super().__init__()
        self.prefix_keys, self.prefix_values = keys, values
        self.lazy_initialization(keys, values)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self.values = torch.cat([self.values, value_states], dim=-2)
        return SplitKV(self.prefix_keys, self.keys), SplitKV(self.prefix_values, self.values)

    def get_seq_length(self) -> int:
        own = self.keys.shape[-2] if self.keys is not None and self.keys.numel() else 0
        return int(self.prefix_keys.shape[-2]) + int(own)


def shared_prefix_cache(cache: DynamicCache) -> DynamicCache:
    """The prefix's cache (from a batch-1 forward) with every layer sharing its prefix."""
    for i, layer in enumerate(cache.layers):
        cache.layers[i] = SharedPrefixLayer(layer.keys, layer.values)
    return cache


def shared_prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: Any,
    value: Any,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    if not isinstance(key, SplitKV):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    groups = int(getattr(module, "num_key_value_groups", 1) or 1)
    pk, rk, pv, rv = key.prefix, key.rows, value.prefix, value.rows
    if groups > 1:
        pk, rk, pv, rv = (repeat_kv(t, groups) for t in (pk, rk, pv, rv))
    batch, heads, q_len, dim = query.shape
    p_len = pk.shape[-2]
    scale = scaling if scaling is not None else dim**-0.5
    # the batch folded into the query axis: [heads, batch * q_len, dim] against the one prefix copy
    folded = query.transpose(0, 1).reshape(heads, batch * q_len, dim)
    s_prefix = torch.bmm(folded, pk[0].transpose(1, 2)).view(heads, batch, q_len, p_len).transpose(0, 1)
    s_rows = torch.matmul(query, rk.transpose(-1, -2))
    scores = torch.cat([s_prefix, s_rows], dim=-1).float() * scale
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, float("-inf"))
        else:
            scores = scores + attention_mask
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0).to(query.dtype)
    w_prefix = weights[..., :p_len].transpose(0, 1).reshape(heads, batch * q_len, p_len)
    out = torch.bmm(w_prefix, pv[0]).view(heads, batch, q_len, dim).transpose(0, 1)
    out = out + torch.matmul(weights[..., p_len:], rv)
    return out.transpose(1, 2).contiguous(), None


def enable(model: Any) -> bool:
    """Switch ``model`` to the shared-prefix attention; False if the model cannot use it."""
    if getattr(model.config, "_attn_implementation", None) == IMPLEMENTATION:
        return True
    can = getattr(model, "_can_set_attn_implementation", None)
    if can is None or not can():
        return False
    AttentionInterface.register(IMPLEMENTATION, shared_prefix_attention)
    AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)
    try:
        model.set_attn_implementation(IMPLEMENTATION)
    except (ValueError, TypeError, AttributeError, ImportError):
        return False
    return getattr(model.config, "_attn_implementation", None) == IMPLEMENTATION


__all__ = [
    "IMPLEMENTATION",
    "SharedPrefixLayer",
    "SplitKV",
    "enable",
    "shared_prefix_attention",
    "shared_prefix_cache",
]
