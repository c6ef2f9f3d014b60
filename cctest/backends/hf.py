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
about the same length (``_row_groups``), so the one row that parts early does not pad every row
to its length, and ``generate`` continues all rows together, each group of rows reading only
its own keys (``_decode_groups``). A single prompt shares nothing: it is a plain ``generate``
from the cache of its tokens but the last. A stopping criterion decodes each row after every
token and marks it finished once its natural boundary appears (``_stop.BoundaryStopper``);
``generate`` ends as soon as every row has.
One call runs four steps: build the batch (the rows laid out in a FIM template by
``_fim_layout.py``, tokenized, healed and cut to the context by ``_encode.py``) and prefill the
shared prefix (both ``_prefill.py``, on the rows' layout from ``_layout.py``), generate (with the
per-row controls of ``_rows.py``: stopping and token healing), collect each row's completion
(``_rows.collect``); an early decision finishes the chosen row alone (``_decide.py``).

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
suffix's end) falls in steps (``_CUT_STEP``), so the model sees up to a step less than would fit.

Reuse across calls: while typing, a request's prompt extends the previous one's. The model keeps
the key/value cache of the last call's shared prefix (the first row's tokens but its last; for a
single prompt the same) with its token ids, one per loaded model; the next call runs only the
tokens past what its prefix has in common with them, on top of a copy of that cache
(``_prefill.prefix_kv``). The cut steps keep the first kept token in place over many keystrokes, so a
prompt past the context reuses too. Keys are the same up to floating-point rounding (the prefix
is run in two pieces); greedy completions are checked equal in the tests.

