"""The local transformers backend on the bundled model: real generation, batching, stops, truncation."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from backend_prompts import MODULE, OTHERS, VARIANTS

from cctest.backends import create_backend
from cctest.backends._encode import CUT_STEP, HEAL_MAX_TOKENS
from cctest.backends._stop import BoundaryStopper, block_floor, indent_width
from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.config import Settings
from cctest.errors import BackendOutOfMemory, ConfigError, ModelLoadError
from cctest.models import bundled_model_info, bundled_model_path


def one_by_one(backend: HFBackend, prompts: list[str]) -> list[str]:
    return [asyncio.run(backend.complete([p]))[0] for p in prompts]  # type: ignore[misc]


async def test_completes_real_prompts(hf_model: HFBackend) -> None:
    out = await hf_model.complete(VARIANTS[:2] + OTHERS)
    assert len(out) == 2 + len(OTHERS)
    assert all(isinstance(o, str) for o in out)
    # the rules hold on real model output: nothing comes back past the cursor's block ...
    for prompt, text in zip(VARIANTS[:2] + OTHERS, out, strict=True):
        assert isinstance(text, str)
        assert BoundaryStopper(prompt).stop_index(text) is None
        continuation = text.split("\n")[1:] if not prompt.endswith("\n") else text.split("\n")
        assert all(indent_width(line) >= block_floor(prompt) for line in continuation if line.strip())
    # ... and the model wrote something for most prompts (an empty string is a possible answer)
    assert sum(bool(str(t).strip()) for t in out) >= 2


def test_batched_equals_one_by_one(hf_model: HFBackend) -> None:
    """One batched generate (shared prefix cache, padding between prefix and suffix) gives the
    same greedy completions as completing each prompt alone."""
    backend = hf_model.with_options(GenerationOptions(max_new_tokens=48))
    prompts = VARIANTS + OTHERS
    batched = asyncio.run(backend.complete(prompts))
    assert batched == one_by_one(backend, prompts)
    # the batch really shared a prefix (the point of the layout)
    ids, prefix, new, _ = backend.encode(VARIANTS, 48)
    assert prefix > 0 and all(x[:prefix] == ids[0][:prefix] for x in ids)
    full = backend.tokenizer(VARIANTS, add_special_tokens=False)["input_ids"]
    if max(map(len, full)) <= backend.context - new:  # nothing cut: the prefix is the whole module
        module = backend.tokenizer(MODULE, add_special_tokens=False)["input_ids"]
        assert prefix >= len(module) - 1


def test_batched_equals_one_by_one_without_boundaries(hf_model: HFBackend) -> None:
    """Full-length rows (no early stop) agree too: every generated token matches."""
    backend = hf_model.with_options(GenerationOptions(max_new_tokens=40), boundaries=False)
    prompts = VARIANTS[:4]
    gens = backend.generate(prompts)
    singles = [backend.generate([p])[0] for p in prompts]
    assert [g.text for g in gens] == [g.text for g in singles]
    assert [g.completion_tokens for g in gens] == [g.completion_tokens for g in singles]


def test_boundary_trim_is_a_prefix_of_the_untrimmed_output(hf_model: HFBackend) -> None:
    free = hf_model.with_options(GenerationOptions(max_new_tokens=48), boundaries=False)
    bounded = hf_model.with_options(GenerationOptions(max_new_tokens=48), boundaries=True)
    prompts = VARIANTS[:2] + OTHERS
    for prompt, raw, cut in zip(prompts, free.generate(prompts), bounded.generate(prompts), strict=True):
        assert raw.text.startswith(cut.text.rstrip("\n"))
        assert cut.text == BoundaryStopper(prompt).trim(raw.text)
        if cut.text != raw.text:  # the bounded row stopped early, at its boundary
            assert cut.finish_reason == "stop"
            assert cut.completion_tokens <= raw.completion_tokens


def test_stop_sequences_on_real_output(hf_model: HFBackend) -> None:
    free = hf_model.with_options(GenerationOptions(max_new_tokens=32), boundaries=False)
    raw = free.generate([OTHERS[0]])[0].text
    assert len(raw) >= 4
    stop = raw[len(raw) // 2 : len(raw) // 2 + 2]  # two characters from the middle of the answer
    cut = hf_model.with_options(GenerationOptions(max_new_tokens=32, stop=(stop,)), boundaries=False)
    gen = cut.generate([OTHERS[0]])[0]
    assert gen.text == raw[: raw.index(stop)]
    assert gen.finish_reason == "stop"
    assert gen.completion_tokens < 32


def test_max_new_tokens_bounds_the_output(hf_model: HFBackend) -> None:
    backend = hf_model.with_options(GenerationOptions(max_new_tokens=3), boundaries=False)
    gen = backend.generate([OTHERS[0]])[0]
    assert gen.completion_tokens <= 3
    if gen.completion_tokens == 3:
        assert gen.finish_reason == "length"
    longer = hf_model.with_options(GenerationOptions(max_new_tokens=24), boundaries=False).generate(
        [OTHERS[0]]
    )[0]
    assert longer.text.startswith(gen.text)  # greedy: the same first tokens, then more
    assert longer.completion_tokens >= gen.completion_tokens


def test_long_prompts_are_cut_from_the_left(hf_model: HFBackend) -> None:
    context = hf_model.context
    assert context > 0
    body = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(400))
    long_prompt = body + "def last(value):\n    return "
    full = hf_model.tokenizer(long_prompt, add_special_tokens=False)["input_ids"]
    assert len(full) > context
    ids, _, new, heal = hf_model.encode([long_prompt], 16)
    # the cut leaves room for the budget and a healed tail (the most any row of a batch writes),
    # in steps of CUT_STEP tokens (so it stays put while typing): up to a step less is kept
    room = 16 + HEAL_MAX_TOKENS
    assert new <= room
    assert context - room - CUT_STEP < len(ids[0]) <= context - room
    # the prompt ends in "return ": its trailing space is healed (regenerated), the rest is kept
    assert heal[0] == " "
    healed = full[:-1]
    assert hf_model.tokenizer.decode(full[-1:]) == " "
    assert ids[0] == healed[-len(ids[0]) :]  # the tokens nearest the cursor stay
    assert (len(healed) - len(ids[0])) % CUT_STEP == 0
    gen = hf_model.with_options(GenerationOptions(max_new_tokens=16)).generate([long_prompt])[0]
    assert gen.prompt_tokens == len(ids[0])  # room for 16 new tokens and the healed one
    # variants of a long prompt: each row keeps its own end and the rows still share a prefix
    variants = [long_prompt, body + "def last(other):\n    return ", body + "def final(value):\n    return "]
    ids, prefix, new, heal = hf_model.encode(variants, 16)
    for row, text, tail in zip(ids, variants, heal, strict=True):
        whole = hf_model.tokenizer(text[: len(text) - len(tail)], add_special_tokens=False)["input_ids"]
        assert len(row) <= context - new and whole[-len(row) :] == row
    assert prefix > 0 and all(r[:prefix] == ids[0][:prefix] for r in ids)
    out = asyncio.run(hf_model.with_options(GenerationOptions(max_new_tokens=16)).complete(variants))
    assert all(isinstance(o, str) for o in out)


def test_empty_prompt_and_empty_batch(hf_model: HFBackend) -> None:
    assert asyncio.run(hf_model.complete([])) == []
    out = asyncio.run(hf_model.with_options(GenerationOptions(max_new_tokens=8)).complete([""]))
    assert isinstance(out[0], str)


def test_sampling_is_reproducible_with_the_seed(hf_model: HFBackend) -> None:
    opts = GenerationOptions(max_new_tokens=16, temperature=0.8, top_p=0.95)
    a = hf_model.with_options(opts, boundaries=False).generate(OTHERS[:2])
    b = hf_model.with_options(opts, boundaries=False).generate(OTHERS[:2])
    assert [g.text for g in a] == [g.text for g in b]


def test_threads_share_the_model_safely(hf_model: HFBackend) -> None:
    backend = hf_model.with_options(GenerationOptions(max_new_tokens=16))
    expected = [g.text for g in backend.generate(OTHERS)]
    results: dict[int, list[str]] = {}

    def work(i: int) -> None:
        results[i] = [g.text for g in backend.generate(OTHERS)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[i] == expected for i in range(4))


def test_out_of_memory_becomes_a_typed_error_per_prompt(
    hf_model: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real allocation failure inside generate (the model itself cannot be made to run out of
    memory here) turns into BackendOutOfMemory in each prompt's place, after halving the batch."""
    calls: list[int] = []

    def exhausting_generate(*args: object, input_ids: torch.Tensor, **kwargs: object) -> torch.Tensor:
        calls.append(int(input_ids.shape[0]))
        return torch.empty((1 << 40,), dtype=torch.float32)  # 4 TiB: fails to allocate

    monkeypatch.setattr(hf_model.loaded.model, "generate", exhausting_generate)
    out = asyncio.run(hf_model.complete(OTHERS))
    assert all(isinstance(o, BackendOutOfMemory) for o in out)
    assert "memory" in str(out[0]) and "\n" not in str(out[0])
    assert calls[0] == len(OTHERS) and 1 in calls  # the whole batch first, then halves down to one


