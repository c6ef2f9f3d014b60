"""The HF backend's batch and the key/value cache ``generate`` starts from.

A batch's rows are laid out ``[prefix][padding][suffix_i]`` (``build_batch``); its shared prefix
is run through the model once (``prefill``), kept for the next call where that call's prefix
extends it (``prefix_kv``), and, with the one-copy prefix (``_prefix_attention.py``), the rows'
own tokens are prefilled in groups of rows of about the same length (``prefill_rows``). The
module docstring of ``hf.py`` describes the whole.

Imported by ``hf.py`` when it first generates (it needs torch and transformers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from ._layout import CALL_TOKENS, common_length, decode_groups, row_groups
from ._prefix_attention import own_cache, shared_prefix_cache
from .loaded import Reused

if TYPE_CHECKING:
    from ._encode import Encoding
    from .loaded import LoadedModel


class Batch(NamedTuple):
    """An ``Encoding`` as tensors on the model's device."""

    input_ids: Any  # (rows, prefix + width): [prefix][padding][suffix_i]
    mask: Any  # 1 over tokens, 0 over the padding
    prefix: int
    width: int  # the longest row's own tokens

    @property
    def start(self) -> int:
        """Where the generated tokens begin in every row."""
        return self.prefix + self.width


def build_batch(m: LoadedModel, enc: Encoding, shares: list[int] | None = None) -> Batch:
    """The rows as ``[prefix][padding][suffix_i]`` token ids, with the mask over the padding.

    ``shares``: per row, how many of the first row's leading tokens it shares; the prefix is
    then the longest of them, and a row that shares less masks the rest of the prefix out
    (its own tokens are the suffix). None: every row shares ``enc.prefix`` tokens."""
    rows = len(enc.ids)
    shared = shares if shares is not None else [enc.prefix] * rows
    prefix = max(shared)
    width = max(len(x) - d for x, d in zip(enc.ids, shared, strict=True))  # longest suffix
    input_ids = torch.full((rows, prefix + width), m.pad_id, dtype=torch.long)
    mask = torch.zeros((rows, prefix + width), dtype=torch.long)
    for i, (x, d) in enumerate(zip(enc.ids, shared, strict=True)):
        suffix = x[d:]
        input_ids[i, :d] = torch.tensor(x[:d], dtype=torch.long)
        input_ids[i, prefix + width - len(suffix) :] = torch.tensor(suffix, dtype=torch.long)
        mask[i, :d] = 1
        mask[i, prefix + width - len(suffix) :] = 1
    return Batch(input_ids.to(m.device), mask.to(m.device), prefix, width)


def prefill(
    m: LoadedModel, batch: Batch, max_new: int, shares: list[int] | None = None, *, reuse_prefix: bool
) -> Any | None:
    """The key/value cache ``generate`` starts from: the shared prefix run through the model
    once (its cache is what counts, not its logits), one copy that attention reads for all
    rows, or a copy per row for a model without the attention interface; None: no prefix.
    With ``shares`` the rows' own tokens (all but their last) are in it too. ``reuse_prefix``:
    the backend's setting (``prefix_kv``)."""
    if batch.prefix == 0 and len(batch.input_ids) == 1 and batch.width > 1 and reuse_prefix:
        return plain_cache(m, batch, max_new, reuse_prefix=reuse_prefix)
    prefix_cache = None
    if batch.prefix > 0:
        prefix_cache = prefix_kv(m, batch.input_ids[:1, : batch.prefix], reuse_prefix=reuse_prefix)
    if m.cascade:
        cache = shared_prefix_cache(prefix_cache, m.layers, batch.width + max_new + 1)
        if shares is not None and batch.width > 1:
            prefill_rows(m, batch, shares, prefix_cache, cache, max_new)
        return cache
    if prefix_cache is not None and len(batch.input_ids) > 1:
        prefix_cache.batch_repeat_interleave(len(batch.input_ids))
    return prefix_cache


def plain_cache(m: LoadedModel, batch: Batch, max_new: int, *, reuse_prefix: bool) -> Any:
    """One row without a shared prefix (a plain completion): the cache of its tokens but the
    last (``prefix_kv``, so the next call reuses it), which ``generate`` goes on from. With
    the shared-prefix attention it is the row's own part of that cache (one buffer with room
    for the new tokens, read by plain attention), not a prefix read in two parts."""
    head = prefix_kv(m, batch.input_ids[:, :-1], reuse_prefix=reuse_prefix)
    if not m.cascade:
        return head
    return own_cache([(got.keys, got.values) for got in head.layers], max_new + 1)


