"""One batched ``generate`` of the HF backend, on the model thread, under the model's lock.

``generate`` takes a view (``_view.View``) and its rows to the model thread (``_worker``), holds
the model's lock and turns running out of memory into ``BackendOutOfMemory``; ``run_batch``
composes the call: the plan (``BatchPlan``: FIM rows where there is a template and a suffix),
the prefill of its shared prefix (``Prefill``, reusing the last call's prefix cache), the
decoder (``Decoder``: stopping, healing, each row's completion), and with an early decision
``EarlyDecision``. The module docstring of ``hf.py`` describes the whole.

Torch-free at import: the parts that need torch and transformers are imported at the first
``generate``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import BackendOutOfMemory
from . import _worker
from ._layout import row_runs
from .base import Decide, GenerationOptions
from .loaded import Generation, attention_kernels, free_cuda_cache, is_oom

if TYPE_CHECKING:
    from ._decide import CutRows
    from ._view import View

# after every decoding step: the index of the first row it reports (among the prompts given),
# each row's completion so far and how it ended (None: it runs on), and how many rows the step
# generated (the rows stopped leave the batch: ``_decide.generate_live``) in, the rows to stop out
OnStep = Callable[[int, Sequence[str], Sequence["str | None"], int], Sequence[bool]]

# an early decision: stop every row after that many new tokens, and ``Decide`` chooses the one
# row that goes on
Deciding = tuple[int, Decide]

Result = tuple[list[Generation], "int | None", "CutRows | None"]


def generate(
    view: View,
    prompts: list[str],
    opts: GenerationOptions,
    suffixes: Sequence[str] | None,
    deciding: Deciding | None,
    groups: Sequence[int] | None = None,
    on_step: OnStep | None = None,
) -> Result:
    """``run_batch`` on the model thread (``_worker``) under the model's lock, out of memory as
    BackendOutOfMemory."""
    if suffixes is not None and len(suffixes) != len(prompts):
        raise ValueError(f"{len(suffixes)} suffixes for {len(prompts)} prompts")
    row_runs(groups, len(prompts))  # a wrong grouping fails here, not halfway through
    if not _worker.on_model_thread():
        return _worker.run(generate, view, prompts, opts, suffixes, deciding, groups, on_step)
    m = view.loaded
    with m.lock, attention_kernels(m.device):
        try:
            return run_batch(view, prompts, opts, suffixes, deciding, groups, on_step)
        except Exception as exc:
            if is_oom(exc):
                free_cuda_cache()
                raise BackendOutOfMemory(
                    f"the model ran out of memory on a batch of {len(prompts)} prompt(s); "
                    "use fewer mutants, a shorter max_new_tokens or a smaller model."
                ) from exc
            raise


def run_batch(
    view: View,
    prompts: list[str],
    opts: GenerationOptions,
    suffixes: Sequence[str] | None = None,
    deciding: Deciding | None = None,
    groups: Sequence[int] | None = None,
    on_step: OnStep | None = None,
) -> Result:
    """One batched ``generate``: plan the batch (FIM rows when there is a template and a
    suffix; ``BatchPlan``), prefill its shared prefix once (``Prefill``), generate every row
    and collect each row's trimmed completion (``Decoder``). ``deciding`` (after, decide):
    stop every row after that many new tokens and finish the row ``decide`` chooses alone
    (``EarlyDecision``); returns the row, or None, and the rows it cut, to run on, or None."""
    import torch

    from ._decide import EarlyDecision, generate_live
    from ._decoder import Decoder
    from ._prefill import Prefill

    m = view.loaded
    m.fit_threads()
    rows = view.fim_inputs(prompts, suffixes, opts.max_new_tokens, groups) or prompts
    # rows prefilled on their own (``Prefill.prefill_rows``) share with the first row as much
    # as each has in common with it, not only what every row has in common
    plan = view.plan(rows, opts.max_new_tokens, groups, grouped=m.cascade)
    prefill = Prefill(m, plan, reuse_prefix=view.reuse_prefix)
    batch = prefill.batch
    told = None if on_step is None else functools.partial(on_step, 0)
    decoder = Decoder.for_batch(
        m, view.seed, opts, plan, batch.start, prompts, boundaries=view.boundaries, on_step=told
    )
    first = 0  # the tokens every row writes before the decision
    if deciding is not None and m.cascade and len(prompts) > 1:
        first = plan.decision_tokens(deciding[0], opts.max_new_tokens)
    with torch.inference_mode():
        prefill.run()
        if deciding is None or not first:
            if on_step is not None:  # the rows it stops leave the batch
                live = generate_live(decoder, batch.input_ids, batch.mask, prefill.cache)
                return live, None, None
            out = decoder.generate(batch.input_ids, batch.mask, prefill.cache, plan.encoding.max_new)
            return decoder.collect(out), None, None
        decision = EarlyDecision(decoder, prefill, first, deciding[1])
        return decision.run(), decision.chosen, decision.rest


__all__ = ["Deciding", "OnStep", "Result", "generate", "run_batch"]
