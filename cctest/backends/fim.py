"""Fill-in-the-middle (FIM) templates: how a model is shown the code before AND after the cursor.

A FIM model was trained on files cut into prefix, middle and suffix, laid out with special
tokens and the middle last, so that generating continues the middle. Two orders exist (Bavarian
et al., 2022): PSM, ``<pre>prefix<suf>suffix<mid>``, and SPM, ``<pre><suf>suffix<mid>prefix``
(the prefix last, next to what is generated). A template here is a layout string holding
``{prefix}`` and ``{suffix}`` once each; their order is the template's order.

The families whose tokenizers carry FIM tokens, and how they are recognised (all three of a
family's tokens in the vocabulary, also with SentencePiece's ``▁`` in front):

=============  ==================================================================
starcoder      ``<fim_prefix>`` ``<fim_suffix>`` ``<fim_middle>`` (StarCoder, StarCoder2)
santacoder     ``<fim-prefix>`` ``<fim-suffix>`` ``<fim-middle>``
qwen           ``<|fim_prefix|>`` ``<|fim_suffix|>`` ``<|fim_middle|>`` (Qwen2.5-Coder)
codegemma      the same tokens, with ``<|file_separator|>`` in the vocabulary
codellama      ``<PRE>`` ``<SUF>`` ``<MID>`` (CodeLlama; middle ends with ``<EOT>``)
deepseek       ``<｜fim▁begin｜>`` ``<｜fim▁hole｜>`` ``<｜fim▁end｜>`` (DeepSeek-Coder)
=============  ==================================================================

The tokens say which family, not which order a model learnt best. A model directory may say
that in its ``tokenizer_config.json``: ``"fim_template": "starcoder-spm"`` (any value the ``fim``
setting takes but ``auto`` and ``off``), which ``auto`` then uses when the tokenizer carries that
template's tokens. The bundled model declares its order this way, chosen on humaneval-infill
(the README's fill-in-the-middle section gives the figures).

The ``fim`` setting is ``auto`` (the tokenizer's declared template, else the one its tokens
name, in PSM order; an HTTP server has no tokenizer, so ``auto`` there means the server's own
``suffix`` field), ``off``, a family name (``starcoder``; ``starcoder-spm`` for SPM order), or a
layout of the user's own such as ``<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

log = logging.getLogger(__name__)
# the key in a model's tokenizer_config.json that declares its FIM template (read back by
# transformers into the tokenizer's ``init_kwargs``)
DECLARED = "fim_template"

_SLOT = re.compile(r"(\{prefix\}|\{suffix\})")


@dataclass(frozen=True)
class FimTemplate:
    """A FIM layout (``{prefix}`` and ``{suffix}`` once each) and the tokens that end a middle."""

    name: str
    layout: str
    stops: tuple[str, ...] = ()

    @property
    def order(self) -> str:
        """``psm`` (prefix first) or ``spm`` (suffix first, the prefix next to the middle)."""
        return "psm" if self.layout.index("{prefix}") < self.layout.index("{suffix}") else "spm"

    def prompt(self, prefix: str, suffix: str) -> str:
        """The text the model continues to write the middle.

        >>> FAMILIES["starcoder"].prompt("a = ", "\\nb = 2")
        '<fim_prefix>a = <fim_suffix>\\nb = 2<fim_middle>'
        """
        values = {"{prefix}": prefix, "{suffix}": suffix}
        # one pass, so a "{suffix}" inside the user's code is never taken for the slot
        return "".join(values.get(part, part) for part in _SLOT.split(self.layout))

    def overhead(self) -> str:
        """The template's own text (without code), for counting its tokens."""
        return self.prompt("", "")

    def describe(self) -> str:
        """The name and order, e.g. ``starcoder (psm)``, for logs and ``cctest complete --json``."""
        return f"{self.name} ({self.order})"


