"""The per-row controls of one batched ``generate`` in the HF backend, and the text they read.

``generate`` runs every row of a batch together; these decide, row by row, what a row may write
and when it is done:

* ``RowStops`` (a stopping criterion) decodes each row after every token and marks it finished
  once its text reaches a stop point (``_stop.BoundaryStopper``), or once it has ``budget`` new
  tokens besides those that wrote a healed tail back;
* ``Healing`` (a logits processor) lets a row whose prompt lost its last tokens to token healing
  write only tokens that continue that tail, until the tail is written back.

``generate_kwargs`` gives ``generate`` these controls with its other arguments, and ``collect``
reads each row's completion from what ``generate`` returned.

Imported by ``hf.py`` when it first generates (it needs torch and transformers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from transformers import LogitsProcessor, LogitsProcessorList, StoppingCriteria, StoppingCriteriaList

from ..safe_text import model_text
from ._stop import BoundaryStopper
from .loaded import Generation

if TYPE_CHECKING:
    from ._encode import Encoding
    from .base import GenerationOptions
    from .loaded import LoadedModel


class RowStops(StoppingCriteria):
    """Marks a row finished once its decoded text reaches a stop point, or once it has
    ``budget`` new tokens besides those that wrote a healed tail back (``full``)."""

    def __init__(
        self,
        start: int,
        heal: Sequence[str],
        stoppers: Sequence[BoundaryStopper],
        texts: list[str],
        tokenizer: Any,
        eos_ids: set[int],
        budget: int,
        on_step: Callable[[Sequence[str], Sequence[str | None], int], Sequence[bool]] | None = None,
    ) -> None:
        self.start, self.heal, self.stoppers = start, heal, stoppers
        self.texts, self.tokenizer, self.eos_ids, self.budget = texts, tokenizer, eos_ids, budget
        self.done = [False] * len(heal)
        self.full = [False] * len(heal)  # finished by the token budget
        self.ended_at: list[int | None] = [None] * len(heal)  # new tokens when it was marked
        # told every row's text and end after each step; the rows it returns stop (``HFBackend.generate``)
        self.on_step = on_step
        self._shown: list[str] = [""] * len(heal)
        self._told: list[str | None] = [None] * len(heal)
        # ``leave``: once ``on_step`` stops a row, every row stops here (``leaving``), so that the
        # rows still running go on without the others (``_decide.generate_live``)
        self.leave = self.leaving = False

    def __call__(self, seqs: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        new_tokens = seqs[:, self.start :].tolist()
        for i, tail in enumerate(self.heal):
            if self.done[i]:
                continue
            if tail and len(new_tokens[i]) - healing_tokens(self.texts, new_tokens[i], tail) >= self.budget:
                self.done[i] = self.full[i] = True
                if self.on_step is not None:
                    self._shown[i] = healed(decode(self.tokenizer, new_tokens[i], self.eos_ids), tail)
            else:
                text = healed(decode(self.tokenizer, new_tokens[i], self.eos_ids), tail)
                self.done[i] = self.stoppers[i].stop_index(text) is not None
                self._shown[i] = text
            if self.done[i]:
                self.ended_at[i] = len(new_tokens[i])
        if self.on_step is not None:
            self._tell(new_tokens)
        if self.leaving and not all(self.done):
            return torch.ones(len(self.done), dtype=torch.bool, device=seqs.device)  # type: ignore[return-value]
        return torch.tensor(self.done, dtype=torch.bool, device=seqs.device)  # type: ignore[return-value]

    def _tell(self, new_tokens: list[list[int]]) -> None:
        """``on_step`` the rows' texts and ends; the rows it returns are finished here."""
        for i, row in enumerate(new_tokens):
            if self._told[i] is None and (self.done[i] or any(t in self.eos_ids for t in row)):
                self._told[i] = "length" if self.full[i] else "stop"
        assert self.on_step is not None
        for i, stop in enumerate(self.on_step(self._shown, self._told, len(new_tokens))):
            # a row that has ended (EOS: generate pads it from here on) needs no stop; taking it
            # out of the batch would rebuild the batch's cache for nothing (``cctest serve``
            # hears of a client that went away after reading its row's last event)
            if stop and not self.done[i] and self._told[i] is None:
                self.done[i], self._told[i] = True, "stop"
                self.ended_at[i] = len(new_tokens[i])
                self.leaving = self.leave

    def for_rows(
        self, rows: Sequence[int]
    ) -> Callable[[Sequence[str], Sequence[str | None], int], Sequence[bool]] | None:
        """``on_step`` for a batch of ``rows`` of this one that goes on without the others: told
        those rows' texts and ends, it tells this one's ``on_step`` every row's (the others' as
        they last were) and returns those rows' stops."""
        on_step = self.on_step
        if on_step is None:
            return None
        shown, told = self._shown, self._told

        def step(texts: Sequence[str], ended: Sequence[str | None], batch: int) -> list[bool]:
            for k, i in enumerate(rows):
                shown[i], told[i] = texts[k], ended[k]
            stop = on_step(shown, told, batch)
            return [stop[i] for i in rows]

        return step

    def ended(self, seqs: torch.Tensor) -> list[bool]:
        """Per row of ``seqs`` (the batch as ``generate`` returned it): whether it has finished,
        marked here or by writing EOS."""
        rows = seqs[:, self.start :].tolist()
        return [self.done[i] or any(t in self.eos_ids for t in row) for i, row in enumerate(rows)]

    def carry(self, before: RowStops) -> None:
        """Go on from ``before`` (the same rows, stopped by an earlier ``generate``): its finished
        rows stay finished where they were."""
        for i, at in enumerate(before.ended_at):
            if at is not None:
                self.done[i], self.full[i], self.ended_at[i] = True, before.full[i], at


