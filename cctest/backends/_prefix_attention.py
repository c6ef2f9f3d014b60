"""Attention over a key/value prefix shared by every row of a batch, stored once.

The prompt and its mutants share a long prefix. Repeating its key/value cache over the batch
(``DynamicCache.batch_repeat_interleave``) makes every decoding step read, and copy, that prefix
once per row; on a CPU, where a small model's decoding is bound by memory traffic, this is most of
the cost of a batch. Here the prefix stays a batch-1 tensor:

* ``SharedPrefixLayer`` replaces a ``DynamicLayer`` of the cache: it keeps the prefix's keys and
  values once, grows only the rows' own part, and hands the attention both halves
  (``SplitKV``) instead of one concatenated tensor;
* ``shared_prefix_attention`` (registered with transformers' ``AttentionInterface`` under
  ``IMPLEMENTATION``), when decoding, computes attention in two halves (a "cascade"): the scores
  against the prefix with the batch and the query heads of each key/value head folded into the
  query axis, so the one copy is read once, then the rows' own part; one softmax over both. When
  the rows' own tokens are prefilled (many queries per row) it is one fused SDPA over a per-call
  copy of the prefix instead: materialising every query's scores against a long prefix costs
  more than the copy. Plain tensors (no shared prefix) go to transformers' SDPA.

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
    """A cache layer holding a batch-1 prefix (or none) and each row's own keys/values.

    The rows' part lives in a buffer allocated for the whole generation (``capacity`` tokens), so
    a decoding step writes one slot instead of copying the cache (``DynamicLayer`` concatenates,
    which copies every row's cache at every step)."""

    def __init__(
        self, keys: torch.Tensor | None = None, values: torch.Tensor | None = None, capacity: int = 0
    ) -> None:
        super().__init__()
        self.prefix_keys, self.prefix_values = keys, values
        self.capacity = capacity
        self.length = 0
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, t = self.length, key_states.shape[-2]
        if self._k is None or self._v is None or n + t > self._k.shape[-2]:
            room = max(n + t, self.capacity, 2 * self._k.shape[-2] if self._k is not None else 0)
            k = key_states.new_empty((*key_states.shape[:2], room, key_states.shape[-1]))
            v = value_states.new_empty((*value_states.shape[:2], room, value_states.shape[-1]))
            if self._k is not None and self._v is not None and n:
                k[:, :, :n] = self._k[:, :, :n]
                v[:, :, :n] = self._v[:, :, :n]
            self._k, self._v = k, v
        self._k[:, :, n : n + t] = key_states
        self._v[:, :, n : n + t] = value_states
        self.length = n + t
        self.keys, self.values = self._k[:, :, : n + t], self._v[:, :, : n + t]
        if self.prefix_keys is None or self.prefix_values is None:
            return self.keys, self.values
        return SplitKV(self.prefix_keys, self.keys), SplitKV(self.prefix_values, self.values)

    def get_seq_length(self) -> int:
        prefix = int(self.prefix_keys.shape[-2]) if self.prefix_keys is not None else 0
        return prefix + self.length

    def batch_repeat_interleave(self, repeats: int) -> None:  # beam search and the like
        raise NotImplementedError("the shared-prefix cache serves greedy and sampled generation only")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise NotImplementedError("the shared-prefix cache serves greedy and sampled generation only")


def shared_prefix_cache(
    prefix: DynamicCache | None, layers: int, capacity: int, length: int | None = None
) -> DynamicCache:
    """A cache for a batch whose rows share ``prefix`` (the cache of a batch-1 forward over the
    shared tokens; None when the rows share nothing), or only its first ``length`` tokens (views,
    not copies), with room for ``capacity`` own tokens."""
    cache = DynamicCache()
    if prefix is not None and length != 0:
        cut = slice(None, length)
        layers_kv = [
            (getattr(layer, "keys", None), getattr(layer, "values", None)) for layer in prefix.layers
        ]
        layers_kv = [
            (k[..., cut, :], v[..., cut, :]) if k is not None and v is not None else (k, v)
            for k, v in layers_kv
        ]
        cache.layers = [SharedPrefixLayer(k, v, capacity) for k, v in layers_kv]
    else:
        cache.layers = [SharedPrefixLayer(capacity=capacity) for _ in range(layers)]
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
    batch = query.shape[0]
    if query.shape[2] > 1:
        # the rows' own tokens, prefilled: one fused SDPA over each row's copy of the prefix and
        # its own part. The cascade below would materialise every query's scores against the whole
        # prefix (rows x tokens x prefix, in float32, several passes): in prefill that costs more
        # than the model's matmuls; a copy of the prefix per row (keys and values only) costs less.
        if attention_mask is None:  # no mask given: all of the prefix, causal within the own part
            q_len, own, p_len = query.shape[2], key.rows.shape[-2], key.prefix.shape[-2]
            hidden = torch.ones(q_len, own, dtype=torch.bool, device=query.device).triu(own - q_len + 1)
            seen = torch.ones(q_len, p_len, dtype=torch.bool, device=query.device)
            attention_mask = torch.cat([seen, hidden.logical_not()], dim=-1)[None, None]
        k = torch.cat([key.prefix.expand(batch, -1, -1, -1), key.rows], dim=-2)
        v = torch.cat([value.prefix.expand(batch, -1, -1, -1), value.rows], dim=-2)
        out, _ = sdpa_attention_forward(
            module, query, k, v, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
        # a padding query of a row that shares none of the prefix sees no key at all: its output is
        # NaN, and a NaN key or value, even masked, would reach the real tokens (0 * NaN)
        return out.nan_to_num(0.0), None
    return _cascade(module, query, key, value, attention_mask, scaling), None


def _cascade(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: SplitKV,
    value: SplitKV,
    attention_mask: torch.Tensor | None,
    scaling: float | None,
) -> torch.Tensor:
    """Decoding: the scores against the one prefix copy with the batch (and the query heads that
    share a key/value head) folded into the query axis, then the rows' own part; one softmax."""
    groups = int(getattr(module, "num_key_value_groups", 1) or 1)
    pk, pv, rk, rv = key.prefix[0], value.prefix[0], key.rows, value.rows
    if groups > 1:
        rk, rv = repeat_kv(rk, groups), repeat_kv(rv, groups)
    batch, heads, q_len, dim = query.shape
    kv_heads, p_len = pk.shape[0], pk.shape[-2]
    scale = scaling if scaling is not None else dim**-0.5
    # [kv_heads, batch * groups * q_len, dim]: head h reads key/value head h // groups (repeat_kv's
    # layout), so the prefix is neither repeated over the batch nor over the groups
    folded = query.reshape(batch, kv_heads, groups * q_len, dim).transpose(0, 1).reshape(kv_heads, -1, dim)
    s_prefix = torch.bmm(folded, pk.transpose(1, 2)).view(kv_heads, batch, groups * q_len, p_len)
    s_prefix = s_prefix.transpose(0, 1).reshape(batch, heads, q_len, p_len)
    s_rows = torch.matmul(query, rk.transpose(-1, -2))
    scores = torch.cat([s_prefix, s_rows], dim=-1).float() * scale
    if attention_mask is not None:  # in place: scores is this call's own fresh tensor
        if attention_mask.dtype == torch.bool:
            scores.masked_fill_(attention_mask.logical_not(), float("-inf"))
        else:
            scores.add_(attention_mask)
    weights = torch.softmax(scores, dim=-1).to(query.dtype)
    w_prefix = weights[..., :p_len].reshape(batch, kv_heads, groups * q_len, p_len)
    w_prefix = w_prefix.transpose(0, 1).reshape(kv_heads, -1, p_len)
    out = torch.bmm(w_prefix, pv).view(kv_heads, batch, groups * q_len, dim).transpose(0, 1)
    out = out.reshape(batch, heads, q_len, dim) + torch.matmul(weights[..., p_len:], rv)
    return out.transpose(1, 2).contiguous()


def enable(model: Any) -> bool:
    """Switch ``model`` to the shared-prefix attention; False if the model cannot use it."""
    if getattr(model.config, "_attn_implementation", None) == IMPLEMENTATION:
        return True
    text = model.config.get_text_config(decoder=True)
    if getattr(text, "sliding_window", None) or any(
        t != "full_attention" for t in getattr(text, "layer_types", None) or ()
    ):
        return False  # a sliding window forgets old keys; this cache keeps all of them
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