@dataclass(frozen=True)
class _Family:
    pre: str
    suf: str
    mid: str
    stops: tuple[str, ...]
    # CodeLlama's tokens take a space around them
    pad_pre: str = ""
    pad_suf: str = ""
    pad_mid: str = ""

    def template(self, name: str, order: str) -> FimTemplate:
        pre, suf, mid = self.pre + self.pad_pre, self.pad_suf + self.suf, self.pad_mid + self.mid
        if order == "psm":
            layout = f"{pre}{{prefix}}{suf}{{suffix}}{mid}"
        else:
            layout = f"{pre}{suf}{{suffix}}{mid}{{prefix}}"
        return FimTemplate(name if order == "psm" else f"{name}-spm", layout, self.stops)


_QWEN_STOPS = ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<|file_separator|>")
_FAMILIES: dict[str, _Family] = {
    "starcoder": _Family("<fim_prefix>", "<fim_suffix>", "<fim_middle>", ("<|endoftext|>", "<file_sep>")),
    "santacoder": _Family("<fim-prefix>", "<fim-suffix>", "<fim-middle>", ("<|endoftext|>",)),
    "codegemma": _Family("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", _QWEN_STOPS),
    "qwen": _Family("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", _QWEN_STOPS),
    "codellama": _Family("<PRE>", "<SUF>", "<MID>", ("<EOT>",), pad_pre=" ", pad_suf=" ", pad_mid=" "),
    "deepseek": _Family(
        "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>", ("<｜end▁of▁sentence｜>", "<|EOT|>")
    ),
}
# every named template, PSM and SPM
FAMILIES: dict[str, FimTemplate] = {
    t.name: t for name, f in _FAMILIES.items() for t in (f.template(name, "psm"), f.template(name, "spm"))
}


def parse_fim(value: str) -> str:
    """The ``fim`` setting checked: ``auto``, ``off``, a family name or a layout with
    ``{prefix}`` and ``{suffix}`` once each; ``ConfigError`` (one sentence) otherwise."""
    if value in ("auto", "off") or value in FAMILIES:
        return value
    if value.count("{prefix}") == 1 and value.count("{suffix}") == 1:
        return value
    raise ConfigError(
        f"{value!r} is not a FIM template; give auto, off, one of {', '.join(FAMILIES)}, "
        "or a layout holding {prefix} and {suffix} once each."
    )


def named_template(value: str) -> FimTemplate | None:
    """The template a checked ``fim`` setting names (None for ``auto`` and ``off``)."""
    if value in ("auto", "off"):
        return None
    return FAMILIES.get(value) or FimTemplate("custom", value)


def detect(tokenizer: Any) -> FimTemplate | None:
    """The template ``tokenizer`` declares (``fim_template`` in its ``tokenizer_config.json``),
    else the PSM template of the family whose FIM tokens it carries (None: none)."""
    try:
        vocab = set(tokenizer.get_vocab())
    except Exception:  # a tokenizer without a vocabulary to read: no FIM
        return None

    def has(token: str) -> bool:
        return token in vocab or "▁" + token in vocab

    declared = _declared(tokenizer, has)
    if declared is not None:
        return declared
    for name, family in _FAMILIES.items():
        if name == "codegemma" and not has("<|file_separator|>"):
            continue
        if has(family.pre) and has(family.suf) and has(family.mid):
            return FAMILIES[name]
    return None


def _declared(tokenizer: Any, has: Callable[[str], bool]) -> FimTemplate | None:
    """The template the tokenizer's config declares, if it is one and its tokens are there."""
    value = (getattr(tokenizer, "init_kwargs", None) or {}).get(DECLARED)
    if value is None:
        return None
    try:
        template = named_template(parse_fim(value)) if isinstance(value, str) else None
    except ConfigError:
        template = None
    family = _FAMILIES.get(template.name.removesuffix("-spm")) if template else None
    if family is not None and not (has(family.pre) and has(family.suf) and has(family.mid)):
        template = None
    if template is None:
        log.warning(
            "the tokenizer declares %s %r, which it cannot use; detecting its FIM tokens", DECLARED, value
        )
    return template


def resolve(setting: str, tokenizer: Any) -> FimTemplate | None:
    """The template a backend with ``tokenizer`` uses for the ``fim`` setting (None: left to right)."""
    if setting == "off":
        return None
    if setting == "auto":
        return detect(tokenizer)
    return named_template(setting)


__all__ = ["DECLARED", "FAMILIES", "FimTemplate", "detect", "named_template", "parse_fim", "resolve"]
