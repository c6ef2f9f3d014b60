"""The HF backend's fill-in-the-middle rows: each prompt and the code after its cursor laid out in
the model's FIM template, both cut away from the cursor to fit the context (``fim_inputs``,
``fim_cut``; the module docstring of ``hf.py`` describes the cut).

Torch-free (it needs only the tokenizer), so ``hf.py`` imports it at load; the rows it gives are
then encoded like any prompt (``_encode.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._encode import CUT_STEP, CUT_STEP_CHARS, HEAL_MAX_TOKENS
from ._layout import round_up, row_runs

if TYPE_CHECKING:
    from .fim import FimTemplate
    from .loaded import LoadedModel

_CHARS_PER_TOKEN = 8  # characters read per token needed where only the tokens near a cut count


def fim_inputs(
    m: LoadedModel,
    template: FimTemplate | None,
    prompts: Sequence[str],
    suffixes: Sequence[str] | None,
    max_new_tokens: int,
    groups: Sequence[int] | None = None,
    *,
    suffix_share: float,
) -> list[str] | None:
    """The rows' texts in the FIM template, prefix and suffix cut to fit the context
    (see the module docstring of ``hf.py``); None: left to right (no template, or no code after any
    cursor). A row without code after its cursor stays left to right in a batch of FIM rows,
    as it is alone; ``groups`` (see ``encode``): each prompt's rows are cut on their own."""
    if template is None or suffixes is None or not any(s.strip() for s in suffixes):
        return None
    return [
        row
        for lo, hi in row_runs(groups, len(prompts))
        for row in _fim_rows(m, template, suffix_share, prompts[lo:hi], suffixes[lo:hi], max_new_tokens)
    ]


def _fim_rows(
    m: LoadedModel,
    template: FimTemplate,
    suffix_share: float,
    prompts: Sequence[str],
    suffixes: Sequence[str],
    max_new_tokens: int,
) -> list[str]:
    """One prompt's rows (``fim_inputs``): those with code after the cursor in the template."""
    rows = list(prompts)
    fim = [i for i, s in enumerate(suffixes) if s.strip()]
    if not fim:
        return rows
    texts, tails = [prompts[i] for i in fim], [suffixes[i] for i in fim]
    if not m.context:
        for i, text, tail in zip(fim, texts, tails, strict=True):
            rows[i] = template.prompt(text, tail)
        return rows
    kept_suffix, prefix_room, pre = fim_cut(
        m, template, texts, tails, max_new_tokens, suffix_share=suffix_share
    )
    # the same number of tokens off every prefix's start: the rows keep sharing their head
    drop = max(len(p) - r for p, r in zip(pre, prefix_room, strict=True))
    for i, p, tail, text in zip(fim, pre, kept_suffix, texts, strict=True):
        if drop <= 0:
            head = text
        elif drop >= len(p):
            head = ""
        else:  # from the first token at or after the next step (``CUT_STEP_CHARS``)
            at = round_up(p[drop][0], CUT_STEP_CHARS)
            head = text[next((a for a, _ in p[drop:] if a >= at), len(text)) :]
        rows[i] = template.prompt(head, tail)
    return rows


def fim_cut(
    m: LoadedModel,
    template: FimTemplate,
    prompts: Sequence[str],
    suffixes: Sequence[str],
    max_new_tokens: int,
    *,
    suffix_share: float,
) -> tuple[list[str], list[int], list[list[tuple[int, int]]]]:
    """Each suffix as cut to fit the model's context beside its prompt in ``template``, the
    room (in tokens) left for each prompt, and the prompts' token spans. The suffixes are
    cut alike: a suffix keeps what the longest prompt leaves it, so in a batch whose mutants
    are longer than the prompt by a step's worth, the prompt's row sees up to ``CUT_STEP``
    fewer tokens of it than the prompt alone would."""
    tok, context = m.tokenizer, m.context
    new = max(1, min(max_new_tokens + HEAL_MAX_TOKENS, context // 2))
    overhead = len(tok(template.overhead(), add_special_tokens=False)["input_ids"])
    room = max(2, context - new - overhead - 4)  # a few tokens' slack: the cut text re-tokenizes
    # only the tokens nearest the cursor can be kept: the prompts' last ``room``, the suffixes'
    # first (a prompt is often a whole file; tokenizing all of it took most of this call)
    pre = _spans_near(tok, list(prompts), room, end=True)
    suf = _spans_near(tok, list(suffixes), room, end=False)
    kept_suffix: list[str] = []
    prefix_room: list[int] = []
    # a short prefix leaves the suffix more room, counted in steps of ``CUT_STEP`` tokens of
    # the prefix: the suffix's cut (the rows' head in suffix-first order) stays put while
    # typing makes the prefix longer. It is counted from the longest of the rows' prefixes,
    # so every row keeps as much of the suffix: a mutant a few tokens longer than the prompt
    # (dead code, a print) would else keep less of it and, suffix first, part from the
    # prompt's row before the whole prefix
    spare = room - round_up(max((len(p) for p in pre), default=0), CUT_STEP)
    for spans, text in zip(suf, suffixes, strict=True):
        keep = min(len(spans), max(int(room * suffix_share), spare))
        kept_suffix.append(text[: spans[keep - 1][1]] if 0 < keep < len(spans) else text if keep else "")
        prefix_room.append(room - keep)
    return kept_suffix, prefix_room, pre


def _token_spans(tokenizer: Any, texts: list[str]) -> list[list[tuple[int, int]]]:
    """Each text's tokens as (start, end) character offsets. Equal texts (the code after the
    cursor, which most rows of a request share) are tokenized once; a fast tokenizer's own
    encoder gives the offsets directly (the transformers wrapper around it converts every
    encoding, which cost as much as the tokenizing)."""
    if not texts:
        return []
    unique = list(dict.fromkeys(texts))
    got: dict[str, list[tuple[int, int]]] = {}
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is not None:
        encoded = backend.encode_batch(unique, add_special_tokens=False)
        got = {t: e.offsets for t, e in zip(unique, encoded, strict=True)}
    else:  # a slow tokenizer: decode
        for t, ids in zip(unique, tokenizer(unique, add_special_tokens=False)["input_ids"], strict=True):
            ends = [len(tokenizer.decode(ids[: j + 1])) for j in range(len(ids))]
            got[t] = list(zip([0, *ends[:-1]], ends, strict=True))
    return [got[t] for t in texts]


def _spans_near(tokenizer: Any, texts: list[str], n: int, *, end: bool) -> list[list[tuple[int, int]]]:
    """Token spans (character offsets into each whole text) that cover at least each text's last
    ``n`` tokens (``end``) or its first ``n``: only the part of the texts near that end is
    tokenized where it holds more than ``n`` tokens (a token is seldom more than
    ``_CHARS_PER_TOKEN`` characters), else all of it. Every text is cut at the same character
    from its start, so texts that begin alike still tokenize alike; a cut can change only the
    first token or two, which are beyond the ``n`` that count.
    """
    window = (n + 8) * _CHARS_PER_TOKEN
    if texts and end:
        cut = max(0, min(len(t) for t in texts) - window)
        if cut:
            spans = _token_spans(tokenizer, [t[cut:] for t in texts])
            if all(len(s) > n + 2 for s in spans):
                return [[(a + cut, b + cut) for a, b in s] for s in spans]
    elif texts and any(len(t) > window for t in texts):
        spans = _token_spans(tokenizer, [t[:window] for t in texts])
        if all(len(t) <= window or len(s) > n + 2 for t, s in zip(texts, spans, strict=True)):
            return spans
    return _token_spans(tokenizer, texts)
