"""Attention over a key/value prefix shared by every row of a batch, stored once.

The prompt and its mutants share a long prefix. Repeating its key/value cache over the batch
(``DynamicCache.batch_repeat_interleave``) makes every decoding step read, and copy, that prefix
once per row; on a CPU, where a small model's decoding is bound by memory traffic, this is most of
the cost of a batch. Here the prefix stays a batch-1 tensor:

* ``SharedPrefixLayer`` replaces a ``DynamicLayer`` of the cache: it keeps the prefix's keys and
  values once, grows only the rows' own part, and hands the attention both halves
  (``SplitKV``) instead of one concatenated tensor. The own part may be kept per group of rows
  (``set_groups``), each group as long as its longest row's own tokens, so rows that own a few
  tokens do not read (or copy) padding up to the longest row's at every step;
* ``shared_prefix_attention`` (registered with transformers' ``AttentionInterface`` under
  ``IMPLEMENTATION``), when decoding, computes attention in two halves (a "cascade"): the scores
  against the prefix with the batch and the query heads of each key/value head folded into the
  query axis, so the one copy is read once, then each group's own part, its query heads folded
  the same way (no ``repeat_kv`` copy); one softmax over both. When
  the rows' own tokens are prefilled (many queries per row) it is one fused SDPA over a per-call
  copy of the prefix instead: materialising every query's scores against a long prefix costs
  more than the copy. Plain tensors (no shared prefix) go to transformers' SDPA.

Masks are transformers' SDPA masks, built for the full length (prefix + rows), so padding between
a row's prefix and its suffix is masked as usual. Models whose attention does not go through the
``AttentionInterface`` cannot use this; ``enable`` says so and the caller falls back to repeating
the prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from transformers import AttentionInterface, DynamicCache
from transformers.cache_utils import DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

IMPLEMENTATION = "cctest_shared_prefix"
# a group of rows prefills its own tokens through the fused SDPA (a copy of the prefix per row)
# above this many queries (rows x tokens), through the cascade (no copy) at or below it: on a CPU,
# one layer of a 135M model's shape with a 1,960-token prefix took 8.0 ms fused vs 1.8 ms cascade
# for 4 rows x 10 tokens, about the same at 2 x 40, and more cascade beyond
FUSED_MIN_QUERIES = 48


class OwnGroup(NamedTuple):
    rows: slice  # which rows: a run of the batch's rows taken in ``SplitKV.order``
    part: torch.Tensor  # [rows, heads, L, dim]: their own tokens, the last L of the batch's own columns


class SplitKV(NamedTuple):
    prefix: torch.Tensor  # [1, heads, P, dim]: the shared prefix, once
    rows: torch.Tensor | None  # [batch, heads, L, dim]: each row's own tokens (None: see groups)
    groups: tuple[OwnGroup, ...] = ()  # the rows' own tokens kept per group of rows, unpadded
    order: torch.Tensor | None = None  # the batch's rows in the groups' order (None: as they are)

    def own(self) -> tuple[OwnGroup, ...]:
        """The rows' own part as groups (one group of every row when it is one tensor)."""
        if self.groups:
            return self.groups
        assert self.rows is not None
        return (OwnGroup(slice(None), self.rows),)

    def padded(self, batch: int) -> torch.Tensor:
        """The rows' own part as one tensor, each group right-aligned in the widest one's columns
        (zeros before a group's own: those columns are masked for its rows)."""
        if self.rows is not None:
            return self.rows
        first = self.groups[0].part
        width = max(g.part.shape[-2] for g in self.groups)
        out = first.new_zeros((batch, first.shape[1], width, first.shape[-1]))
        for g in self.groups:
            at = self.order[g.rows] if self.order is not None else g.rows
            out[at, :, width - g.part.shape[-2] :] = g.part
        return out