def prefix_kv(m: LoadedModel, ids: Any, *, reuse_prefix: bool) -> Any:
    """The key/value cache (a batch-1 ``DynamicCache``) of ``ids`` ([1, n] on the model's
    device). Where the last call's prefix (``LoadedModel.reused``) begins them, only the tokens
    past what both share are run, on top of a copy of its cache cut to that length; the
    result is kept for the next call in its place (one prefix per model). The keys depend on
    the token ids and the model only, so every view of the model shares it. Chunked, the
    same keys are computed in other groupings of floating-point sums: equal up to rounding.
    Without ``reuse_prefix`` every call runs all of ``ids``, and nothing is kept."""
    keep = {"logits_to_keep": 1} if m.keeps_logits else {}
    if not reuse_prefix:
        return m.model(input_ids=ids, use_cache=True, **keep)[m.cache_kw]
    new = [int(t) for t in ids[0].tolist()]
    old, m.reused = m.reused, None  # nothing kept if this call fails (out of memory)
    n = common_length(old.ids, new) if old is not None else 0
    m.prefix_tokens[0] += n
    m.prefix_tokens[1] += len(new) - n
    if old is None or n == 0:
        cache = m.model(input_ids=ids, use_cache=True, **keep)[m.cache_kw]
    else:
        cache = DynamicCache()
        for index, (k, v) in enumerate(old.kv):
            cache.update(k[..., :n, :], v[..., :n, :], index)
        if n < len(new):
            m.model(input_ids=ids[:, n:], use_cache=True, **{m.cache_kw: cache}, **keep)
    layers = list(getattr(cache, "layers", ()))
    # only plain full-attention layers: a sliding window's or a quantized layer's keys are
    # not the prefix's keys, column for column
    if layers and len(layers) == m.layers and all(type(layer) is DynamicLayer for layer in layers):
        kv = [(layer.keys, layer.values) for layer in layers]
        if all(k is not None and k.shape[-2] == len(new) for k, _ in kv):
            m.reused = Reused(new, kv)
    return cache


def prefill_rows(
    m: LoadedModel, batch: Batch, shares: list[int], prefix_cache: Any, cache: Any, max_new: int = 0
) -> None:
    """Every row's own tokens but its last into ``cache``, in groups of rows of about the same
    length (``row_groups``), so a row that parts from the first row early (a renamed
    parameter) does not make every row of the batch as long as it; ``generate`` then feeds
    the last token of every row, together. The cache keeps the rows' own keys in groups too
    (``decode_groups``: each as long as its longest row's own tokens, with room for
    ``max_new`` more), so decoding does not read the padding up to the longest row either."""
    p, w = batch.prefix, batch.width
    before_last = p + w - 1  # the column of every row's last token
    own = [int(n) for n in batch.mask[:, p:before_last].sum(-1).tolist()]
    # per layer, each row's own keys and values (None: it owns none besides its last token)
    got_k: list[list[Any]] = [[None] * len(own) for _ in range(m.layers)]
    got_v: list[list[Any]] = [[None] * len(own) for _ in range(m.layers)]
    positions = (batch.mask.cumsum(-1) - 1).clamp(min=0)
    keep = {"logits_to_keep": 1} if m.keeps_logits else {}
    for group in row_groups(own, CALL_TOKENS):
        width = max(own[i] for i in group)
        if width == 0:
            continue
        rows = torch.tensor(group, device=batch.input_ids.device)
        cols = slice(before_last - width, before_last)
        # the prefix the group's rows read is as long as the most any of them shares: the rest
        # is masked out for all of them, and attention need not see it
        seen = max(shares[i] for i in group)
        part = shared_prefix_cache(prefix_cache, m.layers, width, seen)
        m.model(
            input_ids=batch.input_ids[rows, cols],
            attention_mask=torch.cat([batch.mask[rows, :seen], batch.mask[rows, cols]], dim=-1),
            position_ids=positions[rows, cols],
            use_cache=True,
            **{m.cache_kw: part},
            **keep,
        )
        layers: list[Any] = part.layers  # SharedPrefixLayer: .keys/.values are the rows' own
        for layer, got in enumerate(layers):
            for j, i in enumerate(group):  # views of the row's own (right-aligned) columns
                got_k[layer][i] = got.keys[j, :, width - own[i] :]
                got_v[layer][i] = got.values[j, :, width - own[i] :]
    decode = decode_groups(own)
    for layer in range(m.layers):
        like = next(k for k in got_k[layer] if k is not None)
        parts = []
        for group in decode:
            width = max(own[i] for i in group)
            k = like.new_zeros((len(group), like.shape[0], width, like.shape[-1]))
            v = torch.zeros_like(k)
            for j, i in enumerate(group):
                if own[i]:
                    k[j, :, width - own[i] :] = got_k[layer][i]
                    v[j, :, width - own[i] :] = got_v[layer][i]
            parts.append((torch.tensor(group, device=k.device), k, v))
        cache.layers[layer].set_groups(parts, max_new + 1)


__all__ = ["Batch", "Reused", "build_batch", "plain_cache", "prefill", "prefill_rows", "prefix_kv"]
