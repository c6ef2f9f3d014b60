"""The HF backend's prompts as token ids: tokenized, healed, cut to the context (``encode``).

Token healing (``_heal``) and the left cut in steps (``_cut``) are described in the module
docstring of ``hf.py``. Torch-free (it needs only the tokenizer), so ``hf.py`` imports it at load;
the FIM rows are laid out before they are encoded, in ``_fim_layout.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ._layout import round_up, row_runs, shared_prefix_length

if TYPE_CHECKING:
    from .loaded import LoadedModel

HEAL_MAX_TOKENS = 4  # at most this many trailing tokens are regenerated
# Where a context cut falls is rounded to steps, so that a prompt growing at the cursor keeps the
# same first token over many keystrokes and the next request can reuse this one's key/value cache
# (``_prefill.Reused``); an exact cut would move by a token every few keystrokes and every request would
# prefill its whole prefix again. The model then sees up to one step less than fits: 64 tokens is
# 3-6% of a 1-2k context, and at about 4 characters a token of code the cut moves once in some 250
# characters typed. Token ids are cut in steps of tokens; a FIM prefix is cut on the text, at the
# first token starting at or after a multiple of ``CUT_STEP_CHARS`` (about as many characters).
CUT_STEP = 64
CUT_STEP_CHARS = 256


class Encoding(NamedTuple):
    """A batch ready for ``generate``."""

    ids: list[list[int]]  # each prompt's tokens, healed tail removed, cut from the left to fit
    prefix: int  # how many leading tokens every row shares
    max_new: int  # new tokens allowed (max_new_tokens plus the healed tokens, within the context)
    heal: list[str]  # per row, the prompt text the first generated tokens must write back


def encode(
    m: LoadedModel,
    prompts: Sequence[str],
    max_new_tokens: int,
    groups: Sequence[int] | None = None,
    *,
    token_healing: bool,
    share_prefix: bool,
) -> Encoding:
    """The batch for ``prompts``: token ids after healing and left truncation, the shared
    prefix length, the number of new tokens that fits in the context, and the healed tails.

    ``groups``: the rows come in runs that are one prompt and its mutants each (``complete``'s
    ``groups``); each run is cut to the context on its own, so a prompt is cut the same in
    any batch (None: one run). The cut leaves room for the most any row writes (the budget
    and a healed tail), whatever the batch's other rows heal."""
    ids = [list(x) for x in m.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]]
    heal = [""] * len(ids)
    extra = 0  # the most tokens a row gives back to healing: they do not count as new
    if token_healing:
        for i, (prompt, x) in enumerate(zip(prompts, ids, strict=True)):
            ids[i], heal[i] = _heal(m, prompt, x)
            extra = max(extra, len(x) - len(ids[i]))
    ids = [x or [m.start_id] for x in ids]
    new = max_new_tokens + extra
    if m.context:
        new = max(1, min(new, m.context // 2))
        room = max(1, min(max_new_tokens + HEAL_MAX_TOKENS, m.context // 2))
        runs = row_runs(groups, len(ids))
        ids = [
            row for lo, hi in runs for row in _cut(ids[lo:hi], m.context - room, share_prefix=share_prefix)
        ]
    # one row shares with nothing: a "prefix" of all but its last token would only send every
    # decoding step through the two-part attention, about twice the cost of a plain row
    share = share_prefix and len(ids) > 1
    return Encoding(ids, shared_prefix_length(ids) if share else 0, new, heal)


def _cut(ids: list[list[int]], limit: int, *, share_prefix: bool) -> list[list[int]]:
    """One prompt's rows (it and its mutants) cut from the left to ``limit`` tokens, in steps
    of ``CUT_STEP`` tokens, so the first kept token stays put while typing."""
    longest = max(len(x) for x in ids)
    if longest <= limit:
        return ids
    drop = round_up(longest - limit, CUT_STEP)
    if share_prefix and len(ids) > 1 and drop < shared_prefix_length(ids):
        # cut the shared prefix by the same amount in every row: each keeps its tokens
        # nearest the cursor and the rows still share a prefix
        return [x[drop:] for x in ids]
    return [x[round_up(max(0, len(x) - limit), CUT_STEP) :] for x in ids]  # each on its own


def _heal(m: LoadedModel, prompt: str, ids: list[int]) -> tuple[list[int], str]:
    """``ids`` without the tail to regenerate, and that tail's text: the trailing run of
    whitespace tokens, or else the last token alone (a word the cursor may be inside)."""
    texts = m.token_texts()
    cut = len(ids)
    while cut > 0 and len(ids) - cut < HEAL_MAX_TOKENS:
        piece = texts[ids[cut - 1]] if ids[cut - 1] < len(texts) else ""
        if not piece or (cut < len(ids) and not piece.isspace()):
            break  # a special token, or a word before trailing whitespace: it stays
        cut -= 1
        if not piece.isspace():
            break  # the last token is a word or punctuation: only it is healed
    tail = "".join(texts[i] for i in ids[cut:])
    if not tail or "\ufffd" in tail or not prompt.endswith(tail):
        return ids, ""  # not a clean cut of the text (bytes of one character split across tokens)
    return ids[:cut], tail
