"""The HF backend's calls as a ``Backend`` answers them, run on the model thread: completions as
outcomes, out of memory halving the batch (``generate_safe``: between a call's groups of rows
where it has them), an early decision that falls back to whole rows when the batch must be
halved (``deciding``), and seeded rounds, each (prompt, seed) generated alone (``seeded``).

Each takes a view (``_view.View``) and runs ``_generate.generate`` on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import BackendError, BackendOutOfMemory
from ._generate import OnStep, generate
from .base import Decide, Decided, GenerationOptions, Outcome
from .loaded import Generation

if TYPE_CHECKING:
    from ._view import View


def generate_safe(
    view: View,
    prompts: Sequence[str],
    options: GenerationOptions,
    *,
    suffixes: Sequence[str] | None = None,
    groups: Sequence[int] | None = None,
    on_step: OnStep | None = None,
) -> list[Generation | BackendError]:
    """``generate``, but out of memory halves the batch, and a prompt that still does not fit
    gets a BackendOutOfMemory in its place instead of failing the whole call. Halved, the batch
    is split between ``groups`` where it has more than one (``on_step`` is then told each half's
    first row)."""
    if not prompts:
        return []
    try:
        return list(generate(view, list(prompts), options, suffixes, None, groups, on_step)[0])
    except BackendOutOfMemory as exc:
        if len(prompts) == 1:
            return [exc]
        head_groups: Sequence[int] | None = None
        tail_groups: Sequence[int] | None = None
        if groups is not None and len(groups) > 1:  # whole prompts to each half
            half = len(groups) // 2
            mid = sum(groups[:half])
            head_groups, tail_groups = groups[:half], groups[half:]
        else:
            mid = len(prompts) // 2
        head = None if suffixes is None else suffixes[:mid]
        tail = None if suffixes is None else suffixes[mid:]
        return generate_safe(
            view, prompts[:mid], options, suffixes=head, groups=head_groups, on_step=on_step
        ) + generate_safe(
            view, prompts[mid:], options, suffixes=tail, groups=tail_groups, on_step=shifted(on_step, mid)
        )


def shifted(on_step: OnStep | None, first: int) -> OnStep | None:
    """``on_step`` for the rows from ``first`` on (a halved batch's second half)."""
    if on_step is None:
        return None
    return lambda at, texts, ended, batch: on_step(first + at, texts, ended, batch)


def complete(
    view: View, prompts: list[str], suffixes: Sequence[str] | None = None, groups: Sequence[int] | None = None
) -> list[Outcome]:
    """Each prompt's completion, or the error in its place (``generate_safe``)."""
    outcomes = generate_safe(view, prompts, view.options, suffixes=suffixes, groups=groups)
    return [g if isinstance(g, BackendError) else g.text for g in outcomes]


def deciding(
    view: View, prompts: list[str], suffixes: Sequence[str] | None, after: int, decide: Decide
) -> Decided:
    """``complete`` with an early decision (``Backend.complete_deciding``); out of memory, every
    row whole without one (halving the batch needs every row whole)."""
    try:
        generations, chosen, rest = generate(view, prompts, view.options, suffixes, (after, decide))
    except BackendOutOfMemory:
        return Decided(complete(view, prompts, suffixes), None)
    cut = tuple(i for i, g in enumerate(generations) if g.finish_reason == "decided")
    return Decided([g.text for g in generations], chosen, cut, rest)


def seeded(view: View, prompts: list[str], seeds: list[int]) -> list[Outcome]:
    """``complete``, each prompt sampled by its own seed (``SeedsEachRequest``): its answer
    depends on the prompt and its seed alone, not on the rest of the call or what ran before.
    Greedy (temperature 0): one batch, as ``complete`` (a seed cannot change a greedy answer);
    sampling: each distinct (prompt, seed) generated alone, from the generator seeded with that
    seed and without the previous call's prefix cache (its keys differ by rounding)."""
    if len(seeds) != len(prompts):
        raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts")
    if not prompts:
        return []
    if view.options.temperature == 0:
        return complete(view, prompts)
    done: dict[tuple[str, int], Outcome] = {}
    for key in zip(prompts, seeds, strict=True):
        if key not in done:
            done[key] = complete(view.but(seed=key[1], reuse_prefix=False), [key[0]])[0]
    return [done[key] for key in zip(prompts, seeds, strict=True)]


__all__ = ["complete", "deciding", "generate_safe", "seeded", "shifted"]