class _Own:
    """One group of rows' own keys and values, in buffers with room to grow, so that appending a
    decoded token writes one slot instead of copying the cache (``DynamicLayer`` concatenates)."""

    def __init__(self, rows: slice, keys: torch.Tensor, values: torch.Tensor, room: int) -> None:
        self.rows, self.length = rows, keys.shape[-2]
        self._k = keys.new_empty((*keys.shape[:2], self.length + room, keys.shape[-1]))
        self._v = values.new_empty((*values.shape[:2], self.length + room, values.shape[-1]))
        self._k[:, :, : self.length] = keys
        self._v[:, :, : self.length] = values

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        keys, values = keys[self.rows], values[self.rows]  # the batch's new tokens: this group's
        n, t = self.length, keys.shape[-2]
        if n + t > self._k.shape[-2]:
            room = max(n + t, 2 * self._k.shape[-2])
            k, v = (
                self._k.new_empty((*self._k.shape[:2], room, self._k.shape[-1])),
                self._v.new_empty((*self._v.shape[:2], room, self._v.shape[-1])),
            )
            k[:, :, :n], v[:, :, :n] = self._k[:, :, :n], self._v[:, :, :n]
            self._k, self._v = k, v
        self._k[:, :, n : n + t] = keys
        self._v[:, :, n : n + t] = values
        self.length = n + t

    @property
    def keys(self) -> torch.Tensor:
        return self._k[:, :, : self.length]

    @property
    def values(self) -> torch.Tensor:
        return self._v[:, :, : self.length]


