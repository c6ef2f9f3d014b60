"""Generating over a prefilled batch in the HF backend: ``Decoder``.

A ``Decoder`` holds what ``generate`` needs besides the batch's tensors and cache (``Prefill``):
the generation options and seed, each row's stop rules (``_stop.BoundaryStopper``) and the row
controls of ``_rows.py`` (``RowStops``, ``Healing``) that read them after every token. It runs
``generate`` from a batch (``generate``) and reads each row's completion from what it returned
(``collect``). An early decision (``_decide.py``) goes on with one row of it (``row``) or with
every row from where the batch stopped (``again``).

Imported by ``hf.py`` when it first generates (it needs torch and transformers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._encode import Encoding
from ._rows import Healing, RowStops, collect, generate_kwargs
from ._stop import BoundaryStopper

if TYPE_CHECKING:
    from ._plan import BatchPlan
    from .base import GenerationOptions
    from .loaded import Generation, LoadedModel

# ``RowStops``'s ``on_step``: every row's completion so far and how it ended, and how many rows the
# step generated, in; the rows to stop out
RowsStep = Callable[[Sequence[str], Sequence["str | None"], int], Sequence[bool]]


class Decoder:
    """``generate`` for the rows of ``encoding``, whose new tokens begin at column ``start``.

    ``watch``: whether the rows' stopping criterion runs (with nothing to look for, no
    boundaries, no stop sequences, no healing, nobody watching, no row is decoded while it
    generates). ``on_step``: ``RowStops``'s, told every row's text and end after each step."""

    def __init__(
        self,
        m: LoadedModel,
        seed: int,
        options: GenerationOptions,
        encoding: Encoding,
        start: int,
        stoppers: Sequence[BoundaryStopper],
        *,
        watch: bool,
        on_step: RowsStep | None = None,
    ) -> None:
        self.m, self.seed, self.options = m, seed, options
        self.encoding, self.start, self.stoppers, self.watch = encoding, start, list(stoppers), watch
        texts = m.token_texts()
        heal = encoding.heal
        self.stops = RowStops(
            start, heal, self.stoppers, texts, m.tokenizer, m.eos_ids, options.max_new_tokens, on_step=on_step
        )
        self.healing = Healing(start, heal, texts, m.allowed) if any(heal) else None

    @classmethod
    def for_batch(
        cls,
        m: LoadedModel,
        seed: int,
        options: GenerationOptions,
        plan: BatchPlan,
        start: int,
        prompts: Sequence[str],
        *,
        boundaries: bool,
        on_step: RowsStep | None = None,
    ) -> Decoder:
        """The decoder of a batch: each row stopped by the stop rules of its prompt (the code
        before the cursor; ``boundaries`` False: only EOS, stop sequences and the budget), and
        by ``on_step`` (see ``RowStops``) where it is given."""
        stoppers = [BoundaryStopper(p, options.stop, boundaries=boundaries) for p in prompts]
        watch = boundaries or bool(options.stop) or any(plan.encoding.heal) or on_step is not None
        return cls(m, seed, options, plan.encoding, start, stoppers, watch=watch, on_step=on_step)

    def row(self, i: int) -> Decoder:
        """Row ``i`` alone, laid out without padding (its new tokens begin after its own
        tokens): its stopping and healing start again (they read the row's text, not a state)."""
        enc = self.encoding
        alone = Encoding([enc.ids[i]], 0, enc.max_new, [enc.heal[i]])
        return Decoder(
            self.m, self.seed, self.options, alone, len(enc.ids[i]), [self.stoppers[i]], watch=self.watch
        )

    def rows(self, rows: Sequence[int], start: int) -> Decoder:
        """``rows`` of this batch as a batch of their own, whose new tokens begin at column
        ``start``, told to this one's ``on_step`` (``RowStops.for_rows``): the rows still running
        once others stopped (``_decide.generate_live``). Their stopping and healing start again
        (they read the rows' texts, not a state)."""
        enc = self.encoding
        some = Encoding([enc.ids[i] for i in rows], 0, enc.max_new, [enc.heal[i] for i in rows])
        stoppers = [self.stoppers[i] for i in rows]
        on_step = self.stops.for_rows(rows)
        return Decoder(
            self.m, self.seed, self.options, some, start, stoppers, watch=self.watch, on_step=on_step
        )

    def again(self) -> Decoder:
        """The same rows for another ``generate`` that goes on from this one's: the rows it
        finished stay finished where they were (``RowStops.carry``)."""
        on = Decoder(
            self.m, self.seed, self.options, self.encoding, self.start, self.stoppers, watch=self.watch
        )
        on.stops.carry(self.stops)
        return on

    def kwargs(self, max_new: int, *, seeded: bool = True) -> dict[str, Any]:
        """``generate``'s arguments for ``max_new`` more tokens (``_rows.generate_kwargs``;
        ``seeded`` False: sampling goes on from the generator's state)."""
        stops = self.stops if self.watch else None
        return generate_kwargs(self.m, self.seed, self.options, max_new, stops, self.healing, seeded=seeded)

    def generate(
        self, ids: Any, mask: Any, cache: Any | None, max_new: int, *, seeded: bool = True, **extra: Any
    ) -> Any:
        """``generate`` from ``ids`` (the rows so far) under ``mask``, going on from ``cache``
        (None: from nothing) for at most ``max_new`` tokens; ``extra``: more of its arguments."""
        kwargs = self.kwargs(max_new, seeded=seeded)
        if cache is not None:
            kwargs[self.m.cache_kw] = cache
        kwargs.update(extra)
        return self.m.model.generate(input_ids=ids, attention_mask=mask, **kwargs)

    def collect(self, seqs: Any) -> list[Generation]:
        """Each row's completion in ``seqs`` (``_rows.collect``)."""
        return collect(self.m, seqs, self.start, self.encoding, self.stoppers, self.stops)

    def ended(self, seqs: Any) -> list[bool]:
        """Per row of ``seqs``: whether it has finished (``RowStops.ended``)."""
        return self.stops.ended(seqs)


__all__ = ["Decoder"]
