"""Finishing one row of a batch alone: the HF backend's early decision.

In repair mode only the completion the engine returns is shown; the other rows serve to choose
it. With an early decision (``Backend.complete_deciding``) the batch writes every row's first
tokens, the engine chooses a row on them, and that row goes on alone (``finish_row``): a
one-row ``generate`` that starts from the batch's cache, cut to the row's own keys and values, so
nothing is read again. A one-row step costs a plain completion's step; an 11-row step, on a CPU,
two to three times that.

``one_row_cache`` takes row ``i`` of a batch's cache (``SharedPrefixLayer``: the shared prefix and
the row's own part; a plain ``DynamicLayer``: the row of its tensors) over the columns its
attention mask keeps (the padding between a row's shared head and its own tokens is dropped), as
a one-row cache whose layers keep the keys and values in buffers with room for the tokens still
to come (a ``DynamicLayer`` would copy the whole row at every step: about 5 ms a step on a 135M
model at 2,000 tokens); the row's tokens, laid out without padding, then get the same positions
(``generate`` derives them from the mask) and see the same keys as in the batch.

The rows the decision cut can still be run on, for a verdict on whole completions once the answer
is given (``CutRows``, ``run_on``): the batch's tokens, mask and cache are kept as the first
``generate`` left them, and each further ``generate`` goes on from there, all rows together, as
the undecided batch would have. It is work that can wait: it stops as soon as another call is
queued for the model thread or a request is under way (``_worker.waiting``), and goes on once
none is, from where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from ..errors import BackendOutOfMemory
from . import _worker
from ._encode import Encoding
from ._prefix_attention import SharedPrefixLayer, own_cache
from ._rows import Healing, RowStops, YieldToWaiting, collect, generate_kwargs
from ._stop import BoundaryStopper
from .base import GenerationOptions, Outcome, Unfinished
from .loaded import Generation, LoadedModel, attention_kernels, free_cuda_cache, is_oom


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
    stops: RowStops  # the last ``generate``'s: the rows it finished, and where
    start: int  # where the new tokens begin
    encoding: Encoding  # the batch's
    stoppers: list[BoundaryStopper]
    options: GenerationOptions
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


def finish_row(
    m: LoadedModel,
    seed: int,
    ids: Any,
    mask: Any,
    cache: Any,
    row: int,
    enc: Encoding,
    stopper: BoundaryStopper,
    opts: GenerationOptions,
    watch: bool,
) -> Generation:
    """Row ``row`` of a batch stopped early, generated on alone to its end: ``ids`` its tokens
    without the padding (prompt and new tokens so far), ``mask`` the batch's columns it holds
    (the last new token's included), ``cache`` the batch's. Its stopping and healing controls
    start again from the same place (they read the row's text, not a state), sampling goes on
    from the generator's state."""
    texts = m.token_texts()
    written = int(mask.sum()) - len(enc.ids[row])  # new tokens so far
    start = len(enc.ids[row])
    heal = [enc.heal[row]]
    stops = RowStops(start, heal, [stopper], texts, m.tokenizer, m.eos_ids, opts.max_new_tokens)
    healing = Healing(start, heal, texts, m.allowed) if heal[0] else None
    rest = enc.max_new - written
    kwargs = generate_kwargs(m, seed, opts, rest, stops if watch else None, healing, seeded=False)
    kwargs[m.cache_kw] = one_row_cache(cache, row, mask[:-1], rest + 1)
    ids = ids[None]
    out = m.model.generate(input_ids=ids, attention_mask=ids.new_ones(ids.shape), **kwargs)
    alone = Encoding([enc.ids[row]], 0, enc.max_new, heal)
    return collect(m, out, start, alone, [stopper], stops)[0]


def run_on(m: LoadedModel, seed: int, cut: Cut) -> list[Outcome] | None:
    """The batch an early decision stopped (``Cut``), run on together as the undecided batch
    would have: every row's completion once every row has ended or the budget is spent; None
    when another call for the model thread came first (``cut`` then holds how far it got, to go
    on from). On the model thread, under the model's lock."""
    if not _worker.on_model_thread():
        return _worker.run(run_on, m, seed, cut)
    enc, opts = cut.encoding, cut.options
    texts = m.token_texts()
    with m.lock, attention_kernels(m.device), torch.inference_mode():
        stops = RowStops(
            cut.start, enc.heal, cut.stoppers, texts, m.tokenizer, m.eos_ids, opts.max_new_tokens
        )
        stops.carry(cut.stops)
        left = enc.max_new - (cut.seqs.shape[1] - cut.start)
        if left > 0 and not all(stops.ended(cut.seqs)):
            healing = Healing(cut.start, enc.heal, texts, m.allowed) if any(enc.heal) else None
            yielding = YieldToWaiting(_worker.waiting)
            kwargs = generate_kwargs(m, seed, opts, left, stops if cut.watch else None, healing, seeded=False)
            kwargs["stopping_criteria"].append(yielding)
            kwargs.update(return_dict_in_generate=True)
            kwargs[m.cache_kw] = cut.cache
            try:
                out = m.model.generate(input_ids=cut.seqs, attention_mask=cut.mask, **kwargs)
            except Exception as exc:
                if is_oom(exc):
                    free_cuda_cache()
                    raise BackendOutOfMemory(
                        "the model ran out of memory running on the rows an early decision cut."
                    ) from exc
                raise
            grown = out.sequences.shape[1] - cut.seqs.shape[1]
            cut.mask = torch.cat([cut.mask, cut.mask.new_ones(cut.mask.shape[0], grown)], dim=-1)
            cut.seqs, cut.cache, cut.stops = out.sequences, out[m.cache_kw], stops
            written = cut.seqs.shape[1] - cut.start
            if yielding.yielded and written < enc.max_new:
                if not all(stops.ended(cut.seqs)):
                    return None
        # a row finished in an earlier ``generate`` wrote on in a later one: what it wrote
        # after it finished is padding, as in one ``generate``
        final = cut.seqs.clone()
        for i, at in enumerate(stops.ended_at):
            if at is not None:
                final[i, cut.start + at :] = m.pad_id
        return [g.text for g in collect(m, final, cut.start, enc, cut.stoppers, stops)]


__all__ = ["Cut", "CutRows", "finish_row", "one_row_cache", "run_on"]