class SharedPrefixLayer(DynamicLayer):
    """A cache layer holding a batch-1 prefix (or none) and each row's own keys/values.

    The rows' own part is one tensor for the whole batch (room for ``capacity`` tokens), or, once
    ``set_groups`` has split it, a tensor per group of rows as long as that group's own tokens: a
    row that owns one token then does not read (and its attention does not copy) the padding up
    to the longest row's own tokens at every decoding step. A group's columns are the last of the
    batch's own columns (rows are right-aligned), so the attention mask, built for the whole
    width, still applies."""

    def __init__(
        self, keys: torch.Tensor | None = None, values: torch.Tensor | None = None, capacity: int = 0
    ) -> None:
        super().__init__()
        self.prefix_keys, self.prefix_values = keys, values
        self.capacity = capacity
        self.length = 0  # the batch's own columns (the widest group's)
        self._own: list[_Own] = []
        self._order: torch.Tensor | None = None  # the rows in the groups' order (None: as they are)

    def set_groups(self, groups: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], room: int) -> None:
        """The rows' own part, per group: (row indices, keys, values), each group's tokens the
        last of the batch's own columns; ``room``: the tokens each group will still append."""
        if not self.is_initialized:
            self.lazy_initialization(groups[0][1], groups[0][2])
        order = torch.cat([rows for rows, _, _ in groups])
        in_order = bool((order == torch.arange(len(order), device=order.device)).all())
        self._order = None if in_order else order
        self._own, at = [], 0
        for rows, k, v in groups:  # each group a run of rows in that order: slices, not copies
            self._own.append(_Own(slice(at, at + len(rows)), k, v, room))
            at += len(rows)
        self.length = max(own.length for own in self._own)
        self._expose()

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if not self._own:
            none = key_states[:, :, :0]
            room = max(key_states.shape[-2], self.capacity)
            self._own = [_Own(slice(None), none, value_states[:, :, :0], room)]
        if self._order is not None:
            key_states, value_states = key_states[self._order], value_states[self._order]
        for own in self._own:
            own.append(key_states, value_states)
        self.length += key_states.shape[-2]
        self._expose()
        if len(self._own) > 1:
            prefix_k, prefix_v = self.prefix_keys, self.prefix_values
            if prefix_k is None or prefix_v is None:  # no shared prefix: an empty one
                prefix_k, prefix_v = key_states[:1, :, :0], value_states[:1, :, :0]
            k_groups = tuple(OwnGroup(own.rows, own.keys) for own in self._own)
            v_groups = tuple(OwnGroup(own.rows, own.values) for own in self._own)
            order = self._order
            return SplitKV(prefix_k, None, k_groups, order), SplitKV(prefix_v, None, v_groups, order)
        if self.prefix_keys is None or self.prefix_values is None:
            return self.keys, self.values
        return SplitKV(self.prefix_keys, self.keys), SplitKV(self.prefix_values, self.values)

    def _expose(self) -> None:
        """``keys``/``values`` as transformers reads them: the rows' own part when it is one
        tensor; the widest group's when it is grouped (its length is the cache's)."""
        widest = max(self._own, key=lambda own: own.length)
        self.keys, self.values = widest.keys, widest.values

    def row(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Row ``i``'s keys and values over every column of the cache (the prefix, then the
        batch's own columns), [1, heads, prefix + own, dim]; the columns before its group's own
        part are zeros (its mask hides them)."""
        at = i if self._order is None else int((self._order == i).nonzero()[0, 0])
        for own in self._own:
            lo, hi = own.rows.start or 0, own.rows.stop
            if lo <= at and (hi is None or at < hi):
                break
        else:
            raise IndexError(f"row {i} is in no group of the cache")
        keys, values = own.keys[at - lo : at - lo + 1], own.values[at - lo : at - lo + 1]
        if own.length < self.length:  # right-aligned in the batch's own columns
            pad = (0, 0, self.length - own.length, 0)
            keys, values = torch.nn.functional.pad(keys, pad), torch.nn.functional.pad(values, pad)
        if self.prefix_keys is not None and self.prefix_values is not None:
            keys = torch.cat([self.prefix_keys, keys], dim=-2)
            values = torch.cat([self.prefix_values, values], dim=-2)
        return keys, values

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


def own_cache(kv: Sequence[tuple[torch.Tensor, torch.Tensor]], room: int) -> DynamicCache:
    """A cache without a prefix holding ``kv`` (per layer, keys and values [rows, heads, n,
    dim]: one row, or rows that go on together) as the rows' own part, in buffers with room for
    ``room`` more tokens: a decoded token is written into a slot instead of the rows being copied
    (``DynamicLayer``), and attention reads the keys as plain tensors."""
    cache = shared_prefix_cache(None, len(kv), room)
    layers: list[Any] = cache.layers  # SharedPrefixLayer, each
    for layer, (keys, values) in zip(layers, kv, strict=True):
        rows = torch.arange(keys.shape[0], dtype=torch.long, device=keys.device)
        layer.set_groups([(rows, keys, values)], room)
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
    few = attention_mask is not None and batch * query.shape[2] <= FUSED_MIN_QUERIES
    if query.shape[2] > 1 and not few:
        # the rows' own tokens, prefilled: one fused SDPA over each row's copy of the prefix and
        # its own part. The cascade below would materialise every query's scores against the whole
        # prefix (rows x tokens x prefix, in float32, several passes): in prefill that costs more
        # than the model's matmuls; a copy of the prefix per row (keys and values only) costs less.
        # For a few queries it is the other way round (the copies cost more than the scores);
        # the cascade needs the mask to be causal among the own tokens.
        rows_k, rows_v = key.padded(batch), value.padded(batch)
        if attention_mask is None:  # no mask given: all of the prefix, causal within the own part
            q_len, own, p_len = query.shape[2], rows_k.shape[-2], key.prefix.shape[-2]
            hidden = torch.ones(q_len, own, dtype=torch.bool, device=query.device).triu(own - q_len + 1)
            seen = torch.ones(q_len, p_len, dtype=torch.bool, device=query.device)
            attention_mask = torch.cat([seen, hidden.logical_not()], dim=-1)[None, None]
        k = torch.cat([key.prefix.expand(batch, -1, -1, -1), rows_k], dim=-2)
        v = torch.cat([value.prefix.expand(batch, -1, -1, -1), rows_v], dim=-2)
        out, _ = sdpa_attention_forward(
            module, query, k, v, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
        # a padding query of a row that shares none of the prefix sees no key at all: its output is
        # NaN, and a NaN key or value, even masked, would reach the real tokens (0 * NaN)
        return out.nan_to_num(0.0), None
    out = cascade_attention(module, query, key, value, attention_mask, scaling)
    # a few rows' own tokens prefilled here: a padding query that sees no key is NaN (see above)
    return (out.nan_to_num(0.0) if query.shape[2] > 1 else out), None


def cascade_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: SplitKV,
    value: SplitKV,
    attention_mask: torch.Tensor | None,
    scaling: float | None,
) -> torch.Tensor:
    """Decoding: the scores against the one prefix copy with the batch (and the query heads that
    share a key/value head) folded into the query axis, then, per group of rows, against the
    group's own part with its query heads folded the same way (no ``repeat_kv`` copy); one
    softmax over both for each row."""
    groups = int(getattr(module, "num_key_value_groups", 1) or 1)
    pk, pv = key.prefix[0], value.prefix[0]
    order = key.order
    if order is not None:  # the rows in the groups' order, so each group is a slice (no copies)
        query = query[order]
        if attention_mask is not None and attention_mask.shape[0] > 1:
            attention_mask = attention_mask[order]
    batch, heads, q_len, dim = query.shape
    kv_heads, p_len = pk.shape[0], pk.shape[-2]
    scale = scaling if scaling is not None else dim**-0.5
    # [batch, kv_heads, groups * q_len, dim]: head h reads key/value head h // groups (repeat_kv's
    # layout), so no key or value is repeated, neither over the batch nor over the groups
    q4 = query.reshape(batch, kv_heads, groups * q_len, dim)
    folded = q4.transpose(0, 1).reshape(kv_heads, -1, dim)
    s_prefix = torch.bmm(folded, pk.transpose(1, 2)).view(kv_heads, batch, groups * q_len, p_len)
    s_prefix = s_prefix.transpose(0, 1)  # [batch, kv_heads, groups * q_len, P]
    total = attention_mask.shape[-1] if attention_mask is not None else None
    w_prefix = query.new_empty((batch, kv_heads, groups * q_len, p_len))
    out_own = query.new_empty((batch, kv_heads, groups * q_len, dim))
    for g_k, g_v in zip(key.own(), value.own(), strict=True):
        at = g_k.rows
        own = g_k.part.shape[-2]
        s_own = torch.matmul(q4[at], g_k.part.transpose(-1, -2))  # [rows, kv_heads, groups * q_len, L]
        scores = torch.cat([s_prefix[at], s_own], dim=-1).float() * scale
        if attention_mask is not None and total is not None:
            mask = attention_mask[at] if attention_mask.shape[0] > 1 else attention_mask
            # the prefix's columns and the group's own (the last of the row's columns), with the
            # groups axis apart from the queries': [rows, 1, 1, q_len, P + L]
            mask = torch.cat([mask[..., :p_len], mask[..., total - own :]], dim=-1).unsqueeze(2)
            view = scores.view(scores.shape[0], kv_heads, groups, q_len, p_len + own)
            if mask.dtype == torch.bool:  # in place: scores is this call's own fresh tensor
                view.masked_fill_(mask.logical_not(), float("-inf"))
            else:
                view.add_(mask)
        weights = torch.softmax(scores, dim=-1).to(query.dtype)
        w_prefix[at] = weights[..., :p_len]
        out_own[at] = torch.matmul(weights[..., p_len:], g_v.part)
    w = w_prefix.transpose(0, 1).reshape(kv_heads, -1, p_len)
    out = torch.bmm(w, pv).view(kv_heads, batch, groups * q_len, dim).transpose(0, 1) + out_own
    out = out.reshape(batch, heads, q_len, dim).transpose(1, 2)
    if order is not None:  # back in the batch's order
        return out.new_empty(out.shape).index_copy_(0, order, out)
    return out.contiguous()


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
    "OwnGroup",
    "SharedPrefixLayer",
    "SplitKV",
    "enable",
    "own_cache",
    "shared_prefix_attention",
    "shared_prefix_cache",
]