The model is loaded once, from local files only. Loading and every ``generate`` run on one thread
(``_worker``: PyTorch's OpenMP threads stay fast only while one thread drives them), and a lock
makes one ``generate`` run at a time, so several threads (or the server) can share it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._cache import LRU
from ..config import Settings, missing_model_dir
from ..errors import BackendError, BackendOutOfMemory, ConfigError, ModelLoadError
from ..redact import redact_url
from . import _encode, _fim_layout, _worker
from ._encode import _CUT_STEP as _CUT_STEP  # re-exported, as below: tests
from ._encode import _HEAL_MAX_TOKENS as _HEAL_MAX_TOKENS
from ._encode import Encoding
from ._layout import _CALL_TOKENS, _row_groups, _runs, _shares
from ._layout import _common_length as _common_length  # re-exported, as below: tests and benchmarks
from ._layout import _decode_groups as _decode_groups
from ._stop import BoundaryStopper
from .base import (
    PLAIN_CHAT_STOP,
    Backend,
    Decide,
    Decided,
    GenerationOptions,
    Message,
    Outcome,
    plain_chat_template,
)
from .fim import FAMILIES, FimTemplate, resolve

if TYPE_CHECKING:
    from ._decide import Cut
    from ._prefill import Reused

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


@dataclass(frozen=True)
class Generation:
    """One row's result: the trimmed completion and what ended it (OpenAI's finish_reason)."""

    text: str
    # "stop": EOS, a stop sequence or a boundary; "length": max_new_tokens; "decided": stopped
    # where an early decision chose another row (``generate_deciding``)
    finish_reason: str
    prompt_tokens: int  # after truncation
    completion_tokens: int  # generated before the row finished


class _Model:
    """The loaded model and tokenizer, shared by every HFBackend view of them."""

    def __init__(self, path: Path, device: str, dtype: str, threads: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        if threads > 0:
            torch.set_num_threads(threads)
        self.path = path
        self.device = _resolve_device(device)
        self.dtype = _resolve_dtype(dtype, self.device)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except Exception as exc:  # transformers raises OSError, ValueError, … for unusable files
            raise ModelLoadError(f"the tokenizer in {path} cannot be loaded: {_first_line(exc)}.") from exc
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # a progress bar per load is noise in a CLI or a server log
        try:
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=self.dtype)
        except Exception as exc:
            if _is_oom(exc):
                raise BackendOutOfMemory(f"loading the model in {path} ran out of memory.") from exc
            raise ModelLoadError(
                f"{path} cannot be loaded as a causal language model: {_first_line(exc)}."
            ) from exc
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        self.model = model.to(self.device).eval()
        config = model.config
        supports = getattr(self.model, "_supports_logits_to_keep", None)
        self.keeps_logits = bool(supports and supports())
        self.layers = int(getattr(config.get_text_config(decoder=True), "num_hidden_layers", 0) or 0)
        # the key/value cache's argument: ``cache`` since transformers 5.2x, where the older
        # ``past_key_values`` still works with a FutureWarning and is to be removed
        self.cache_kw = _cache_keyword(self.model)
        # the prefix kept as one copy that attention reads for all rows (else a copy per row)
        self.cascade = _enable_shared_prefix(self.model) and self.layers > 0
        self.context = int(
            getattr(config, "max_position_embeddings", 0) or getattr(config, "n_positions", 0) or 0
        )
        eos = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else config.eos_token_id
        if isinstance(eos, list):
            eos = eos[0] if eos else None
        self.eos_ids = {int(i) for i in ([eos] if eos is not None else []) + _as_list(config.eos_token_id)}
        # the tokens that end a FIM middle (<EOT>, <|file_sep|>, ...) end a completion too
        vocab = self.tokenizer.get_vocab()
        self.eos_ids |= {int(vocab[t]) for tpl in FAMILIES.values() for t in tpl.stops if t in vocab}
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        self.pad_id = int(pad if pad is not None else 0)
        self.start_id = int(eos if eos is not None else self.pad_id)  # the input of an empty prompt
        # cctest pads and masks each batch itself (its pad id goes to generate). transformers drops a
        # mask of all ones, and the model then warns of padding on stderr whenever its config's pad id
        # is at an edge of the input; when that id is also a real token (BOS/EOS: the input of a prompt
        # healed down to nothing) the warning is always wrong, so the loaded config forgets it.
        for cfg in (config, config.get_text_config(decoder=True)):
            if getattr(cfg, "pad_token_id", None) in {self.start_id, *self.eos_ids, config.bos_token_id}:
                cfg.pad_token_id = None
        # rows that share the prompt's head for different lengths make a batch wider than any row
        # (``_shares``); transformers then warns that the input passed the context, but positions
        # come from the mask and stay within it, so that one warning is dropped
        logging.getLogger("transformers.generation.stopping_criteria").addFilter(_WideBatchFilter())
        self.lock = threading.Lock()
        # the FIM template per `fim` setting: resolving reads the whole vocabulary (about 1 ms),
        # and a request asks several times
        self.fim_templates: dict[str, FimTemplate | None] = {}
        self._texts: list[str] | None = None
        # the key/value cache of the last call's shared prefix (one, under the lock): the next
        # request's prompt mostly extends it, and only the tokens past it are run (``_prefill.prefix_kv``)
        self.reused: Reused | None = None
        self.prefix_tokens = [0, 0]  # prefix tokens taken from ``reused``, and run, since loaded
        self._allowed: LRU[tuple[str, int], Any] = LRU(256)

    def token_texts(self) -> list[str]:
        """Every token id's text ("" for special tokens), computed once."""
        if self._texts is None:
            tok = self.tokenizer
            # added tokens marked special count too: a tokenizer may hold its FIM tokens only
            # there, and healing must never take "<fim_middle>" for text to write back
            added = getattr(tok, "added_tokens_decoder", {}) or {}
            special = set(tok.all_special_ids) | {i for i, t in added.items() if getattr(t, "special", False)}
            texts = tok.batch_decode([[i] for i in range(len(tok))], clean_up_tokenization_spaces=False)
            self._texts = ["" if i in special else t for i, t in enumerate(texts)]
        return self._texts

    def allowed(self, rest: str, vocab: int) -> Any:
        """A bool mask over ``vocab`` logits: the tokens that write ``rest`` back, i.e. whose
        text starts with it or is a (non-empty) beginning of it."""
        return self._allowed.get_or_compute((rest, vocab), lambda: self._mask(rest, vocab))

    def _mask(self, rest: str, vocab: int) -> Any:
        import torch

        texts = self.token_texts()
        ok = [bool(t) and (t.startswith(rest) or rest.startswith(t)) for t in texts[:vocab]]
        mask = torch.zeros(vocab, dtype=torch.bool)
        mask[: len(ok)] = torch.tensor(ok, dtype=torch.bool)
        return mask.to(self.device)


class _WideBatchFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "exceeded the model's predefined maximum length" not in record.getMessage()


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
        _shared: _Model | None = None,
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
            _shared = _worker.run(_Model, _model_dir(model), device, dtype, threads)
        self._m = _shared

    @classmethod
    def from_settings(cls, settings: Settings) -> HFBackend:
        from . import generation_options

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
    ) -> HFBackend:
        """Another view of the same loaded model with other generation options (no reload)."""
        return HFBackend(
            options=options or self.options,
            seed=self.seed,
            boundaries=self.boundaries if boundaries is None else boundaries,
            share_prefix=self.share_prefix if share_prefix is None else share_prefix,
            token_healing=self.token_healing if token_healing is None else token_healing,
            fim=self.fim if fim is None else fim,
            suffix_share=self.suffix_share,
            reuse_prefix=self.reuse_prefix if reuse_prefix is None else reuse_prefix,
            _shared=self._m,
        )

    @property
    def prefix_tokens(self) -> tuple[int, int]:
        """Since the model was loaded: the shared-prefix tokens taken from the previous call's
        cache, and those run through the model (with ``reuse_prefix``)."""
        reused, run = self._m.prefix_tokens
        return reused, run

    @property
    def path(self) -> Path:
        return self._m.path

    @property
    def tokenizer(self) -> Any:
        return self._m.tokenizer

    @property
    def context(self) -> int:
        """The model's context in tokens (0: no limit declared)."""
        return self._m.context

    @property
    def fim_template(self) -> FimTemplate | None:
        """The FIM template completions with a suffix use (None: left to right only)."""
        cache = self._m.fim_templates
        if self.fim not in cache:
            cache[self.fim] = resolve(self.fim, self._m.tokenizer)
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
        if template is None or not self._m.context or not suffix.strip():
            return suffix
        cut = _fim_layout.fim_cut(
            self._m, template, [prompt], [suffix], self.options.max_new_tokens, suffix_share=self.suffix_share
        )
        return cut[0][0]

    def describe(self) -> str:
        return f"hf {self._m.path.name} on {self._m.device} ({str(self._m.dtype).removeprefix('torch.')})"

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
        """Cut rows running on (``_run_on``) pause while a request is under way: on a CPU they
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
        kept = None
        if rest is not None:
            from ._decide import CutRows

            kept = CutRows(self._run_on, rest)
        return Decided([g.text for g in generations], chosen, cut, kept)

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's chat template (None: the model has none)."""
        template = getattr(self._m.tokenizer, "chat_template", None)
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
        text = self._m.tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
        )
        return str(text)

    async def chat(self, conversations: Sequence[Sequence[Message]]) -> list[Outcome]:
        """Answers to conversations, in one batched ``generate``: the chat prompts are generated
        from as they are (no token healing) and end at EOS, a stop sequence or the token budget,
        not at code boundaries (an answer holds prose and fenced code)."""
        if not conversations:
            return []
        prompts = [self.chat_prompt(c) for c in conversations]
        opts = self.options
        if self.chat_template is None:
            opts = GenerationOptions(
                opts.max_new_tokens, opts.temperature, opts.top_p, (*opts.stop, PLAIN_CHAT_STOP)
            )
        view = self.with_options(opts, boundaries=False, token_healing=False)
        return await _worker.arun(view._complete_sync, prompts)

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
    ) -> list[Generation | BackendError]:
        """Like ``generate``, but out of memory halves the batch, and a prompt that still does
        not fit gets a BackendOutOfMemory in its place instead of failing the whole call.
        Halved, the batch is split between ``groups`` where it has more than one."""
        try:
            return list(self.generate(prompts, options, suffixes=suffixes, groups=groups))
        except BackendOutOfMemory as exc:
            if len(prompts) == 1:
                return [exc]
            if groups is not None and len(groups) > 1:  # whole prompts to each half
                half = len(groups) // 2
                mid = sum(groups[:half])
                head = None if suffixes is None else suffixes[:mid]
                tail = None if suffixes is None else suffixes[mid:]
                return self.generate_safe(
                    prompts[:mid], options, suffixes=head, groups=groups[:half]
                ) + self.generate_safe(prompts[mid:], options, suffixes=tail, groups=groups[half:])
            mid = len(prompts) // 2
            head = None if suffixes is None else suffixes[:mid]
            tail = None if suffixes is None else suffixes[mid:]
            return self.generate_safe(prompts[:mid], options, suffixes=head) + self.generate_safe(
                prompts[mid:], options, suffixes=tail
            )

    def generate(
        self,
        prompts: Sequence[str],
        options: GenerationOptions | None = None,
        *,
        suffixes: Sequence[str] | None = None,
        groups: Sequence[int] | None = None,
    ) -> list[Generation]:
        """Complete every prompt in one batched ``generate`` call (blocking; thread-safe); with
        ``suffixes`` (the code after each cursor) and a FIM template, fill in the middle;
        ``groups``: see ``Backend.complete``."""
        if not prompts:
            return []
        return self._generate_guarded(list(prompts), options or self.options, suffixes, None, groups)[0]

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
    ) -> tuple[list[Generation], int | None, Cut | None]:
        """``_generate_locked`` on the model thread (``_worker``) under the model's lock, out of
        memory as BackendOutOfMemory."""
        if suffixes is not None and len(suffixes) != len(prompts):
            raise ValueError(f"{len(suffixes)} suffixes for {len(prompts)} prompts")
        _runs(groups, len(prompts))  # a wrong grouping fails here, not halfway through
        if not _worker.on_model_thread():
            return _worker.run(self._generate_guarded, prompts, opts, suffixes, deciding, groups)
        with self._m.lock, _attention_kernels(self._m.device):
            try:
                return self._generate_locked(prompts, opts, suffixes, deciding, groups)
            except Exception as exc:
                if _is_oom(exc):
                    _free_cuda_cache()
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
        return _encode.encode(
            self._m,
            prompts,
            max_new_tokens,
            groups,
            token_healing=self.token_healing,
            share_prefix=self.share_prefix,
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
        enc = self.encode(self.fim_inputs(prompts, suffixes, max_new_tokens) or prompts, max_new_tokens)
        shares = _shares(enc.ids, enc.max_new, self._m.context) if grouped and self.share_prefix else None
        if shares is None:
            return enc.prefix + len(enc.ids) * max(len(x) - enc.prefix for x in enc.ids)
        own = [len(x) - d - 1 for x, d in zip(enc.ids, shares, strict=True)]
        groups = _row_groups(own, _CALL_TOKENS)
        return max(shares) + sum(len(g) * max(own[i] for i in g) for g in groups) + len(enc.ids)

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
            self._m,
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
    ) -> tuple[list[Generation], int | None, Cut | None]:
        """One batched ``generate``: build the batch (FIM rows when there is a template and a
        suffix), prefill the shared prefix once, generate every row, collect each row's trimmed
        completion. ``deciding`` (after, decide): stop every row after that many new tokens and
        finish the row ``decide`` chooses alone (``_decide.finish_row``); returns the row, or None, and
        the batch as it stopped when it cut rows (``_run_on`` goes on with it), or None."""
        import torch

        from ._prefill import build_batch, prefill
        from ._rows import Healing, RowStops, collect, generate_kwargs

        m = self._m
        inputs = self.fim_inputs(prompts, suffixes, opts.max_new_tokens, groups) or prompts
        enc = self.encode(inputs, opts.max_new_tokens, groups)
        # rows prefilled on their own (see ``_prefill.prefill_rows``) share with the first row as much as
        # each has in common with it, not only what every row has in common
        shares = _shares(enc.ids, enc.max_new, m.context) if self.share_prefix and m.cascade else None
        batch = build_batch(m, enc, shares)
        texts = m.token_texts()
        stoppers = [BoundaryStopper(p, opts.stop, boundaries=self.boundaries) for p in prompts]
        stops = RowStops(batch.start, enc.heal, stoppers, texts, m.tokenizer, m.eos_ids, opts.max_new_tokens)
        healing = Healing(batch.start, enc.heal, texts, m.allowed) if any(enc.heal) else None
        # with nothing to look for (no boundaries, no stop sequences, no healing) no row is decoded
        watch = self.boundaries or bool(opts.stop) or healing is not None
        kwargs = generate_kwargs(m, self.seed, opts, enc.max_new, stops if watch else None, healing)
        # the tokens every row writes before the decision: ``after`` past the healed tail
        first = 0
        if deciding is not None and m.cascade and len(prompts) > 1:
            first = deciding[0] + max(0, enc.max_new - opts.max_new_tokens)
            if not 0 < first < enc.max_new:
                first = 0
        with torch.inference_mode():
            past = prefill(m, batch, enc.max_new, shares, reuse_prefix=self.reuse_prefix)
            if past is not None:
                kwargs[m.cache_kw] = past
            if not first:
                out = m.model.generate(input_ids=batch.input_ids, attention_mask=batch.mask, **kwargs)
                return collect(m, out, batch.start, enc, stoppers, stops), None, None
            kwargs.update(max_new_tokens=first, return_dict_in_generate=True)
            out = m.model.generate(input_ids=batch.input_ids, attention_mask=batch.mask, **kwargs)
            seqs = out.sequences
            generations = collect(m, seqs, batch.start, enc, stoppers, stops)
            ended = stops.ended(seqs)
            if all(ended) or deciding is None:
                return generations, None, None
            chosen = deciding[1]([g.text for g in generations])
            for i, done in enumerate(ended):
                if not done and i != chosen:
                    generations[i] = dataclasses.replace(generations[i], finish_reason="decided")
            written = seqs.shape[1] - batch.start  # new tokens in every row so far
            full_mask = torch.cat([batch.mask, batch.mask.new_ones(seqs.shape[0], written)], dim=-1)
            rest = None
            if any(g.finish_reason == "decided" for g in generations):
                from ._decide import Cut

                # the batch as it stopped: ``finish_row`` copies the chosen row's part of the cache
                rest = Cut(seqs, full_mask, out[m.cache_kw], stops, batch.start, enc, stoppers, opts, watch)
            if chosen is None or ended[chosen]:
                return generations, chosen, rest
            from ._decide import finish_row

            mask = full_mask[chosen].bool()
            generations[chosen] = finish_row(
                self, seqs[chosen][mask], mask, out[m.cache_kw], chosen, enc, stoppers[chosen], opts, watch
            )
            return generations, chosen, rest

    def _run_on(self, cut: Cut) -> list[Outcome] | None:
        """The batch an early decision stopped, run on together (``_decide.run_on``)."""
        from ._decide import run_on

        return run_on(self, cut)


