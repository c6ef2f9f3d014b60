"""A local transformers causal language model as a completion backend (the bundled model by default).

All prompts of one ``complete`` call go through ONE batched ``generate``. The prompt and its
mutants share a long token prefix (everything before the code the mutants change), so that
prefix is run through the model once and its key/value cache is repeated over the batch; each
row then only feeds its own suffix. Rows are laid out ``[prefix][padding][suffix_i]`` with an
attention mask over the padding, so ``generate`` derives the right position of every token from
the mask. With the one-copy prefix (``_prefix_attention.py``) the prefix is the first row (the
prompt), and each row reads as much of it as it has in common with it (the rest masked out): a
mutant changed near the cursor reads almost all of the prompt from the one copy, one renamed at
the ``def`` line only its head. The rows' own tokens are then prefilled in groups of rows of
about the same length (``row_groups``), so the one row that parts early does not pad every row
to its length, and ``generate`` continues all rows together, each group of rows reading only
its own keys (``decode_groups``). A single prompt shares nothing: it is a plain ``generate``
from the cache of its tokens but the last. A stopping criterion decodes each row after every
token and marks it finished once its natural boundary appears (``_stop.BoundaryStopper``);
``generate`` ends as soon as every row has.
One call composes four small objects, each holding its state: the plan (``_plan.BatchPlan``: the
rows laid out in a FIM template by ``_fim_layout.py``, tokenized, healed and cut to the context by
``_encode.py``, with the layout arithmetic of ``_layout.py``), the prefill (``_prefill.Prefill``:
the batch's tensors and the key/value cache of its shared prefix), the decoder
(``_decoder.Decoder``: ``generate`` with the per-row controls of ``_rows.py``, stopping and token
healing, and each row's completion read back), and with an early decision
``_decide.EarlyDecision`` (the chosen row finished alone, the others kept to run on in
``_decide.CutRows``). ``HFBackend`` is the façade: it holds the view's settings and composes them.

Token healing: a prompt that ends in whitespace (the cursor after an auto-indent, a docstring's
closing newline) or in part of a word tokenizes unlike the same text in the middle of a file: a
byte-level BPE merges ``"\n    "`` with the word after it (``"\n   "`` + ``" return"``), so a prompt
ending in ``"\n    "`` shows the model a token it has only seen before more whitespace, and it
answers with a blank line or a new top-level ``def``. So the trailing whitespace tokens (or the
last token, when it is not whitespace) are taken off the prompt and the first generated tokens
are constrained to write that text back (a logits processor); the completion is what follows it.
transformers' own ``token_healing`` strips the prompt's leading and trailing whitespace (in code
that is the indentation) and re-tokenizes with its own padding, so it cannot serve here.

Fill in the middle: when the model has a FIM template (``fim.py``: detected from its tokenizer's
special tokens, or named by the ``fim`` setting) and the call brings the code after the cursor,
each row is its own prefix and suffix laid out in the template, so one batched ``generate`` still
serves the prompt and every mutant (each with its suffix in the mutant's names), and rows still
share their head. When prefix and suffix do not fit the context, both are cut away from the
cursor: the suffix keeps ``suffix_share`` of the room (more when the prefix needs less), cut at
its end; the prefix keeps the rest, cut at its start by the same number of tokens in every row
(so the rows keep sharing a head). Boundaries and stop sequences still read the completion
against the code before the cursor.

Prompts longer than the model's context are cut from the left, so the tokens nearest the cursor
stay (room is left for ``max_new_tokens``). Every cut (left to right, and a FIM prefix's start and
suffix's end) falls in steps (``CUT_STEP``), so the model sees up to a step less than would fit.

Reuse across calls: while typing, a request's prompt extends the previous one's. The model keeps
the key/value cache of the last call's shared prefix (the first row's tokens but its last; for a
single prompt the same) with its token ids, one per loaded model; the next call runs only the
tokens past what its prefix has in common with them, on top of a copy of that cache
(``_prefill.Prefill.prefix_kv``). The cut steps keep the first kept token in place over many keystrokes, so a
prompt past the context reuses too. Keys are the same up to floating-point rounding (the prefix
is run in two pieces); greedy completions are checked equal in the tests.

Seeded rounds (``complete_seeded``, ``chat_seeded``: ``SeedsEachRequest``): above temperature 0
each (prompt, seed) is generated alone, seeded with its seed and without prefix reuse, so its
answer depends on nothing else in the call; greedy ones go in one batch (no seed changes them).

The model is loaded once, from local files only. Loading and every ``generate`` run on one thread
(``_worker``: PyTorch's OpenMP threads stay fast only while one thread drives them), and a lock
makes one ``generate`` run at a time, so several threads (or the server) can share it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import BackendError, BackendOutOfMemory
from . import _fim_layout, _worker
from ._encode import Encoding
from ._layout import row_runs
from ._plan import BatchPlan
from .base import (
    PLAIN_CHAT_STOP,
    Backend,
    Decide,
    Decided,
    GenerationOptions,
    Message,
    Outcome,
    generation_options,
    plain_chat_template,
)
from .fim import FimTemplate, resolve
from .loaded import Generation, LoadedModel, attention_kernels, free_cuda_cache, is_oom, model_dir

# after every decoding step: the index of the first row it reports (among the prompts given),
# each row's completion so far and how it ended (None: it runs on), and how many rows the step
# generated (the rows stopped leave the batch: ``_decide.generate_live``) in, the rows to stop out
OnStep = Callable[[int, Sequence[str], Sequence["str | None"], int], Sequence[bool]]

if TYPE_CHECKING:
    from ._decide import CutRows


class HFBackend(Backend):
    """Completions from a local causal language model directory."""

    name = "hf"

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        options: GenerationOptions | None = None,
        device: str = "auto",
        dtype: str = "auto",
        threads: int = 0,
        seed: int = 0,
        boundaries: bool = True,
        share_prefix: bool = True,
        token_healing: bool = True,
        fim: str = "auto",
        suffix_share: float = 0.25,
        reuse_prefix: bool = True,
        _shared: LoadedModel | None = None,
    ) -> None:
        self.options = options or GenerationOptions()
        self.seed = seed
        self.boundaries = boundaries  # False: stop only at EOS, stop sequences and max_new_tokens
        self.share_prefix = share_prefix  # False: plain left-padded batches (for comparison)
        self.token_healing = token_healing  # False: the prompt's tokens as they come
        self.fim = fim  # the ``fim`` setting: auto, off, a family name or a layout
        self.suffix_share = suffix_share  # the room kept for the code after the cursor
        self.reuse_prefix = reuse_prefix  # False: every call prefills its prefix from scratch
        if _shared is None:  # loaded on the model thread, as every call runs there (``_worker``)
            _shared = _worker.run(LoadedModel, model_dir(model), device, dtype, threads)
        self.loaded = _shared

    @classmethod
    def from_settings(cls, settings: Settings) -> HFBackend:

        return cls(
            settings.model,
            options=generation_options(settings),
            device=settings.device,
            dtype=settings.dtype,
            threads=settings.threads,
            seed=settings.seed,
            fim=settings.fim,
            suffix_share=settings.fim_suffix_share,
        )

    def with_options(
        self,
        options: GenerationOptions | None = None,
        *,
        boundaries: bool | None = None,
        share_prefix: bool | None = None,
        token_healing: bool | None = None,
        fim: str | None = None,
        reuse_prefix: bool | None = None,
        seed: int | None = None,
    ) -> HFBackend:
        """Another view of the same loaded model with other generation options (no reload)."""
        return HFBackend(
            options=options or self.options,
            seed=self.seed if seed is None else seed,
            boundaries=self.boundaries if boundaries is None else boundaries,
            share_prefix=self.share_prefix if share_prefix is None else share_prefix,
            token_healing=self.token_healing if token_healing is None else token_healing,
            fim=self.fim if fim is None else fim,
            suffix_share=self.suffix_share,
            reuse_prefix=self.reuse_prefix if reuse_prefix is None else reuse_prefix,
            _shared=self.loaded,
        )

    @property
    def prefix_tokens(self) -> tuple[int, int]:
        """Since the model was loaded: the shared-prefix tokens taken from the previous call's
        cache, and those run through the model (with ``reuse_prefix``)."""
        reused, run = self.loaded.prefix_tokens
        return reused, run

    @property
    def path(self) -> Path:
        return self.loaded.path

    @property
    def tokenizer(self) -> Any:
        return self.loaded.tokenizer

    @property
    def context(self) -> int:
        """The model's context in tokens (0: no limit declared)."""
        return self.loaded.context

    @property
    def fim_template(self) -> FimTemplate | None:
        """The FIM template completions with a suffix use (None: left to right only)."""
        cache = self.loaded.fim_templates
        if self.fim not in cache:
            cache[self.fim] = resolve(self.fim, self.loaded.tokenizer)
        return cache[self.fim]

    def fim_used(self) -> str | None:
        template = self.fim_template
        return template.describe() if template is not None else None

    @property
    def reads_suffix_first(self) -> bool:
        template = self.fim_template
        return template is not None and template.order == "spm"

    def suffix_shown(self, prompt: str, suffix: str) -> str:
        """The part of ``suffix`` ``fim_inputs`` keeps with ``prompt`` (at the options' token budget)."""
        template = self.fim_template
        if template is None or not self.loaded.context or not suffix.strip():
            return suffix
        cut = _fim_layout.fim_cut(
            self.loaded,
            template,
            [prompt],
            [suffix],
            self.options.max_new_tokens,
            suffix_share=self.suffix_share,
        )
        return cut[0][0]

    def describe(self) -> str:
        m = self.loaded
        return f"hf {m.path.name} on {m.device} ({str(m.dtype).removeprefix('torch.')})"

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        """One completion per prompt; with ``suffixes`` and a FIM template, filled in between."""
        if not prompts:
            return []
        return await _worker.arun(self._complete_sync, list(prompts), suffixes)

    async def complete_groups(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None, groups: Sequence[int]
    ) -> list[Outcome]:
        """``complete``, each run of ``groups`` (a prompt and its mutants) cut to the context alone
        (``CompletesInGroups``)."""
        if not prompts:
            return []
        return await _worker.arun(self._complete_sync, list(prompts), suffixes, groups)

    def requesting(self) -> contextlib.AbstractContextManager[None]:
        """Cut rows running on (``_decide.CutRows``) pause while a request is under way: on a CPU they
        would take the cores its mutation and its verdict need."""
        return _worker.requesting()

    async def complete_deciding(
        self,
        prompts: Sequence[str],
        *,
        suffixes: Sequence[str] | None = None,
        after: int,
        decide: Decide,
    ) -> Decided:
        """``complete`` with an early decision (``Backend.complete_deciding``): one batched
        ``generate`` for every row's first ``after`` new tokens, then the chosen row alone from
        the batch's cache (``_decide.py``)."""
        if not prompts:
            return Decided([], None)
        return await _worker.arun(self._deciding_sync, list(prompts), suffixes, after, decide)

    def _deciding_sync(
        self, prompts: list[str], suffixes: Sequence[str] | None, after: int, decide: Decide
    ) -> Decided:
        try:
            generations, chosen, rest = self._generate_guarded(
                prompts, self.options, suffixes, (after, decide)
            )
        except BackendOutOfMemory:  # halving the batch (``generate_safe``) needs every row whole
            return Decided(self._complete_sync(prompts, suffixes), None)
        cut = tuple(i for i, g in enumerate(generations) if g.finish_reason == "decided")
        return Decided([g.text for g in generations], chosen, cut, rest)

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's chat template (None: the model has none)."""
        template = getattr(self.loaded.tokenizer, "chat_template", None)
        return template if isinstance(template, str) and template else None

    @property
    def prefers_chat(self) -> bool:
        """An instruction model (its tokenizer has a chat template): tasks are asked as chats."""
        return self.chat_template is not None

    def chat_prompt(self, messages: Sequence[Message]) -> str:
        """The text a conversation becomes: the tokenizer's chat template with the assistant's
        turn opened, or ``plain_chat_template`` for a model without one."""
        if self.chat_template is None:
            return plain_chat_template(messages)
        text = self.loaded.tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
        )
        return str(text)

    async def chat(self, conversations: Sequence[Sequence[Message]]) -> list[Outcome]:
        """Answers to conversations, in one batched ``generate``: the chat prompts are generated
        from as they are (no token healing) and end at EOS, a stop sequence or the token budget,
        not at code boundaries (an answer holds prose and fenced code)."""
        if not conversations:
            return []
        view = self._chat_view()
        return await _worker.arun(view._complete_sync, [self.chat_prompt(c) for c in conversations])

    def _chat_view(self) -> HFBackend:
        """The view chat answers come from: no code boundaries, no token healing, and without a
        chat template the plain template's stop."""
        opts = self.options
        if self.chat_template is None:
            opts = replace(opts, stop=(*opts.stop, PLAIN_CHAT_STOP))
        return self.with_options(opts, boundaries=False, token_healing=False)

    async def complete_seeded(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Outcome]:
        """``complete``, each prompt sampled by its own seed (``SeedsEachRequest``): its answer
        depends on the prompt and its seed alone, not on the rest of the call or what ran before.
        Greedy (temperature 0): one batch, as ``complete`` (a seed cannot change a greedy answer);
        sampling: each distinct (prompt, seed) generated alone, from the generator seeded with
        that seed and without the previous call's prefix cache (its keys differ by rounding)."""
        if len(seeds) != len(prompts):
            raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts")
        if not prompts:
            return []
        if self.options.temperature == 0:
            return await _worker.arun(self._complete_sync, list(prompts))
        return await _worker.arun(self._seeded_sync, list(prompts), list(seeds))

    async def chat_seeded(
        self, conversations: Sequence[Sequence[Message]], seeds: Sequence[int]
    ) -> list[Outcome]:
        """``chat``, each conversation sampled by its own seed (``complete_seeded``)."""
        prompts = [self.chat_prompt(c) for c in conversations]
        return await self._chat_view().complete_seeded(prompts, seeds)

    def _seeded_sync(self, prompts: list[str], seeds: list[int]) -> list[Outcome]:
        done: dict[tuple[str, int], Outcome] = {}
        for key in zip(prompts, seeds, strict=True):
            if key not in done:
                view = self.with_options(seed=key[1], reuse_prefix=False)
                done[key] = view._complete_sync([key[0]])[0]
        return [done[key] for key in zip(prompts, seeds, strict=True)]

    def _complete_sync(
        self, prompts: list[str], suffixes: Sequence[str] | None = None, groups: Sequence[int] | None = None
    ) -> list[Outcome]:
        outcomes = self.generate_safe(prompts, suffixes=suffixes, groups=groups)
        return [g if isinstance(g, BackendError) else g.text for g in outcomes]

    def generate_safe(
        self,
        prompts: Sequence[str],
        options: GenerationOptions | None = None,
        *,
        suffixes: Sequence[str] | None = None,
        groups: Sequence[int] | None = None,
        on_step: OnStep | None = None,
    ) -> list[Generation | BackendError]:
        """Like ``generate``, but out of memory halves the batch, and a prompt that still does
        not fit gets a BackendOutOfMemory in its place instead of failing the whole call.
        Halved, the batch is split between ``groups`` where it has more than one (``on_step``
        is then told each half's first row)."""
        try:
            return list(self.generate(prompts, options, suffixes=suffixes, groups=groups, on_step=on_step))
        except BackendOutOfMemory as exc:
            if len(prompts) == 1:
                return [exc]
            if groups is not None and len(groups) > 1:  # whole prompts to each half
                half = len(groups) // 2
                mid = sum(groups[:half])
                head = None if suffixes is None else suffixes[:mid]
                tail = None if suffixes is None else suffixes[mid:]
                return self.generate_safe(
                    prompts[:mid], options, suffixes=head, groups=groups[:half], on_step=on_step
                ) + self.generate_safe(
                    prompts[mid:], options, suffixes=tail, groups=groups[half:], on_step=_after(on_step, mid)
                )
            mid = len(prompts) // 2
            head = None if suffixes is None else suffixes[:mid]
            tail = None if suffixes is None else suffixes[mid:]
            return self.generate_safe(
                prompts[:mid], options, suffixes=head, on_step=on_step
            ) + self.generate_safe(prompts[mid:], options, suffixes=tail, on_step=_after(on_step, mid))

    def generate(
        self,
        prompts: Sequence[str],
        options: GenerationOptions | None = None,
        *,
        suffixes: Sequence[str] | None = None,
        groups: Sequence[int] | None = None,
        on_step: OnStep | None = None,
    ) -> list[Generation]:
        """Complete every prompt in one batched ``generate`` call (blocking; thread-safe); with
        ``suffixes`` (the code after each cursor) and a FIM template, fill in the middle;
        ``groups``: see ``Backend.complete``. ``on_step``: called on the model's thread after
        every decoding step with each row's completion so far (untrimmed) and how each has ended
        (``"stop"``, ``"length"``; None while it runs) and how many rows the step generated; it
        returns the rows to stop there (a server whose client went away, ``cctest serve``), and
        they leave the batch: the rows still running go on without them
        (``_decide.generate_live``)."""
        if not prompts:
            return []
        return self._generate_guarded(
            list(prompts), options or self.options, suffixes, None, groups, on_step
        )[0]

    def generate_deciding(
        self,
        prompts: Sequence[str],
        after: int,
        decide: Decide,
        options: GenerationOptions | None = None,
        *,
        suffixes: Sequence[str] | None = None,
    ) -> tuple[list[Generation], int | None]:
        """``generate``, but every row stops after ``after`` new tokens (past its healed tail),
        ``decide`` chooses a row from their completions so far, and only that row goes on; the
        others end there (their ``finish_reason`` is "decided" where they had not ended). Returns
        the generations and the chosen row (None: ``decide`` was not asked, because every row
        ended within ``after`` tokens, there is one row, or the model does not use the
        shared-prefix cache a row is taken from)."""
        if not prompts:
            return [], None
        got = self._generate_guarded(list(prompts), options or self.options, suffixes, (after, decide))
        return got[0], got[1]

    def _generate_guarded(
        self,
        prompts: list[str],
        opts: GenerationOptions,
        suffixes: Sequence[str] | None,
        deciding: tuple[int, Decide] | None,
        groups: Sequence[int] | None = None,
        on_step: OnStep | None = None,
    ) -> tuple[list[Generation], int | None, CutRows | None]:
        """``_generate_locked`` on the model thread (``_worker``) under the model's lock, out of
        memory as BackendOutOfMemory."""
        if suffixes is not None and len(suffixes) != len(prompts):
            raise ValueError(f"{len(suffixes)} suffixes for {len(prompts)} prompts")
        row_runs(groups, len(prompts))  # a wrong grouping fails here, not halfway through
        if not _worker.on_model_thread():
            return _worker.run(self._generate_guarded, prompts, opts, suffixes, deciding, groups, on_step)
        with self.loaded.lock, attention_kernels(self.loaded.device):
            try:
                return self._generate_locked(prompts, opts, suffixes, deciding, groups, on_step)
            except Exception as exc:
                if is_oom(exc):
                    free_cuda_cache()
                    raise BackendOutOfMemory(
                        f"the model ran out of memory on a batch of {len(prompts)} prompt(s); "
                        "use fewer mutants, a shorter max_new_tokens or a smaller model."
                    ) from exc
                raise

    # -- the batched generation ------------------------------------------------------------

    def encode(
        self, prompts: Sequence[str], max_new_tokens: int, groups: Sequence[int] | None = None
    ) -> Encoding:
        """The batch for ``prompts``, healed and cut to the context (``_encode.encode``)."""
        return self.plan(prompts, max_new_tokens, groups, grouped=False).encoding

    def plan(
        self,
        rows: Sequence[str],
        max_new_tokens: int,
        groups: Sequence[int] | None = None,
        *,
        grouped: bool,
    ) -> BatchPlan:
        """The ``BatchPlan`` of ``rows`` at this view's settings; ``grouped``: each row sharing
        with the first row what it has in common with it (``BatchPlan.of``)."""
        return BatchPlan.of(
            self.loaded,
            rows,
            max_new_tokens,
            groups,
            token_healing=self.token_healing,
            share_prefix=self.share_prefix,
            grouped=grouped,
        )

    def plan_prefill(
        self,
        prompts: Sequence[str],
        max_new_tokens: int,
        *,
        grouped: bool = True,
        suffixes: Sequence[str] | None = None,
    ) -> int:
        """How many token positions the batch of ``prompts`` runs through the model before it
        decodes (padding included): with ``grouped`` the layout ``generate`` uses (each row
        sharing what it has in common with the first, rows prefilled in groups), else one prefix
        shared by every row and the rest padded to the longest. ``suffixes``: the code after each
        cursor, laid out with its prompt as ``generate`` does (``fim_inputs``)."""
        rows = self.fim_inputs(prompts, suffixes, max_new_tokens) or prompts
        return self.plan(rows, max_new_tokens, grouped=grouped).prefill_tokens()

    def fim_inputs(
        self,
        prompts: Sequence[str],
        suffixes: Sequence[str] | None,
        max_new_tokens: int,
        groups: Sequence[int] | None = None,
    ) -> list[str] | None:
        """The rows' texts in the FIM template, cut to fit the context; None: left to right
        (``_fim_layout.fim_inputs``)."""
        return _fim_layout.fim_inputs(
            self.loaded,
            self.fim_template,
            prompts,
            suffixes,
            max_new_tokens,
            groups,
            suffix_share=self.suffix_share,
        )

    def _generate_locked(
        self,
        prompts: list[str],
        opts: GenerationOptions,
        suffixes: Sequence[str] | None = None,
        deciding: tuple[int, Decide] | None = None,
        groups: Sequence[int] | None = None,
        on_step: OnStep | None = None,
    ) -> tuple[list[Generation], int | None, CutRows | None]:
        """One batched ``generate``: plan the batch (FIM rows when there is a template and a
        suffix; ``BatchPlan``), prefill its shared prefix once (``Prefill``), generate every row
        and collect each row's trimmed completion (``Decoder``). ``deciding`` (after, decide):
        stop every row after that many new tokens and finish the row ``decide`` chooses alone
        (``EarlyDecision``); returns the row, or None, and the rows it cut, to run on, or None."""
        import torch

        from ._decide import EarlyDecision, generate_live
        from ._decoder import Decoder
        from ._prefill import Prefill

        m = self.loaded
        rows = self.fim_inputs(prompts, suffixes, opts.max_new_tokens, groups) or prompts
        # rows prefilled on their own (``Prefill.prefill_rows``) share with the first row as much
        # as each has in common with it, not only what every row has in common
        plan = self.plan(rows, opts.max_new_tokens, groups, grouped=m.cascade)
        prefill = Prefill(m, plan, reuse_prefix=self.reuse_prefix)
        batch = prefill.batch
        told = None if on_step is None else functools.partial(on_step, 0)
        decoder = Decoder.for_batch(
            m, self.seed, opts, plan, batch.start, prompts, boundaries=self.boundaries, on_step=told
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


def _after(on_step: OnStep | None, first: int) -> OnStep | None:
    """``on_step`` for the rows from ``first`` on (a halved batch's second half)."""
    if on_step is None:
        return None
    return lambda at, texts, ended, batch: on_step(first + at, texts, ended, batch)


__all__ = ["HFBackend", "OnStep"]