class YieldToWaiting(StoppingCriteria):
    """Stops every row as soon as ``waiting()`` is not zero (another call wants the thread)."""

    def __init__(self, waiting: Callable[[], int]) -> None:
        self.waiting = waiting
        self.yielded = False

    def __call__(self, seqs: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        self.yielded = self.yielded or self.waiting() > 0
        return torch.full((seqs.shape[0],), self.yielded, dtype=torch.bool, device=seqs.device)  # type: ignore[return-value]


class Healing(LogitsProcessor):
    """Until a row has written its healed tail back, only tokens that continue it.

    ``allowed(rest, vocab)`` is the bool mask of the tokens that write ``rest`` back."""

    def __init__(
        self, start: int, heal: Sequence[str], texts: list[str], allowed: Callable[[str, int], Any]
    ) -> None:
        self.start, self.texts, self.allowed = start, texts, allowed
        self.pending = {i: h for i, h in enumerate(heal) if h}

    def __call__(self, seqs: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for i, tail in list(self.pending.items()):
            written = "".join(self.texts[t] for t in seqs[i, self.start :].tolist())
            if len(written) >= len(tail):
                del self.pending[i]
                continue
            allowed = self.allowed(tail[len(written) :], scores.shape[-1])
            scores[i] = scores[i].masked_fill(~allowed, float("-inf"))
        return scores


def decode(tokenizer: Any, ids: list[int], eos_ids: set[int]) -> str:
    """The text of ``ids`` up to the first EOS, made safe where it enters (``model_text``)."""
    for j, t in enumerate(ids):
        if t in eos_ids:
            ids = ids[:j]
            break
    return model_text(str(tokenizer.decode(ids, skip_special_tokens=True)))


def healed(text: str, tail: str) -> str:
    """The completion in a row's generated ``text``: what follows the healed ``tail`` ("" while
    the tail is not yet written back, or if EOS or the token limit came first).

    >>> healed("    return x", "    "), healed("  ", "    ")
    ('return x', '')
    """
    return text[len(tail) :] if text.startswith(tail) else ""


def healing_tokens(texts: list[str], new_ids: list[int], tail: str) -> int:
    """How many of a row's first generated tokens only wrote its healed ``tail`` back (a token
    that writes past the tail's end counts as new)."""
    if not tail:
        return 0
    written = 0
    for n, t in enumerate(new_ids):
        written += len(texts[t]) if t < len(texts) else 0
        if written > len(tail):
            return n
        if written == len(tail):
            return n + 1
    return len(new_ids)


def generate_kwargs(
    m: LoadedModel,
    seed: int,
    opts: GenerationOptions,
    max_new: int,
    stops: Any | None,
    healing: Any | None,
    *,
    seeded: bool = True,
) -> dict[str, Any]:
    """``generate``'s arguments: lengths, EOS, the row controls, greedy or sampling (from the
    backend's seed; ``seeded`` False: from the generator's state, to go on sampling)."""
    kwargs: dict[str, Any] = {
        "max_new_tokens": max_new,
        "pad_token_id": m.pad_id,
        "eos_token_id": sorted(m.eos_ids) or None,
        "stopping_criteria": StoppingCriteriaList([stops] if stops is not None else []),
        "logits_processor": LogitsProcessorList([healing] if healing is not None else []),
    }
    if opts.temperature > 0:
        if seeded:
            torch.manual_seed(seed)
        kwargs.update(do_sample=True, temperature=opts.temperature, top_p=opts.top_p, top_k=0)
    else:
        kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    return kwargs


def collect(
    m: LoadedModel, out: Any, start: int, enc: Encoding, stoppers: list[BoundaryStopper], stops: Any
) -> list[Generation]:
    """Each row's completion: its new tokens up to EOS, decoded, the healed tail dropped,
    trimmed at its stop point, with what ended it."""
    texts = m.token_texts()
    results = []
    for i, stopper in enumerate(stoppers):
        new_ids = out[i, start:].tolist()
        n_new = next((j for j, t in enumerate(new_ids) if t in m.eos_ids), None)
        hit_eos = n_new is not None and not stops.full[i]  # a row the budget ended is padded with EOS
        new_ids = new_ids[:n_new] if n_new is not None else new_ids
        text = healed(decode(m.tokenizer, new_ids, m.eos_ids), enc.heal[i])
        cut = stopper.stop_index(text)
        results.append(
            Generation(
                text=stopper.trim(text) if cut is not None else text,
                finish_reason="stop" if (hit_eos or cut is not None) else "length",
                prompt_tokens=len(enc.ids[i]),
                completion_tokens=len(new_ids) - healing_tokens(texts, new_ids, enc.heal[i]),
            )
        )
    return results


__all__ = [
    "Healing",
    "RowStops",
    "YieldToWaiting",
    "collect",
    "decode",
    "generate_kwargs",
    "healed",
    "healing_tokens",
]
