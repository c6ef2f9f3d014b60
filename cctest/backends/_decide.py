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

The rows the decision cut can still be run on, for a verdict on whole completions once the answer
is given (``CutRows``): the batch's tokens, mask and cache are kept as the first ``generate`` left
them, and each further ``generate`` goes on from there, all rows together, as the undecided batch
would have. It is work that can wait: it stops as soon as another call is queued for the model
thread or a request is under way (``_worker.waiting``), and goes on once none is, from where it
stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from . import _worker
from ._prefix_attention import SharedPrefixLayer, own_cache
from .base import Outcome, Unfinished


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


@dataclass
class Cut:
    """A batch stopped by an early decision, as its last ``generate`` left it."""

    seqs: torch.Tensor  # every row: its (padded) prompt and its new tokens so far
    mask: torch.Tensor  # over ``seqs``
    cache: Any  # the batch's key/value cache: every column of ``seqs`` but the last
    stops: Any  # the last ``generate``'s RowStops: the rows it finished, and where
    start: int  # where the new tokens begin
    encoding: Any  # the batch's ``Encoding``
    stoppers: list[Any]
    options: Any  # GenerationOptions
    watch: bool  # whether the rows' stopping criterion ran


class CutRows(Unfinished):
    """``Unfinished`` for a local model: ``step(cut)`` runs the batch on (on the model thread) until
    every row has ended (it returns every row's completion) or another call waits (None)."""

    def __init__(self, step: Callable[[Cut], list[Outcome] | None], cut: Cut) -> None:
        self._step = step
        self._cut: Cut | None = cut

    async def finish(self) -> list[Outcome] | None:
        while self._cut is not None:
            await _worker.idle()  # a request under way goes first, whole
            if (cut := self._cut) is None:
                break
            done = await _worker.arun(self._step, cut)
            if done is not None:
                self._cut = None
                return done
        return None

    def close(self) -> None:
        self._cut = None


__all__ = ["Cut", "CutRows", "one_row_cache"]
