"""The plan of one batched ``generate`` in the HF backend: the rows as token ids and their layout.

A ``BatchPlan`` is built from the rows' texts (``BatchPlan.of``: tokenized, healed and cut to
the context by ``_encode.encode``) and holds what the layout arithmetic of ``_layout.py`` makes
of them: how many leading tokens each row shares with the first (``shares``, for the one-copy
prefix), how many tokens the batch runs through the model before it decodes
(``prefill_tokens``), and after how many new tokens an early decision stops the batch
(``decision_tokens``). Torch-free, so ``hf.py`` imports it at load; ``Prefill`` (``_prefill.py``)
turns a plan into tensors and a cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._encode import Encoding, encode
from ._layout import CALL_TOKENS, row_groups, row_shares

if TYPE_CHECKING:
    from .loaded import LoadedModel


@dataclass(frozen=True)
class BatchPlan:
    """The rows of one batch as token ids (``encoding``) and how they share their head."""

    encoding: Encoding
    # per row, how many of the first row's leading tokens it shares (rows prefilled on their own
    # in groups, ``Prefill``); None: every row shares ``encoding.prefix`` tokens
    shares: list[int] | None

    @classmethod
    def of(
        cls,
        m: LoadedModel,
        rows: Sequence[str],
        max_new_tokens: int,
        groups: Sequence[int] | None = None,
        *,
        token_healing: bool,
        share_prefix: bool,
        grouped: bool,
    ) -> BatchPlan:
        """The plan for ``rows`` (prompts, or FIM rows laid out in their template): encoded
        (``_encode.encode``; ``groups`` as there) and, with ``share_prefix`` and ``grouped``,
        each row sharing with the first row as much as it has in common with it, not only what
        every row has in common (``_layout.row_shares``)."""
        enc = encode(m, rows, max_new_tokens, groups, token_healing=token_healing, share_prefix=share_prefix)
        shares = row_shares(enc.ids, enc.max_new, m.context) if share_prefix and grouped else None
        return cls(enc, shares)

    @property
    def rows(self) -> int:
        return len(self.encoding.ids)

    def prefill_tokens(self) -> int:
        """How many token positions the batch runs through the model before it decodes, padding
        included: with ``shares`` each row's own tokens in groups of rows (``row_groups``) after
        the longest share, else one prefix shared by every row and the rest padded to the
        longest row."""
        enc = self.encoding
        if self.shares is None:
            return enc.prefix + len(enc.ids) * max(len(x) - enc.prefix for x in enc.ids)
        own = [len(x) - d - 1 for x, d in zip(enc.ids, self.shares, strict=True)]
        groups = row_groups(own, CALL_TOKENS)
        return max(self.shares) + sum(len(g) * max(own[i] for i in g) for g in groups) + len(enc.ids)

    def decision_tokens(self, after: int, max_new_tokens: int) -> int:
        """The new tokens every row writes before an early decision: ``after`` past the healed
        tail (the rows' budget beyond ``max_new_tokens``); 0: no decision (it would come at
        once, or not before the batch ends)."""
        first = after + max(0, self.encoding.max_new - max_new_tokens)
        return first if 0 < first < self.encoding.max_new else 0


__all__ = ["BatchPlan"]
