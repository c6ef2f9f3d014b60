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
``_decide.CutRows``). ``_generate.py`` composes them for one call, on the model thread under the
model's lock; ``_calls.py`` answers the backend's calls with it (out of memory halving the batch,
seeded rounds). ``HFBackend`` is the façade: it holds a view (``_view.View``: the loaded model
with the view's settings, its FIM template and batch plan) and hands each call to those.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import BackendError
from . import _calls, _generate, _worker
from ._encode import Encoding
from ._generate import OnStep
from ._view import View
from .base import Backend, Decide, Decided, GenerationOptions, Message, Outcome, generation_options
from .fim import FimTemplate
from .loaded import Generation, LoadedModel, model_dir


class HFBackend(Backend):
    """Completions from a local causal language model directory: a view of a loaded model
    (``view``), whose calls run on the model thread (``_calls``, ``_generate``)."""

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
        adapt_threads: bool = True,
        _view: View | None = None,
    ) -> None:
        """``seed`` … ``reuse_prefix``: the view's settings (``View``); ``_view``: another view of
        a loaded model (``with_options``)."""
        if _view is None:  # loaded on the model thread, as every call runs there (``_worker``)
            loaded = _worker.run(LoadedModel, model_dir(model), device, dtype, threads, adapt_threads)
            _view = View(
                loaded,
                options or GenerationOptions(),
                seed=seed,
                boundaries=boundaries,
                share_prefix=share_prefix,
                token_healing=token_healing,
                fim=fim,
                suffix_share=suffix_share,
                reuse_prefix=reuse_prefix,
            )
        self.view = _view

    @classmethod
    def from_settings(cls, settings: Settings, *, adapt_threads: bool = True) -> HFBackend:
        """The backend ``settings`` describe; ``adapt_threads`` False keeps torch's default
        threads for ``threads`` 0 instead of fitting them to the idle cores at each call (a
        benchmark's completions then do not depend on the machine's load)."""
        return cls(
            settings.model,
            adapt_threads=adapt_threads,
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
        view = self.view.but(
            options=options,
            boundaries=boundaries,
            share_prefix=share_prefix,
            token_healing=token_healing,
            fim=fim,
            reuse_prefix=reuse_prefix,
            seed=seed,
        )
        return HFBackend(_view=view)

    @property
    def loaded(self) -> LoadedModel:
        return self.view.loaded

    @property
    def options(self) -> GenerationOptions:
        return self.view.options

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

    def describe(self) -> str:
        m = self.loaded
        return f"hf {m.path.name} on {m.device} ({str(m.dtype).removeprefix('torch.')})"

    # -- the capabilities (``base.py``'s protocols) ----------------------------------------

    @property
    def fim_template(self) -> FimTemplate | None:
        """The FIM template completions with a suffix use (None: left to right only)."""
        return self.view.fim_template

    def fim_used(self) -> str | None:
        return self.view.fim_used()

    @property
    def reads_suffix_first(self) -> bool:
        return self.view.reads_suffix_first

    def suffix_shown(self, prompt: str, suffix: str) -> str:
        return self.view.suffix_shown(prompt, suffix)

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        """One completion per prompt; with ``suffixes`` and a FIM template, filled in between."""
        if not prompts:
            return []
        return await _worker.arun(_calls.complete, self.view, list(prompts), suffixes)

    async def complete_groups(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None, groups: Sequence[int]
    ) -> list[Outcome]:
        """``complete``, each run of ``groups`` cut to the context alone (``CompletesInGroups``)."""
        if not prompts:
            return []
        return await _worker.arun(_calls.complete, self.view, list(prompts), suffixes, groups)

    def requesting(self) -> contextlib.AbstractContextManager[None]:
        """Cut rows running on (``_decide.CutRows``) pause while a request is under way: on a CPU they
        would take the cores its mutation and its verdict need."""
        return _worker.requesting()

    async def complete_deciding(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None, after: int, decide: Decide
    ) -> Decided:
        """``complete`` with an early decision (``DecidesEarly``): one batched ``generate`` for
        every row's first ``after`` new tokens, then the chosen row alone (``_decide.py``)."""
        if not prompts:
            return Decided([], None)
        return await _worker.arun(_calls.deciding, self.view, list(prompts), suffixes, after, decide)

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's chat template (None: the model has none)."""
        return self.loaded.chat_template

    @property
    def prefers_chat(self) -> bool:
        """An instruction model (its tokenizer has a chat template): tasks are asked as chats."""
        return self.chat_template is not None

    def chat_prompt(self, messages: Sequence[Message]) -> str:
        return self.loaded.chat_prompt(messages)

    async def chat(self, conversations: Sequence[Sequence[Message]]) -> list[Outcome]:
        """Answers to conversations, in one batched ``generate``: the chat prompts are generated
        from as they are (no token healing) and end at EOS, a stop sequence or the token budget,
        not at code boundaries (an answer holds prose and fenced code)."""
        if not conversations:
            return []
        prompts = [self.chat_prompt(c) for c in conversations]
        return await _worker.arun(_calls.complete, self.view.for_chat(), prompts)

    async def complete_seeded(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Outcome]:
        """``complete``, each prompt sampled by its own seed (``SeedsEachRequest``, ``_calls.seeded``)."""
        return await _worker.arun(_calls.seeded, self.view, list(prompts), list(seeds))

    async def chat_seeded(
        self, conversations: Sequence[Sequence[Message]], seeds: Sequence[int]
    ) -> list[Outcome]:
        """``chat``, each conversation sampled by its own seed (``complete_seeded``)."""
        prompts = [self.chat_prompt(c) for c in conversations]
        return await _worker.arun(_calls.seeded, self.view.for_chat(), prompts, list(seeds))

    # -- blocking calls (thread-safe: each runs on the model thread) ------------------------

    def generate_safe(
        self,
        prompts: Sequence[str],
        options: GenerationOptions | None = None,
        *,
        suffixes: Sequence[str] | None = None,
        groups: Sequence[int] | None = None,
        on_step: OnStep | None = None,
    ) -> list[Generation | BackendError]:
        """``generate``, out of memory halving the batch (``_calls.generate_safe``)."""
        opts = options or self.options
        return _calls.generate_safe(
            self.view, prompts, opts, suffixes=suffixes, groups=groups, on_step=on_step
        )

    def generate(
        self,
        prompts: Sequence[str],
        options: GenerationOptions | None = None,
        *,
        suffixes: Sequence[str] | None = None,
        groups: Sequence[int] | None = None,
        on_step: OnStep | None = None,
    ) -> list[Generation]:
        """Complete every prompt in one batched ``generate`` call; with ``suffixes`` and a FIM
        template, fill in the middle; ``groups``: see ``Backend.complete``; ``on_step``: see
        ``_generate.OnStep`` (the rows it stops leave the batch: ``cctest serve``)."""
        if not prompts:
            return []
        opts = options or self.options
        return _generate.generate(self.view, list(prompts), opts, suffixes, None, groups, on_step)[0]

    def generate_deciding(
        self,
        prompts: Sequence[str],
        after: int,
        decide: Decide,
        options: GenerationOptions | None = None,
        *,
        suffixes: Sequence[str] | None = None,
    ) -> tuple[list[Generation], int | None]:
        """``generate``, but every row stops after ``after`` new tokens, ``decide`` chooses a row
        from their completions so far, and only that row goes on (``_generate.generate``).
        Returns the generations and the chosen row (None: ``decide`` was not asked)."""
        if not prompts:
            return [], None
        opts = options or self.options
        got = _generate.generate(self.view, list(prompts), opts, suffixes, (after, decide))
        return got[0], got[1]

    # -- the batch's layout (``View``) -------------------------------------------------------

    def encode(
        self, prompts: Sequence[str], max_new_tokens: int, groups: Sequence[int] | None = None
    ) -> Encoding:
        """The batch for ``prompts``, healed and cut to the context (``_encode.encode``)."""
        return self.view.plan(prompts, max_new_tokens, groups, grouped=False).encoding

    def plan_prefill(
        self,
        prompts: Sequence[str],
        max_new_tokens: int,
        *,
        grouped: bool = True,
        suffixes: Sequence[str] | None = None,
    ) -> int:
        """``View.plan_prefill``: the token positions the batch runs before it decodes."""
        return self.view.plan_prefill(prompts, max_new_tokens, grouped=grouped, suffixes=suffixes)

    def fim_inputs(
        self,
        prompts: Sequence[str],
        suffixes: Sequence[str] | None,
        max_new_tokens: int,
        groups: Sequence[int] | None = None,
    ) -> list[str] | None:
        """``View.fim_inputs``: the rows in the FIM template, or None (left to right)."""
        return self.view.fim_inputs(prompts, suffixes, max_new_tokens, groups)


__all__ = ["Generation", "HFBackend", "OnStep"]