def test_settings_select_the_bundled_model() -> None:
    backend = create_backend(Settings(backend="hf", max_new_tokens=8, threads=1))
    assert isinstance(backend, HFBackend)
    assert backend.path == bundled_model_path()
    assert backend.options.max_new_tokens == 8
    assert "cctest-code-small" in backend.describe() and "cpu" in backend.describe()


def test_bundled_model_ships_its_training_record() -> None:
    from cctest.models.__main__ import _chain, card

    info = bundled_model_info()
    assert info["held_out_loss"] > 0 and info["steps"] > 0 and info["samples"]
    json.dumps(info)
    text = card()  # the model card the README quotes
    assert f"held-out loss {info['held_out_loss']}" in text
    # how it was made: the run from scratch, then each run that continued it (--init)
    chain = _chain(info)
    assert f"trained {chain[-1]['steps']:,} steps" in text and "init" not in chain[-1]
    assert text.count("more steps (seed") == len(chain) - 1
    for run in chain[:-1]:
        assert f"then {run['steps']:,} more steps (seed {run['seed']})" in text
    # the trainer's recorded samples, then the same prompts completed live through the backend
    assert text.count("```python") == 2 * len(info["samples"])
    live = text.split("through cctest's `hf` backend", 1)[1]
    assert all(sample["prompt"].rstrip() in live for sample in info["samples"])


