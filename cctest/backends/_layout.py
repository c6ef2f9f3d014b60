"""How the HF backend lays a batch's rows out: pure arithmetic on token ids, without torch.

Which leading tokens rows share with the first row (``row_shares``) or all together
(``shared_prefix_length``), the runs of rows that are one prompt and its mutants (``row_runs``), where a
context cut falls (``round_up``), and how rows are grouped to prefill (``row_groups``) and to
decode (``decode_groups``). ``hf.py`` imports these at load (they need nothing but the standard
library) and re-exports them; ``_prefill.py`` builds the batch and its cache from them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

CALL_TOKENS = 64  # a forward call's own cost, counted in tokens, when rows are grouped to prefill
_DECODE_GROUP_TOKENS = 256  # a group's own cost at each decoding step, counted in padded tokens


def row_shares(ids: list[list[int]], max_new: int = 0, context: int = 0) -> list[int] | None:
    """Per row, how many leading tokens it has in common with the first row, leaving every row
    (the first too) at least one own token; None for one row, or when the batch laid out with
    them (the longest share, then the longest rest) would be over twice the model's context
    (the columns may pass the context: every token's position comes from the mask, and no row
    is longer than the context).

    >>> row_shares([[1, 2, 3, 4], [1, 2, 9], [5, 6]])
    [3, 2, 0]
    >>> row_shares([[1, 2, 3, 4], [5, 6, 7, 8]], max_new=4, context=5) is None
    True
    """
    if len(ids) < 2:
        return None
    first = ids[0]
    # every row keeps at least one own token: at most all but its (or the first row's) last
    out = [max(0, min(common_length(x, first), min(len(x), len(first)) - 1)) for x in ids]
    columns = max(out) + max(len(x) - d for x, d in zip(ids, out, strict=True))
    return None if context and columns + max_new > 2 * context else out


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` have in common.

    >>> common_length([1, 2, 3], [1, 2, 4, 5])
    2
    """
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def row_runs(groups: Sequence[int] | None, n: int) -> list[tuple[int, int]]:
    """(start, end) of each run of ``groups`` rows over ``n`` rows (None: one run of all)."""
    if groups is None:
        return [(0, n)]
    if any(g < 1 for g in groups) or sum(groups) != n:
        raise ValueError(f"groups {list(groups)} do not cover {n} rows")
    ends = list(itertools.accumulate(groups))
    return list(zip([0, *ends[:-1]], ends, strict=True))


def round_up(n: int, step: int) -> int:
    """``n`` rounded up to a multiple of ``step`` (0 and below stay as they are).

    >>> round_up(1, 64), round_up(64, 64), round_up(65, 64), round_up(-3, 64)
    (64, 64, 128, -3)
    """
    return -(-n // step) * step if n > 0 else n


def row_groups(lengths: list[int], call: int) -> list[list[int]]:
    """The rows (indices into ``lengths``, their own token counts) split into groups that are
    each prefilled in one forward call, padded to the group's longest row: the split that
    costs the fewest tokens, counting ``call`` tokens for each call. The rows are taken longest
    first, so a group is a run of neighbours in that order.

    >>> row_groups([500, 20, 30, 490, 25], call=64)
    [[0, 3], [2, 4, 1]]
    >>> row_groups([30, 20], call=64)
    [[0, 1]]
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    n = len(order)
    best = [0] + [0] * n  # best[j]: the cheapest split of order[:j]
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        best[j], cut[j] = min((best[i] + (j - i) * lengths[order[i]] + call, i) for i in range(j))
    groups: list[list[int]] = []
    j = n
    while j > 0:
        groups.append(order[cut[j] : j])
        j = cut[j]
    return groups[::-1]


def decode_groups(own: list[int]) -> list[list[int]]:
    """The groups of rows whose own keys decoding reads apart (``row_groups`` with the cost of
    a group at each decoding step, counted in tokens: a few more operations per layer cost as
    much as reading a few hundred padded tokens), each group's rows in batch order."""
    return [sorted(g) for g in row_groups(own, _DECODE_GROUP_TOKENS)]


def shared_prefix_length(ids: list[list[int]]) -> int:
    """Length of the token prefix all rows share, leaving every row at least one own token."""
    n = min(len(x) for x in ids) - 1
    return max(0, min([n, *(common_length(x, ids[0]) for x in ids[1:])]))
