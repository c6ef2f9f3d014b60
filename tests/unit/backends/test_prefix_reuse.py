"""Reusing the previous call's shared-prefix cache: while typing, each request extends the last
one's prompt, and only the tokens past the kept prefix are run. Greedy completions are the same
as without reuse (left to right and suffix first, one row and a prompt with mutants), on the
bundled model and random-weight Llama and GPT-2 models; another file's prompt, other views and
other models are served right; one prefix is kept; the context cut moves in steps, so a long
prompt keeps its head while typing."""

from __future__ import annotations

import json.decoder
from pathlib import Path

import pytest

from cctest.backends._encode import CUT_STEP
from cctest.backends._layout import common_length
from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend

FILE = Path(json.decoder.__file__).read_text(encoding="utf-8")
AT = FILE.index("def JSONArray") + 300  # inside a function body, about 2k tokens in: past the context
TYPED = FILE[AT : AT + 5]  # typed one character at a time
SUFFIX = FILE[AT + 5 :]  # the code after what is typed: typing inserts before it


def _typing(start: int) -> list[str]:
    """The prompts of typing ``TYPED`` after ``FILE[start:AT]``."""
    return [FILE[start:AT] + TYPED[:i] for i in range(len(TYPED) + 1)]


def _mutants(prompt: str) -> list[str]:
    """The prompt and two variants: renamed near the cursor, and near the top (rows part early)."""
    last = prompt.rfind("end")
    near = prompt[:last] + "stop" + prompt[last + 3 :] if last >= 0 else prompt + " "
    return [prompt, near, prompt.replace("import", "from", 1)]


def _views(backend: HFBackend, fim: str) -> tuple[HFBackend, HFBackend]:
    opts = GenerationOptions(max_new_tokens=8)
    on = backend.with_options(opts, boundaries=False, fim=fim, reuse_prefix=True)
    return on, on.with_options(reuse_prefix=False)


def _check_typing(on: HFBackend, off: HFBackend, prompts: list[str], rows: bool, suffix: bool) -> int:
    """Greedy completions with reuse equal those without, at every keystroke; returns the prefix
    tokens taken from the kept cache."""
    before = on.prefix_tokens[0]
    for prompt in prompts:
        batch = _mutants(prompt) if rows else [prompt]
        suffixes = [SUFFIX] * len(batch) if suffix else None
        with_reuse = on.generate(batch, suffixes=suffixes)
        without = off.generate(batch, suffixes=suffixes)
        assert [g.text for g in with_reuse] == [g.text for g in without]
        assert [g.completion_tokens for g in with_reuse] == [g.completion_tokens for g in without]
    return on.prefix_tokens[0] - before


@pytest.mark.parametrize("rows", [False, True], ids=["plain", "mutants"])
@pytest.mark.parametrize("suffix", [False, True], ids=["left-to-right", "fim"])
def test_typing_gives_the_same_completions_with_reuse_on_the_bundled_model(
    hf_model: HFBackend, rows: bool, suffix: bool
) -> None:
    on, off = _views(hf_model, "auto")
    assert on.reads_suffix_first  # the bundled model fills in the middle suffix first
    reused = _check_typing(on, off, _typing(0), rows, suffix)
    # the file is past the context: the cut stays put, and each keystroke reuses about the
    # whole of the last one's prefix (hundreds of tokens each)
    assert reused > 4 * 500


@pytest.mark.parametrize("rows", [False, True], ids=["plain", "mutants"])
@pytest.mark.parametrize("suffix", [False, True], ids=["left-to-right", "fim"])
def test_typing_gives_the_same_completions_with_reuse_on_random_models(
    tiny: HFBackend, rows: bool, suffix: bool
) -> None:
    on, off = _views(tiny, "auto")
    # a shorter prompt (it fits the context) and the whole file (it does not)
    reused = _check_typing(on, off, _typing(AT - 1500), rows, suffix)
    reused += _check_typing(on, off, _typing(0)[:3], rows, suffix)
    assert reused > 4 * 200


