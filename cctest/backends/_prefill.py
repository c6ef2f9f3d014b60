"""The HF backend's batch and the key/value cache ``generate`` starts from.

A ``Prefill`` owns one batch's tensors and cache: the rows of a ``BatchPlan`` (``_plan.py``) laid
out ``[prefix][padding][suffix_i]`` (``batch``); its shared prefix run through the model once
(``run``), kept for the next call where that call's prefix extends it (``prefix_kv``), and, with
the one-copy prefix (``_prefix_attention.py``), the rows' own tokens prefilled in groups of rows
of about the same length (``prefill_rows``). The module docstring of ``hf.py`` describes the
whole.

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
    from ._plan import BatchPlan
    from .loaded import LoadedModel


class Batch(NamedTuple):
    """A ``BatchPlan``'s rows as tensors on the model's device."""

    input_ids: Any  # (rows, prefix + width): [prefix][padding][suffix_i]
    mask: Any  # 1 over tokens, 0 over the padding
    prefix: int
    width: int  # the longest row's own tokens

    @property
    def start(self) -> int:
        """Where the generated tokens begin in every row."""
        return self.prefix + self.width


class Prefill:
    """A batch's tensors on the model's device (``batch``, laid out from a ``BatchPlan``) and the
    key/value cache ``generate`` starts from (``run``), kept as ``cache``."""

    def __init__(self, m: LoadedModel, plan: BatchPlan, *, reuse_prefix: bool) -> None:
        self.m, self.plan, self.reuse_prefix = m, plan, reuse_prefix
        self.batch = self._build()
        self.cache: Any | None = None

    def _build(self) -> Batch:
        """The rows as ``[prefix][padding][suffix_i]`` token ids, with the mask over the padding.

        With the plan's ``shares`` (per row, how many of the first row's leading tokens it
        shares) the prefix is the longest of them, and a row that shares less masks the rest
        of the prefix out (its own tokens are the suffix); without, every row shares
        ``encoding.prefix`` tokens."""
        enc, rows = self.plan.encoding, self.plan.rows
        shared = self.plan.shares if self.plan.shares is not None else [enc.prefix] * rows
        prefix = max(shared)
        width = max(len(x) - d for x, d in zip(enc.ids, shared, strict=True))  # longest suffix
        input_ids = torch.full((rows, prefix + width), self.m.pad_id, dtype=torch.long)
        mask = torch.zeros((rows, prefix + width), dtype=torch.long)
        for i, (x, d) in enumerate(zip(enc.ids, shared, strict=True)):
            suffix = x[d:]
            input_ids[i, :d] = torch.tensor(x[:d], dtype=torch.long)
            input_ids[i, prefix + width - len(suffix) :] = torch.tensor(suffix, dtype=torch.long)
            mask[i, :d] = 1
            mask[i, prefix + width - len(suffix) :] = 1
        return Batch(input_ids.to(self.m.device), mask.to(self.m.device), prefix, width)

    def run(self) -> Any | None:
        """The key/value cache ``generate`` starts from (also kept as ``cache``): the shared
        prefix run through the model once (its cache is what counts, not its logits), one copy
        that attention reads for all rows, or a copy per row for a model without the attention
        interface; None: no prefix. With the plan's ``shares`` the rows' own tokens (all but
        their last) are in it too. Under ``torch.inference_mode``."""
        m, batch, max_new = self.m, self.batch, self.plan.encoding.max_new
        if batch.prefix == 0 and len(batch.input_ids) == 1 and batch.width > 1 and self.reuse_prefix:
            self.cache = self._plain_cache()
            return self.cache
        prefix_cache = None
        if batch.prefix > 0:
            prefix_cache = self.prefix_kv(batch.input_ids[:1, : batch.prefix])
        if m.cascade:
            cache = shared_prefix_cache(prefix_cache, m.layers, batch.width + max_new + 1)
            if self.plan.shares is not None and batch.width > 1:
                self.prefill_rows(prefix_cache, cache)
            self.cache = cache
            return cache
        if prefix_cache is not None and len(batch.input_ids) > 1:
            prefix_cache.batch_repeat_interleave(len(batch.input_ids))
        self.cache = prefix_cache
        return prefix_cache

    def _plain_cache(self) -> Any:
        """One row without a shared prefix (a plain completion): the cache of its tokens but the
        last (``prefix_kv``, so the next call reuses it), which ``generate`` goes on from. With
        the shared-prefix attention it is the row's own part of that cache (one buffer with room
        for the new tokens, read by plain attention), not a prefix read in two parts."""
        head = self.prefix_kv(self.batch.input_ids[:, :-1])
        if not self.m.cascade:
            return head
        return own_cache([(got.keys, got.values) for got in head.layers], self.plan.encoding.max_new + 1)

    def prefix_kv(self, ids: Any) -> Any:
        """The key/value cache (a batch-1 ``DynamicCache``) of ``ids`` ([1, n] on the model's
        device). Where the last call's prefix (``LoadedModel.reused``) begins them, only the
        tokens past what both share are run, on top of a copy of its cache cut to that length;
        the result is kept for the next call in its place (one prefix per model). The keys
        depend on the token ids and the model only, so every view of the model shares it.
        Chunked, the same keys are computed in other groupings of floating-point sums: equal up
        to rounding. Without ``reuse_prefix`` every call runs all of ``ids``, and nothing is
        kept."""
        m = self.m
        keep = {"logits_to_keep": 1} if m.keeps_logits else {}
        if not self.reuse_prefix:
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

    def prefill_rows(self, prefix_cache: Any, cache: Any) -> None:
        """Every row's own tokens but its last into ``cache``, in groups of rows of about the
        same length (``row_groups``), so a row that parts from the first row early (a renamed
        parameter) does not make every row of the batch as long as it; ``generate`` then feeds
        the last token of every row, together. The cache keeps the rows' own keys in groups too
        (``decode_groups``: each as long as its longest row's own tokens, with room for the new
        tokens), so decoding does not read the padding up to the longest row either."""
        m, batch, max_new = self.m, self.batch, self.plan.encoding.max_new
        shares = self.plan.shares
        assert shares is not None
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


__all__ = ["Batch", "Prefill", "Reused"]
