"""Finishing one row of a batch alone: the HF backend's early decision.

In repair mode only the completion the engine returns is shown; the other rows serve to choose
it. With an early decision (``Backend.complete_deciding``) the batch writes every row's first
tokens, the engine chooses a row on them, and that row goes on alone: a one-row ``generate``
that starts from the batch's cache, cut to the row's own keys and values, so nothing is read
again. A one-row step costs a plain completion's step; an 11-row step, on a CPU, two to three
times that.

``one_row_cache`` takes row ``i`` of a batch's cache (``SharedPrefixLayer``: the shared prefix and
the row's own part; a plain ``DynamicLayer``: the row of its tensors) over the columns its
attention mask keeps (the padding between a row's shared head and its own tokens is dropped), as
a one-row cache whose layers keep the keys and values in buffers with room for the tokens still
to come (a ``DynamicLayer`` would copy the whole row at every step: about 5 ms a step on a 135M
model at 2,000 tokens); the row's tokens, laid out without padding, then get the same positions
(``generate`` derives them from the mask) and see the same keys as in the batch.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache

from ._prefix_attention import SharedPrefixLayer, own_cache


def one_row_cache(cache: Any, row: int, keep: torch.Tensor, room: int) -> DynamicCache:
    """Row ``row`` of ``cache`` as a one-row cache of the columns where ``keep`` (bool, one per
    column the cache holds) is true, with room for ``room`` more tokens (``own_cache``)."""
    cols = keep.nonzero().squeeze(-1)
    kv = []
    for layer in cache.layers:
        if isinstance(layer, SharedPrefixLayer):
            keys, values = layer.row(row)
        else:
            keys, values = layer.keys[row : row + 1], layer.values[row : row + 1]
        if keys.shape[-2] != keep.shape[-1]:
            raise ValueError(f"the cache holds {keys.shape[-2]} columns, the mask {keep.shape[-1]}")
        kv.append((keys[:, :, cols], values[:, :, cols]))
    return own_cache(kv, room)


__all__ = ["one_row_cache"]