@pytest.mark.parametrize(
    "case", ["missing", "file", "no_config", "no_tokenizer", "bad_config", "bad_weights"]
)
def test_unusable_model_directories(case: str, tmp_path: Path) -> None:
    source = bundled_model_path()
    target = tmp_path / "model"
    if case == "file":
        target.write_text("not a model")
    elif case != "missing":
        shutil.copytree(source, target)
        if case == "no_config":
            (target / "config.json").unlink()
        elif case == "no_tokenizer":
            for name in ("tokenizer.json", "tokenizer_config.json"):
                (target / name).unlink()
        elif case == "bad_config":
            (target / "config.json").write_text("{ this is not json")
        elif case == "bad_weights":
            (target / "model.safetensors").write_bytes(b"\0" * 64)
    with pytest.raises(ModelLoadError) as err:
        HFBackend(target)
    message = str(err.value)
    assert str(target) in message or "model" in message
    assert "\n" not in message and message.endswith(".")


def test_a_device_that_is_not_here_is_a_config_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA, so asking for it is not an error")  # pragma: no cover
    with pytest.raises(ConfigError):
        HFBackend(None, device="cuda")
    with pytest.raises(ConfigError):
        HFBackend(None, device="quantum")


def test_options_views_share_one_loaded_model(hf_model: HFBackend) -> None:
    view = hf_model.with_options(replace(hf_model.options, max_new_tokens=4))
    assert view.loaded is hf_model.loaded and view.options.max_new_tokens == 4


