"""A view of a loaded model in the HF backend: the generation options and settings one
``HFBackend`` holds (several views share one ``LoadedModel``), and what they make of a call's
rows before the model sees them: the FIM template they are laid out in, the FIM rows cut to the
context (``_fim_layout.py``) and the batch plan (``_plan.BatchPlan``).

Torch-free, so ``hf.py`` imports it at load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from . import _fim_layout
from ._plan import BatchPlan
from .base import PLAIN_CHAT_STOP, GenerationOptions
from .fim import FimTemplate, resolve

if TYPE_CHECKING:
    from .loaded import LoadedModel


@dataclass(frozen=True, eq=False)
class View:
    """The loaded model and how one view of it generates."""

    loaded: LoadedModel
    options: GenerationOptions = field(default_factory=GenerationOptions)
    seed: int = 0
    boundaries: bool = True  # False: stop only at EOS, stop sequences and max_new_tokens
    share_prefix: bool = True  # False: plain left-padded batches (for comparison)
    token_healing: bool = True  # False: the prompt's tokens as they come
    fim: str = "auto"  # the ``fim`` setting: auto, off, a family name or a layout
    suffix_share: float = 0.25  # the room kept for the code after the cursor
    reuse_prefix: bool = True  # False: every call prefills its prefix from scratch

    def but(self, **changes: Any) -> View:
        """This view with the settings in ``changes`` that are not None changed."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def for_chat(self) -> View:
        """The view chat answers come from: no code boundaries, no token healing, and without a
        chat template the plain template's stop."""
        opts = self.options
        if self.loaded.chat_template is None:
            opts = replace(opts, stop=(*opts.stop, PLAIN_CHAT_STOP))
        return replace(self, options=opts, boundaries=False, token_healing=False)

    @property
    def fim_template(self) -> FimTemplate | None:
        """The FIM template completions with a suffix use (None: left to right only), resolved
        once per ``fim`` setting and model."""
        cache = self.loaded.fim_templates
        if self.fim not in cache:
            cache[self.fim] = resolve(self.fim, self.loaded.tokenizer)
        return cache[self.fim]

    def fim_used(self) -> str | None:
        """The FIM template described (``FimLayout``); None: left to right only."""
        template = self.fim_template
        return template.describe() if template is not None else None

    @property
    def reads_suffix_first(self) -> bool:
        """Whether the template puts the code after the cursor first (suffix-prefix-middle)."""
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


__all__ = ["View"]
