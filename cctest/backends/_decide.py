"""Finishing one row of a batch alone: the HF backend's early decision.

In repair mode only the completion the engine returns is shown; the other rows serve to choose
it. With an early decision (``Backend.complete_deciding``) the batch writes every row's first
tokens, the engine chooses a row on them, and that row goes on alone (``EarlyDecision``: a
``Decoder`` stops the batch, ``decide`` chooses, ``finish_row`` goes on with the row): a
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

The same mechanism lets the rows an ``on_step`` stops (``cctest serve``: a client went away)
leave a batch (``generate_live``): the batch stops at that step, and the rows still running go
on from its cache, cut to their rows (``rows_cache``: the columns some of them keeps), so each
later step costs what the live rows cost.

The rows the decision cut can still be run on, for a verdict on whole completions once the answer
is given (``CutRows``, its ``run_on``): the batch's tokens, mask and cache are kept as the first
``generate`` left them, and each further ``generate`` goes on from there, all rows together, as
the undecided batch would have. It is work that can wait: it stops as soon as another call is
queued for the model thread or a request is under way (``_worker.waiting``), and goes on once
none is, from where it stopped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from transformers import DynamicCache

from ..errors import BackendOutOfMemory
from . import _worker
from ._decoder import Decoder
from ._prefix_attention import SharedPrefixLayer, own_cache
from ._rows import YieldToWaiting
from .base import Decide, Outcome, Unfinished
from .loaded import Generation, attention_kernels, free_cuda_cache, is_oom

if TYPE_CHECKING:
    from ._prefill import Prefill


def one_row_cache(cache: Any, row: int, keep: torch.Tensor, room: int) -> DynamicCache:
    """Row ``row`` of ``cache`` as a one-row cache of the columns where ``keep`` (bool, one per
    column the cache holds) is true, with room for ``room`` more tokens (``own_cache``)."""
    return rows_cache(cache, [row], keep, room)


def rows_cache(cache: Any, rows: Sequence[int], keep: torch.Tensor, room: int) -> DynamicCache:
    """``rows`` of ``cache`` as a cache of their own, of the columns where ``keep`` (bool, one
    per column the cache holds) is true, with room for ``room`` more tokens (``own_cache``)."""
    cols = keep.nonzero().squeeze(-1)
    kv = []
    for layer in cache.layers:
        if isinstance(layer, SharedPrefixLayer):
            parts = [layer.row(r) for r in rows]
            keys = torch.cat([k for k, _ in parts]) if len(parts) > 1 else parts[0][0]
            values = torch.cat([v for _, v in parts]) if len(parts) > 1 else parts[0][1]
        else:
            index = torch.tensor(list(rows), dtype=torch.long, device=layer.keys.device)
            keys, values = layer.keys[index], layer.values[index]
        if keys.shape[-2] != keep.shape[-1]:
            raise ValueError(f"the cache holds {keys.shape[-2]} columns, the mask {keep.shape[-1]}")
        kv.append((keys[:, :, cols], values[:, :, cols]))
    return own_cache(kv, room)


def generate_live(
    decoder: Decoder, ids: torch.Tensor, mask: torch.Tensor, cache: Any, *, seeded: bool = True
) -> list[Generation]:
    """Every row's completion, ``generate`` going on from ``ids`` under ``mask`` and ``cache``
    (None: from nothing) for what is left of the budget, the rows ``decoder``'s ``on_step``
    stops leaving the batch: at the step that stops one, the batch stops, and the rows still
    running go on alone (``Decoder.rows``, ``rows_cache``; the rows that had ended leave with
    it), as many times as rows are stopped."""
    m, start = decoder.m, decoder.start
    left = decoder.encoding.max_new - (ids.shape[1] - start)
    decoder.stops.leave = True
    out = decoder.generate(ids, mask, cache, left, seeded=seeded, return_dict_in_generate=True)
    seqs = out.sequences
    generations = decoder.collect(seqs)
    rest = decoder.encoding.max_new - (seqs.shape[1] - start)
    live = [i for i, done in enumerate(decoder.ended(seqs)) if not done]
    if not decoder.stops.leaving or not live or rest <= 0:
        return generations
    grown = seqs.shape[1] - ids.shape[1]
    full_mask = torch.cat([mask, mask.new_ones(mask.shape[0], grown)], dim=-1)
    index = torch.tensor(live, dtype=torch.long, device=seqs.device)
    keep = full_mask[index].bool().any(dim=0)  # the columns some live row sees
    some = decoder.rows(live, int(keep[:start].sum()))
    on_cache = rows_cache(out[m.cache_kw], live, keep[:-1], rest + 1)
    on = generate_live(some, seqs[index][:, keep], full_mask[index][:, keep], on_cache, seeded=False)
    for i, g in zip(live, on, strict=True):
        generations[i] = g
    return generations


@dataclass
class Cut:
    """A batch stopped by an early decision, as its last ``generate`` left it."""

    seqs: torch.Tensor  # every row: its (padded) prompt and its new tokens so far
    mask: torch.Tensor  # over ``seqs``
    cache: Any  # the batch's key/value cache: every column of ``seqs`` but the last
    decoder: Decoder  # the last ``generate``'s: its stops hold the rows it finished, and where


class EarlyDecision:
    """One batch with an early decision: ``run`` generates every row's first ``first`` new
    tokens (``decoder``, from ``prefill``'s batch and cache), asks ``decide`` to choose a row on
    them, finishes that row alone and keeps the others to run on (``CutRows``)."""

    def __init__(self, decoder: Decoder, prefill: Prefill, first: int, decide: Decide) -> None:
        self.decoder, self.prefill, self.first, self.decide = decoder, prefill, first, decide
        self.chosen: int | None = None
        self.rest: CutRows | None = None

    def run(self) -> list[Generation]:
        """Every row's completion: the chosen one (``chosen``; None: ``decide`` was not asked,
        every row having ended, or it chose none) whole, the others as far as they got (their
        ``finish_reason`` "decided" where they had not ended, then ``rest`` holds them)."""
        decoder, batch, m = self.decoder, self.prefill.batch, self.decoder.m
        out = decoder.generate(
            batch.input_ids, batch.mask, self.prefill.cache, self.first, return_dict_in_generate=True
        )
        seqs = out.sequences
        generations = decoder.collect(seqs)
        ended = decoder.ended(seqs)
        if all(ended):
            return generations
        chosen = self.chosen = self.decide([g.text for g in generations])
        for i, done in enumerate(ended):
            if not done and i != chosen:
                generations[i] = dataclasses.replace(generations[i], finish_reason="decided")
        written = seqs.shape[1] - batch.start  # new tokens in every row so far
        full_mask = torch.cat([batch.mask, batch.mask.new_ones(seqs.shape[0], written)], dim=-1)
        if any(g.finish_reason == "decided" for g in generations):
            # the batch as it stopped: ``finish_row`` copies the chosen row's part of the cache
            self.rest = CutRows(Cut(seqs, full_mask, out[m.cache_kw], decoder))
        if chosen is None or ended[chosen]:
            return generations
        mask = full_mask[chosen].bool()
        generations[chosen] = self.finish_row(seqs[chosen][mask], mask, out[m.cache_kw], chosen)
        return generations

    def finish_row(self, ids: Any, mask: Any, cache: Any, row: int) -> Generation:
        """Row ``row`` of the batch stopped early, generated on alone to its end: ``ids`` its
        tokens without the padding (prompt and new tokens so far), ``mask`` the batch's columns
        it holds (the last new token's included), ``cache`` the batch's. Its stopping and
        healing controls start again from the same place (they read the row's text, not a
        state), sampling goes on from the generator's state."""
        alone = self.decoder.row(row)
        written = int(mask.sum()) - alone.start  # new tokens so far
        rest = alone.encoding.max_new - written
        ids = ids[None]
        cache = one_row_cache(cache, row, mask[:-1], rest + 1)
        out = alone.generate(ids, ids.new_ones(ids.shape), cache, rest, seeded=False)
        return alone.collect(out)[0]


class CutRows(Unfinished):
    """``Unfinished`` for a local model: runs the batch an early decision stopped (``Cut``) on,
    on the model thread, until every row has ended (``finish`` returns every row's completion)
    or another call waits (it goes on later from there)."""

    def __init__(self, cut: Cut) -> None:
        self._cut: Cut | None = cut

    async def finish(self) -> list[Outcome] | None:
        while self._cut is not None:
            await _worker.idle()  # a request under way goes first, whole
            if (cut := self._cut) is None:
                break
            done = await _worker.arun(self.run_on, cut)
            if done is not None:
                self._cut = None
                return done
        return None

    def close(self) -> None:
        self._cut = None

    @staticmethod
    def run_on(cut: Cut) -> list[Outcome] | None:
        """``cut`` run on together as the undecided batch would have: every row's completion
        once every row has ended or the budget is spent; None when another call for the model
        thread came first (``cut`` then holds how far it got, to go on from). On the model
        thread, under the model's lock."""
        if not _worker.on_model_thread():
            return _worker.run(CutRows.run_on, cut)
        m, start, enc = cut.decoder.m, cut.decoder.start, cut.decoder.encoding
        # (torch's threads as they were for the batch: the rows go on as they would have)
        with m.lock, attention_kernels(m.device), torch.inference_mode():
            decoder = cut.decoder.again()
            left = enc.max_new - (cut.seqs.shape[1] - start)
            if left > 0 and not all(decoder.ended(cut.seqs)):
                yielding = YieldToWaiting(_worker.waiting)
                kwargs = decoder.kwargs(left, seeded=False)
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
                cut.seqs, cut.cache, cut.decoder = out.sequences, out[m.cache_kw], decoder
                written = cut.seqs.shape[1] - start
                if yielding.yielded and written < enc.max_new:
                    if not all(decoder.ended(cut.seqs)):
                        return None
            # a row finished in an earlier ``generate`` wrote on in a later one: what it wrote
            # after it finished is padding, as in one ``generate``
            final = cut.seqs.clone()
            for i, at in enumerate(decoder.stops.ended_at):
                if at is not None:
                    final[i, start + at :] = m.pad_id
            return [g.text for g in decoder.collect(final)]


__all__ = ["Cut", "CutRows", "EarlyDecision", "generate_live", "one_row_cache", "rows_cache"]