def test_another_file_and_a_shorter_prompt_are_served_right(tiny: HFBackend) -> None:
    on, off = _views(tiny, "off")
    assert on.loaded.cascade  # the first row's tokens but its last are the shared prefix
    other = Path(json.__file__).read_text(encoding="utf-8")[:3000]
    prompts = [FILE[:AT], other, FILE[:AT], FILE[: AT - 200], FILE[:AT]]
    for prompt in prompts:
        for batch in ([prompt], _mutants(prompt)):
            assert [g.text for g in on.generate(batch)] == [g.text for g in off.generate(batch)]
            kept = on.loaded.reused
            assert kept is not None
            # the kept prefix is this call's own: the prompt's tokens but its last
            assert kept.ids == on.encode(batch, 8).ids[0][:-1]


def test_views_share_the_kept_prefix_and_models_do_not(tiny: HFBackend, hf_model: HFBackend) -> None:
    """The keys depend on the model and the token ids only: every view of a model reads its
    prefix (token healing and FIM change the ids, which are compared); another model keeps its own."""
    on, off = _views(tiny, "off")
    prompt = FILE[: AT - 3000]
    on.generate([prompt])
    healed_off = on.with_options(token_healing=False)
    fim = on.with_options(fim="auto")
    for view, plain in (
        (healed_off, off.with_options(token_healing=False)),
        (fim, off.with_options(fim="auto")),
    ):
        for suffixes in (None, [SUFFIX]):
            assert [g.text for g in view.generate([prompt], suffixes=suffixes)] == [
                g.text for g in plain.generate([prompt], suffixes=suffixes)
            ]
    assert tiny.loaded is not hf_model.loaded
    theirs = hf_model.loaded.reused
    on.generate([prompt + "x"])
    assert hf_model.loaded.reused is theirs  # one model's calls leave the other's prefix alone
    big, _ = _views(hf_model, "off")
    got = big.generate([prompt + "x"])
    assert [g.text for g in got] == [
        g.text for g in big.with_options(reuse_prefix=False).generate([prompt + "x"])
    ]


def test_one_prefix_is_kept(tiny: HFBackend) -> None:
    on, _ = _views(tiny, "off")
    m = on.loaded
    for prompt in _typing(AT - 2000):
        on.generate(_mutants(prompt))
        kept = m.reused
        assert kept is not None
        assert len(kept.kv) == m.layers
        # the kept keys hold exactly the kept ids, batch 1: no row's copy, nothing left over
        assert all(k.shape[0] == v.shape[0] == 1 for k, v in kept.kv)
        assert all(k.shape[-2] == v.shape[-2] == len(kept.ids) for k, v in kept.kv)
    # a view with reuse off neither reads nor replaces it
    kept = m.reused
    on.with_options(reuse_prefix=False).generate([FILE[:100]])
    assert m.reused is kept


def test_the_context_cut_moves_in_steps(hf_model: HFBackend) -> None:
    """A prompt past the context keeps the same first token over many keystrokes: left to right
    its token ids lose a multiple of ``CUT_STEP`` at the start; suffix first, the rows (their
    head is the suffix's cut, then the prefix's) extend each other."""
    view = hf_model.with_options(GenerationOptions(max_new_tokens=8))
    tok = view.tokenizer
    whole = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in _typing(0)]
    unhealed = view.with_options(token_healing=False)  # healing takes tokens off the end too
    encoded = [unhealed.encode([p], 8).ids[0] for p in _typing(0)]
    for n, ids in zip(whole, encoded, strict=True):
        dropped = n - len(ids)
        assert dropped > 0 and dropped % CUT_STEP == 0
    heads = [ids[:50] for ids in encoded]
    assert all(h == heads[0] for h in heads)
    rows = [view.fim_inputs([p], [SUFFIX], 8) for p in _typing(0)]
    assert all(r is not None for r in rows)
    texts = [r[0] for r in rows if r is not None]
    for prev, nxt in zip(texts, texts[1:], strict=False):
        assert nxt.startswith(prev)  # the next keystroke's row extends this one's
    ids = [view.encode([t], 8).ids[0] for t in texts]
    assert min(common_length(a, b) for a, b in zip(ids, ids[1:], strict=False)) > 700