def _attention_kernels(device: Any) -> Any:
    """The SDPA backends a call may use: on CUDA all but cuDNN's. PyTorch prefers cuDNN attention
    on recent GPUs, and it builds an execution plan for every new sequence length: on an H100 and
    an H200 a plain completion of the bundled model took about 1.3 s at each new prompt length
    (every keystroke) and 0.1 s when the length was seen before; flash and memory-efficient
    attention build nothing. Elsewhere, and on a torch without the choice, nothing changes."""
    if getattr(device, "type", None) != "cuda":
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # torch < 2.3: no cuDNN attention to avoid
        return contextlib.nullcontext()
    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])


def _cache_keyword(model: Any) -> str:
    """The name under which ``model``'s forward (and ``generate``) take the key/value cache, and
    its outputs return it."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def _enable_shared_prefix(model: Any) -> bool:
    try:
        from ._prefix_attention import enable

        return enable(model)
    except Exception:  # an architecture or transformers version it does not fit: repeat the prefix
        return False


def _model_dir(model: str | Path | None) -> Path:
    if model is None:
        from ..models import bundled_model_path

        return bundled_model_path()
    if isinstance(model, str) and "://" in model:
        raise ModelLoadError(
            f"{redact_url(model)} is a server's URL, not a model directory; use --backend http for a server."
        )
    path = Path(model).expanduser()
    if not path.exists():
        raise ModelLoadError(missing_model_dir(str(model)))
    if not path.is_dir():
        raise ModelLoadError(f"{path} is a file; give the directory of a saved model.")
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{path} is not a model directory because it has no config.json.")
    if not any((path / f).is_file() for f in _TOKENIZER_FILES):
        raise ModelLoadError(f"{path} has no tokenizer (tokenizer.json or tokenizer_config.json).")
    return path


def _resolve_device(device: str) -> Any:
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ConfigError(f"'{device}' is not a device; use auto, cpu, cuda or cuda:N.") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device '{device}' was asked for but CUDA is not available here.")
    return dev


def _resolve_dtype(dtype: str, device: Any) -> Any:
    import torch

    if dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]


def _is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.OutOfMemoryError | MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "out of memory" in text or "not enough memory" in text or "can't allocate memory" in text
    )


def _free_cuda_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _as_list(x: Any) -> list[int]:
    if x is None:
        return []
    return [int(i) for i in x] if isinstance(x, list | tuple) else [int(x)]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n", 1)[0].rstrip(".") or type(exc).__name__
    return text[:200]


__all__ = ["Encoding", "Generation", "HFBackend"]
