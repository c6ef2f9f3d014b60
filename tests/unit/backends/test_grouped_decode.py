"""Decoding with the rows' own keys kept per group of rows (no padding to the longest row, no
``repeat_kv`` copy): the same attention as ordinary attention over the padded keys, and the same
greedy tokens as a plain padded batch and as one prompt at a time, on small random-weight Llama
(query heads sharing key/value heads) and GPT-2 models built from configs."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from backend_prompts import PARTING as PROMPTS

from cctest.backends._prefix_attention import OwnGroup, SharedPrefixLayer, SplitKV, shared_prefix_attention
from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend


def _spy_groups(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The own-token count of each group ``set_groups`` receives, per call."""
    seen: list[list[int]] = []
    real = SharedPrefixLayer.set_groups

    def spy(self: SharedPrefixLayer, groups: list[Any], room: int) -> None:
        seen.append([int(k.shape[-2]) for _, k, _ in groups])
        real(self, groups, room)

    monkeypatch.setattr(SharedPrefixLayer, "set_groups", spy)
    return seen


def test_grouped_decoding_gives_the_padded_batch_and_one_by_one(
    tiny: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cctest.backends import _layout

    backend = tiny.with_options(GenerationOptions(max_new_tokens=12), boundaries=False)
    assert backend.loaded.cascade
    # a group for every own length (these prompts' rows differ by fewer tokens than a group costs)
    monkeypatch.setattr(_layout, "_DECODE_GROUP_TOKENS", 0)
    groups = _spy_groups(monkeypatch)
    gens = backend.generate(PROMPTS)
    # the rows' own parts were kept apart, in groups of different lengths, one of them empty
    assert groups and len(groups[0]) >= 3 and len(set(groups[0])) >= 3 and 0 in groups[0]
    padded = backend.with_options(share_prefix=False).generate(PROMPTS)
    singles = [backend.generate([p])[0] for p in PROMPTS]
    assert [g.text for g in gens] == [g.text for g in padded] == [g.text for g in singles]
    assert [g.completion_tokens for g in gens] == [g.completion_tokens for g in singles]


def test_a_row_that_finishes_early_leaves_the_others_unchanged(
    tiny: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop sequence that one row writes early ends that row while the batch decodes on: every
    row's output is still what it is alone."""
    from cctest.backends import _layout

    monkeypatch.setattr(_layout, "_DECODE_GROUP_TOKENS", 0)
    free = tiny.with_options(GenerationOptions(max_new_tokens=12), boundaries=False).generate(PROMPTS)
    text = free[2].text
    # two characters written a few tokens into row 2's completion
    at = next(k for k in range(len(text) // 3, len(text) - 1) if not text[k : k + 2].isspace())
    stop = text[at : at + 2]
    backend = tiny.with_options(GenerationOptions(max_new_tokens=12, stop=(stop,)), boundaries=False)
    gens = backend.generate(PROMPTS)
    singles = [backend.generate([p])[0] for p in PROMPTS]
    assert [(g.text, g.completion_tokens) for g in gens] == [(g.text, g.completion_tokens) for g in singles]
    assert gens[2].finish_reason == "stop" and gens[2].completion_tokens < 12
    assert any(g.completion_tokens == 12 for g in gens)  # the batch went on after row 2 ended


@pytest.mark.parametrize("kv_groups", [1, 3])
@pytest.mark.parametrize("float_mask", [False, True])
def test_grouped_decoding_attention_matches_attention_over_the_padded_keys(
    kv_groups: int, float_mask: bool
) -> None:
    """One query per row; the rows' own keys in three groups (one owning nothing yet) of rows in
    no particular order, each right-aligned in the batch's own columns: the same output as
    ordinary attention over the prefix and the padded own keys, with or without GQA."""
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    gen = torch.Generator().manual_seed(3)
    batch, kv_heads, p_len, own, dim = 5, 2, 7, 6, 8
    pk, pv = (torch.randn(1, kv_heads, p_len, dim, generator=gen) for _ in range(2))
    rk, rv = (torch.randn(batch, kv_heads, own, dim, generator=gen) for _ in range(2))
    query = torch.randn(batch, kv_heads * kv_groups, 1, dim, generator=gen)
    layout = {(0, 3): own, (4,): 2, (1, 2): 0}  # rows -> their group's own columns
    mask = torch.zeros(batch, 1, 1, p_len + own, dtype=torch.bool)
    for rows, width in layout.items():
        for r in rows:
            mask[r, ..., : p_len - r] = True  # each row shares less of the prefix
            mask[r, ..., p_len + own - max(width - r % 2, 1) :] = True  # its own tokens (the last)
    rk[1:3, :, :-1] = rv[1:3, :, :-1] = 0.0  # rows owning nothing yet but their newest token
    key_groups, value_groups, start = [], [], 0
    for rows, width in layout.items():
        at, width = torch.tensor(rows), max(width, 1)
        run = slice(start, start + len(rows))  # the group's run in the order below
        key_groups.append(OwnGroup(run, rk[at][:, :, own - width :]))
        value_groups.append(OwnGroup(run, rv[at][:, :, own - width :]))
        start += len(rows)
    order = torch.tensor([r for rows in layout for r in rows])
    attn_mask: torch.Tensor = mask
    if float_mask:
        attn_mask = torch.zeros(mask.shape).masked_fill(~mask, torch.finfo(torch.float32).min)
    module = torch.nn.Module()
    module.num_key_value_groups = kv_groups  # type: ignore[assignment]
    key = SplitKV(pk, None, tuple(key_groups), order)
    value = SplitKV(pv, None, tuple(value_groups), order)
    got, _ = shared_prefix_attention(module, query, key, value, attn_mask, scaling=0.3)
    full_k = repeat_kv(torch.cat([pk.expand(batch, -1, -1, -1), rk], dim=2), kv_groups)
    full_v = repeat_kv(torch.cat([pv.expand(batch, -1, -1, -1), rv], dim=2), kv_groups)
    want, _ = sdpa_attention_forward(
        torch.nn.Module(), query, full_k, full_v, attn_mask, scaling=0.3, is_causal=False
    )
    assert got.shape == want.shape == (batch, 1, kv_heads * kv_groups, dim)
    assert torch.allclose(got, want, atol=1e-5)
    # the one tensor the prefill path builds from the groups: each group right-aligned, zeros before
    padded = key.padded(batch)
    for rows, width in layout.items():
        at, width = torch.tensor(rows), max(width, 1)
        assert torch.equal(padded[at][:, :, own - width :], rk[at][:, :, own - width :])
        assert not padded[at][:, :, : own - width].any()


def test_grouped_cache_appends_each_rows_new_token_to_its_group() -> None:
    """``update`` after ``set_groups`` puts row r's new key in its own group's next slot and
    reports the batch's own width (the widest group's) as the cache's length."""
    layer = SharedPrefixLayer(torch.zeros(1, 1, 4, 2), torch.zeros(1, 1, 4, 2), capacity=8)
    a, b = torch.tensor([0, 2]), torch.tensor([1])
    layer.set_groups(
        [
            (a, torch.ones(2, 1, 3, 2), torch.ones(2, 1, 3, 2)),
            (b, torch.ones(1, 1, 0, 2), torch.ones(1, 1, 0, 2)),
        ],
        2,
    )
    assert layer.get_seq_length() == 4 + 3
    new = torch.arange(3.0).view(3, 1, 1, 1).expand(3, 1, 1, 2)
    key, _ = layer.update(new, new)
    assert isinstance(key, SplitKV) and key.rows is None and layer.get_seq_length() == 4 + 4
    ga, gb = key.groups
    assert ga.part.shape == (2, 1, 4, 2) and gb.part.shape == (1, 1, 1, 2)
    assert ga.part[:, 0, -1, 0].tolist() == [0.0, 2.0] and gb.part[0, 0, -1, 0].item() == 1.0
    for _ in range(3):  # past the room it was given: it grows, keeping what it holds
        key, _ = layer.update(new, new)
    assert key.groups[1].part[0, 0, :, 0].tolist() == [1.0] * 4
    assert key.groups[0].part.shape[-2] == 7 and bool((key.groups[0].part[:, 0, :3] == 1).all())


def test_decode_groups_merge_rows_whose_padding_costs_less_than_a_group() -> None:
    from cctest.backends._layout import decode_groups

    own = [1, 562, 1852, 324, 8, 556, 1, 29, 75, 591, 1852]
    groups = decode_groups(own)
    assert sorted(i for g in groups for i in g) == list(range(len(own)))
    assert all(g == sorted(g) for g in groups)  # each group's rows in batch order
    assert [2, 10] in groups  # the two longest rows apart from the short ones
    assert len(groups) < len(set(own))  # rows a few tokens apart share a group
    assert decode_groups([5, 7, 6]) == [[0, 1, 2]]


def test_sampling_through_the_groups_is_reproducible_with_the_seed(
    tiny: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cctest.backends import _layout

    monkeypatch.setattr(_layout, "_DECODE_GROUP_TOKENS", 0)
    groups = _spy_groups(monkeypatch)
    backend = tiny.with_options(GenerationOptions(max_new_tokens=8, temperature=0.8), boundaries=False)
    first, again = backend.generate(PROMPTS), backend.generate(PROMPTS)
    assert groups and len(groups[0]) >= 3
    assert [g.text for g in first] == [g.text for g in again]
    assert all(g.completion_tokens <= 8 for g in first)