def test_the_three_batch_layouts_agree(hf_model: HFBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shared prefix read once (cascade attention), the prefix cache repeated per row (the
    fallback for models without transformers' attention interface), and a plain left-padded
    batch: the same greedy tokens."""
    opts = GenerationOptions(max_new_tokens=24)
    prompts = VARIANTS + OTHERS[:1]
    assert hf_model.loaded.cascade  # the bundled GPT-2 goes through the attention interface
    cascade = [g.text for g in hf_model.with_options(opts, boundaries=False).generate(prompts)]
    padded = hf_model.with_options(opts, boundaries=False, share_prefix=False).generate(prompts)
    assert cascade == [g.text for g in padded]
    monkeypatch.setattr(hf_model.loaded, "cascade", False)
    repeated = hf_model.with_options(opts, boundaries=False).generate(prompts)
    assert cascade == [g.text for g in repeated]


def test_shared_prefix_attention_matches_sdpa() -> None:
    """The two-part attention equals ordinary attention over the concatenated keys, with a
    padding mask between a row's prefix and its own tokens."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from cctest.backends._prefix_attention import SplitKV, shared_prefix_attention

    gen = torch.Generator().manual_seed(0)
    batch, heads, p_len, r_len, q_len, dim = 3, 4, 11, 5, 2, 8
    pk, pv = (torch.randn(1, heads, p_len, dim, generator=gen) for _ in range(2))
    rk, rv = (torch.randn(batch, heads, r_len, dim, generator=gen) for _ in range(2))
    query = torch.randn(batch, heads, q_len, dim, generator=gen)
    mask = torch.ones(batch, 1, q_len, p_len + r_len, dtype=torch.bool)
    mask[1, :, :, p_len : p_len + 2] = False  # row 1 has two padding slots after the prefix
    mask[2, :, 0, -1] = False  # causal: the first query of row 2 does not see the last key
    module = torch.nn.Module()
    got, _ = shared_prefix_attention(module, query, SplitKV(pk, rk), SplitKV(pv, rv), mask, scaling=0.3)
    full_k = torch.cat([pk.expand(batch, -1, -1, -1), rk], dim=2)
    full_v = torch.cat([pv.expand(batch, -1, -1, -1), rv], dim=2)
    want, _ = sdpa_attention_forward(module, query, full_k, full_v, mask, scaling=0.3, is_causal=False)
    assert got.shape == want.shape == (batch, q_len, heads, dim)
    assert torch.allclose(got, want, atol=1e-5)


def test_shared_prefix_attention_is_causal_without_a_mask() -> None:
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from cctest.backends._prefix_attention import SplitKV, shared_prefix_attention

    gen = torch.Generator().manual_seed(1)
    pk, pv = (torch.randn(1, 2, 5, 4, generator=gen) for _ in range(2))
    rk, rv = (torch.randn(2, 2, 3, 4, generator=gen) for _ in range(2))
    query = torch.randn(2, 2, 3, 4, generator=gen)
    got, _ = shared_prefix_attention(torch.nn.Module(), query, SplitKV(pk, rk), SplitKV(pv, rv), None)
    mask = torch.ones(2, 1, 3, 8, dtype=torch.bool)
    mask[..., 5:] = torch.ones(3, 3, dtype=torch.bool).tril()  # query t sees own keys up to t
    full_k, full_v = (
        torch.cat([pk.expand(2, -1, -1, -1), rk], 2),
        torch.cat([pv.expand(2, -1, -1, -1), rv], 2),
    )
    want, _ = sdpa_attention_forward(torch.nn.Module(), query, full_k, full_v, mask, is_causal=False)
    assert torch.allclose(got, want, atol=1e-5)


def test_token_healing_takes_the_trailing_whitespace_or_last_token_off(hf_model: HFBackend) -> None:
    """A prompt ending in indentation shows the model the tokens it saw in training: the whitespace
    run is taken off and regenerated; otherwise only the last token is."""
    tok = hf_model.tokenizer
    cases = {
        "def add(a, b):\n    ": "\n    ",  # the cursor after an auto-indent
        VARIANTS[0]: "\n        ",
        "def f(x):\n    return x + 1\n": "\n",
        "x = foo(ba": None,  # inside a word: the last token, whatever it is
    }
    for prompt, expected in cases.items():
        enc = hf_model.encode([prompt], 16)
        tail = enc.heal[0]
        assert tail and prompt.endswith(tail)
        if expected is not None:
            assert tail == expected
        else:
            full = tok(prompt, add_special_tokens=False)["input_ids"]
            assert tail == tok.decode(full[-1:])
        # what stays is the prompt's own tokens up to the tail
        assert tok.decode(enc.ids[0]) + tail == prompt
        assert enc.max_new > 16  # the regenerated tokens do not eat into the new-token budget
    off = hf_model.with_options(token_healing=False).encode(["def add(a, b):\n    "], 16)
    assert off.heal == [""] and tok.decode(off.ids[0]) == "def add(a, b):\n    "


def test_token_healing_allows_only_tokens_that_write_the_tail_back(hf_model: HFBackend) -> None:
    m = hf_model.loaded
    texts = m.token_texts()
    vocab = len(texts)
    for rest in ("\n    ", " ", "ba"):
        mask = m.allowed(rest, vocab)
        allowed = [texts[i] for i in range(vocab) if mask[i]]
        assert allowed, rest
        assert all(t.startswith(rest) or rest.startswith(t) for t in allowed)
        assert all(t for t in allowed)  # no empty (special) token: it would not move the row on
        assert sum(mask.tolist()) == sum(
            bool(t) and (t.startswith(rest) or rest.startswith(t)) for t in texts
        )
    # the split a training file has for an indented line is among the choices
    ids = hf_model.tokenizer("\n    return", add_special_tokens=False)["input_ids"]
    assert m.allowed("\n    ", vocab)[ids[0]]


def test_healed_rows_count_and_bound_only_their_new_tokens(hf_model: HFBackend) -> None:
    prompts = ["def add(a, b):\n    ", VARIANTS[0], OTHERS[0]]
    for budget in (1, 5):
        gens = hf_model.with_options(GenerationOptions(max_new_tokens=budget), boundaries=False).generate(
            prompts
        )
        for g in gens:
            assert g.completion_tokens <= budget
            if g.finish_reason == "length":
                assert g.completion_tokens == budget and g.text


def test_short_prompts_raise_no_attention_mask_warning(
    hf_model: HFBackend, caplog: pytest.LogCaptureFixture
) -> None:
    """A prompt alone in its call has no padding, so transformers drops its all-ones mask; the
    model then warns on stderr when the pad id (the bundled model's BOS/EOS, the input of a
    prompt healed down to nothing) is at an edge of the input. Nothing must be said."""
    from transformers.utils import logging as hf_logging

    hf_logging.warning_once.cache_clear()  # type: ignore[attr-defined]  # it speaks once per process
    with caplog.at_level("WARNING"):
        out = [asyncio.run(hf_model.complete([p]))[0] for p in ("x", "", "def f(")]
    assert all(isinstance(o, str) for o in out)
    assert not [r.getMessage() for r in caplog.records if "attention_mask" in r.getMessage()]


def test_one_row_is_a_plain_generate(hf_model: HFBackend) -> None:
    """A batch of one prompt shares no prefix (nothing to share it with) and gives exactly the
    greedy tokens of transformers' own ``generate`` on the same ids with an ordinary cache."""
    from transformers import DynamicCache

    backend = hf_model.with_options(
        GenerationOptions(max_new_tokens=24), boundaries=False, token_healing=False
    )
    for prompt in (VARIANTS[0], OTHERS[0]):
        enc = backend.encode([prompt], 24)
        assert enc.prefix == 0
        assert backend.encode([prompt, prompt + "x"], 24).prefix > 0  # two rows still share
        got = backend.generate([prompt])[0]
        m = backend.loaded
        with torch.inference_mode():
            out = m.model.generate(
                input_ids=torch.tensor([enc.ids[0]]),
                attention_mask=torch.ones(1, len(enc.ids[0]), dtype=torch.long),
                max_new_tokens=enc.max_new,
                do_sample=False,
                pad_token_id=m.pad_id,
                eos_token_id=sorted(m.eos_ids),
                **{m.cache_kw: DynamicCache()},
            )
        new = out[0, len(enc.ids[0]) :].tolist()
        stop = next((j for j, t in enumerate(new) if t in m.eos_ids), len(new))
        assert got.completion_tokens == stop
        assert got.text == backend.tokenizer.decode(new[:stop], skip_special_tokens=True)


def test_rows_share_what_each_has_in_common_with_the_first(
    hf_model: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows that part from the first row at different points (a renamed parameter early, a
    comment later, another prompt at once) are prefilled on their own, in groups, each reading
    the first row's prefix as far as it shares it: the same greedy tokens as one by one and as
    a plain left-padded batch, and every row's tokens in the batch are its own, in order."""
    from cctest.backends._prefill import Prefill

    backend = hf_model.with_options(GenerationOptions(max_new_tokens=24), boundaries=False)
    prompts = VARIANTS + OTHERS[:2]
    plan = backend.view.plan(prompts, 24, grouped=True)
    enc, shares = plan.encoding, plan.shares
    assert shares is not None and len(set(shares)) >= 3 and shares[-1] == 0
    batch = Prefill(backend.loaded, plan, reuse_prefix=False).batch
    for i, x in enumerate(enc.ids):
        assert batch.input_ids[i][batch.mask[i] == 1].tolist() == x
    prefilled: list[list[int] | None] = []
    real = Prefill.prefill_rows

    def spy(self: Prefill, *args: object) -> None:
        prefilled.append(self.plan.shares)
        real(self, *args)

    monkeypatch.setattr(Prefill, "prefill_rows", spy)
    gens = backend.generate(prompts)
    assert prefilled == [shares]
    singles = [backend.generate([p])[0] for p in prompts]
    padded = backend.with_options(share_prefix=False).generate(prompts)
    assert [g.text for g in gens] == [g.text for g in singles] == [g.text for g in padded]
    assert [g.completion_tokens for g in gens] == [g.completion_tokens for g in singles]


def test_row_groups_cover_every_row_once() -> None:
    from cctest.backends._layout import row_groups

    lengths = [700, 12, 650, 30, 0, 31, 29, 5, 640]
    groups = row_groups(lengths, 64)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    # the short rows are not padded to the long ones' length
    assert all(min(lengths[i] for i in g) > 600 or max(lengths[i] for i in g) < 40 for g in groups)
    assert row_groups(lengths, 10_000) == [sorted(range(len(lengths)), key=lambda i: -lengths[i])]


def test_plan_prefill_counts_the_layouts(hf_model: HFBackend) -> None:
    prompts = VARIANTS + OTHERS[:2]
    enc = hf_model.encode(prompts, 24)
    assert hf_model.plan_prefill([VARIANTS[0]], 24) == len(hf_model.encode([VARIANTS[0]], 24).ids[0])
    one_prefix = hf_model.plan_prefill(prompts, 24, grouped=False)
    assert one_prefix == enc.prefix + len(prompts) * max(len(x) - enc.prefix for x in enc.ids)
    grouped = hf_model.plan_prefill(prompts, 24)
    assert max(map(len, enc.ids)) <= grouped < one_prefix  # every row's tokens, less padding


@pytest.mark.parametrize("q_len", [1, 3])
@pytest.mark.parametrize("fused_above", [0, 10**6])
def test_shared_prefix_attention_matches_sdpa_with_grouped_heads(
    q_len: int, fused_above: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With query heads sharing key/value heads (GQA), decoding (one query: the cascade over the
    one prefix copy) and prefill (several: one fused SDPA, or the cascade for a few queries) all
    equal ordinary attention over the concatenated keys; a query that sees no key at all
    (padding) gives zeros, never NaN."""
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    from cctest.backends import _prefix_attention
    from cctest.backends._prefix_attention import SplitKV, shared_prefix_attention

    monkeypatch.setattr(_prefix_attention, "FUSED_MIN_QUERIES", fused_above)

    gen = torch.Generator().manual_seed(2)
    batch, kv_heads, groups, p_len, r_len, dim = 3, 2, 3, 9, 4, 8
    pk, pv = (torch.randn(1, kv_heads, p_len, dim, generator=gen) for _ in range(2))
    rk, rv = (torch.randn(batch, kv_heads, r_len, dim, generator=gen) for _ in range(2))
    query = torch.randn(batch, kv_heads * groups, q_len, dim, generator=gen)
    mask = torch.ones(batch, 1, q_len, p_len + r_len, dtype=torch.bool)
    mask[1, ..., 4:p_len] = False  # row 1 reads only the prefix's head
    module = torch.nn.Module()
    module.num_key_value_groups = groups  # type: ignore[assignment]
    got, _ = shared_prefix_attention(module, query, SplitKV(pk, rk), SplitKV(pv, rv), mask, scaling=0.2)
    full_k = repeat_kv(torch.cat([pk.expand(batch, -1, -1, -1), rk], dim=2), groups)
    full_v = repeat_kv(torch.cat([pv.expand(batch, -1, -1, -1), rv], dim=2), groups)
    plain = torch.nn.Module()
    want, _ = sdpa_attention_forward(plain, query, full_k, full_v, mask, scaling=0.2, is_causal=False)
    assert got.shape == want.shape == (batch, q_len, kv_heads * groups, dim)
    assert torch.allclose(got, want, atol=1e-5)
    if q_len > 1:
        mask[2, :, 0] = False  # row 2's first query is padding: it sees nothing
        got, _ = shared_prefix_attention(module, query, SplitKV(pk, rk), SplitKV(pv, rv), mask)
        assert torch.isfinite(got).all() and not got[2, 0].any()


def test_the_batch_plan_decides_after_the_healed_tail() -> None:
    """An early decision comes ``after`` new tokens past the most any row heals, and not at all
    where it would come at once or not before the budget ends."""
    from cctest.backends._encode import Encoding
    from cctest.backends._plan import BatchPlan

    plan = BatchPlan(Encoding([[1, 2, 3], [1, 2, 4]], 2, 10, ["", "  "]), None)
    assert plan.decision_tokens(4, 8) == 6
    assert plan.decision_tokens(0, 10) == 0 and plan.decision_tokens(10, 10) == 0
    assert plan.prefill_tokens() == 2 + 2 * 1
