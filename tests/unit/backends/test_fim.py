"""Fill in the middle: templates detected per family, prompts laid out exactly, batched FIM
generation equal to one prompt at a time, and the context budget cut on both sides."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

from cctest.backends.base import GenerationOptions
from cctest.backends.fim import DECLARED, FAMILIES, FimTemplate, detect, parse_fim, resolve
from cctest.backends.hf import HFBackend
from cctest.config import Settings
from cctest.errors import ConfigError
from cctest.models import bundled_model_path


def small_tokenizer(special: list[str]) -> PreTrainedTokenizerFast:
    """A word-level tokenizer of a few words that carries ``special`` as special tokens."""
    words = ["<unk>", "def", "f", "(", ")", ":", "return", "x"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")
    fast.add_special_tokens({"additional_special_tokens": special})  # type: ignore[dict-item]
    return fast


@pytest.mark.parametrize(
    ("special", "family"),
    [
        (["<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<|endoftext|>"], "starcoder"),
        (["<fim-prefix>", "<fim-middle>", "<fim-suffix>", "<|endoftext|>"], "santacoder"),
        (["<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|endoftext|>"], "qwen"),
        (["<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|file_separator|>"], "codegemma"),
        (["▁<PRE>", "▁<MID>", "▁<SUF>", "▁<EOT>"], "codellama"),
        (["<PRE>", "<MID>", "<SUF>", "<EOT>"], "codellama"),
        (["<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"], "deepseek"),
        (["<|endoftext|>"], None),
        (["<fim_prefix>", "<fim_suffix>"], None),  # no middle token: no template
    ],
)
def test_the_template_is_detected_from_the_special_tokens(special: list[str], family: str | None) -> None:
    tok = small_tokenizer(special)
    found = detect(tok)
    assert (found.name if found else None) == family
    assert resolve("auto", tok) == found
    assert resolve("off", tok) is None
    assert resolve("starcoder-spm", tok) == FAMILIES["starcoder-spm"]  # an explicit one wins


STARCODER = ["<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<|endoftext|>"]


@pytest.mark.parametrize(
    ("declared", "found"),
    [
        ("starcoder-spm", "starcoder-spm"),
        ("starcoder", "starcoder"),
        ("<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>", "custom"),
        ("codellama-spm", "starcoder"),  # tokens it does not carry: detected from its tokens
        ("starcoder2", "starcoder"),  # not a template
        ("off", "starcoder"),  # a declaration names a template, not the setting's other values
    ],
)
def test_auto_honours_the_template_the_tokenizer_config_declares(
    declared: str, found: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A model directory declares the FIM template (and so the order) it was trained for in its
    tokenizer_config.json; auto uses it, read back from the saved directory as a model's is."""
    tok = small_tokenizer(STARCODER)
    tok.init_kwargs[DECLARED] = declared
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    with caplog.at_level("WARNING", logger="cctest.backends.fim"):
        template = resolve("auto", loaded)
    assert template is not None and template.name == found
    assert (found == declared or found == "custom") != ("cannot use" in caplog.text)
    assert resolve("starcoder", loaded) == FAMILIES["starcoder"]  # an explicit setting still wins
    assert resolve("off", loaded) is None


def test_psm_and_spm_prompts_are_laid_out_exactly() -> None:
    prefix, suffix = "def f(x):\n    return ", "\n\nprint(f(2))\n"
    assert FAMILIES["starcoder"].prompt(prefix, suffix) == (
        "<fim_prefix>def f(x):\n    return <fim_suffix>\n\nprint(f(2))\n<fim_middle>"
    )
    assert FAMILIES["starcoder-spm"].prompt(prefix, suffix) == (
        "<fim_prefix><fim_suffix>\n\nprint(f(2))\n<fim_middle>def f(x):\n    return "
    )
    assert FAMILIES["codellama"].prompt(prefix, suffix) == (
        "<PRE> def f(x):\n    return  <SUF>\n\nprint(f(2))\n <MID>"
    )
    assert FAMILIES["deepseek"].prompt("a", "b") == "<｜fim▁begin｜>a<｜fim▁hole｜>b<｜fim▁end｜>"
    assert FAMILIES["qwen"].prompt("a", "b") == "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>"
    assert [FAMILIES[n].order for n in ("starcoder", "starcoder-spm")] == ["psm", "spm"]
    # a layout of one's own; code holding "{suffix}" is not taken for the slot
    own = FimTemplate("custom", "[S]{suffix}[P]{prefix}[M]")
    assert own.order == "spm"
    assert own.prompt("x = '{suffix}'", "y") == "[S]y[P]x = '{suffix}'[M]"


def test_the_fim_setting_is_checked() -> None:
    assert parse_fim("auto") == "auto" and parse_fim("codellama-spm") == "codellama-spm"
    assert parse_fim("<a>{prefix}<b>{suffix}<c>") == "<a>{prefix}<b>{suffix}<c>"
    for bad in ("starcoder2", "<a>{prefix}<b>", "{prefix}{prefix}{suffix}"):
        with pytest.raises(ConfigError, match="is not a FIM template"):
            parse_fim(bad)
    settings, errors = Settings.from_mapping({"fim": "nonsense", "fimSuffixShare": 0.5})
    assert settings.fim == "auto" and settings.fim_suffix_share == 0.5
    assert len(errors) == 1 and "'fim'" in errors[0]


@pytest.fixture(scope="module")
def fim_model(tmp_path_factory: pytest.TempPathFactory) -> HFBackend:
    """The bundled model with StarCoder's FIM tokens added to its tokenizer (their embeddings
    new), saved as a model directory of its own: a real model whose template is detected."""
    path: Path = tmp_path_factory.mktemp("fim-model")
    tok = AutoTokenizer.from_pretrained(bundled_model_path())
    tok.init_kwargs.pop(DECLARED, None)  # the template from the tokens alone, in PSM order
    tok.add_special_tokens({"additional_special_tokens": ["<fim_prefix>", "<fim_suffix>", "<fim_middle>"]})
    model = AutoModelForCausalLM.from_pretrained(bundled_model_path())
    model.resize_token_embeddings(len(tok), mean_resizing=False)
    tok.save_pretrained(path)
    model.save_pretrained(path)
    return HFBackend(path, options=GenerationOptions(max_new_tokens=24), threads=1)


PREFIXES = [
    "import math\n\n\ndef area(radius):\n    return ",
    "import math\n\n\ndef area(r):\n    return ",
    "import math\n\n\ndef area(size):\n    return ",
]
SUFFIXES = ["\n\n\nprint(area(2))\n", "\n\n\nprint(area(2))\n", "\n\n\nprint(area(3))\n"]


def test_batched_fim_equals_one_by_one(fim_model: HFBackend) -> None:
    assert fim_model.fim_template == FAMILIES["starcoder"]
    batched = asyncio.run(fim_model.complete(PREFIXES, suffixes=SUFFIXES))
    alone = [
        asyncio.run(fim_model.complete([p], suffixes=[s]))[0] for p, s in zip(PREFIXES, SUFFIXES, strict=True)
    ]
    assert batched == alone
    # the rows are the template's, and they still share a head for the prefix cache
    rows = fim_model.fim_inputs(PREFIXES, SUFFIXES, 24)
    assert rows == [FAMILIES["starcoder"].prompt(p, s) for p, s in zip(PREFIXES, SUFFIXES, strict=True)]
    enc = fim_model.encode(rows, 24)
    assert enc.prefix > 0
    fim_id = fim_model.tokenizer.convert_tokens_to_ids("<fim_prefix>")
    assert all(x[0] == fim_id for x in enc.ids)


def test_fim_is_used_only_with_a_suffix_and_a_template(fim_model: HFBackend) -> None:
    left_to_right = asyncio.run(fim_model.complete(PREFIXES[:1]))
    assert asyncio.run(fim_model.complete(PREFIXES[:1], suffixes=["  \n"])) == left_to_right
    off = fim_model.with_options(fim="off")
    assert off.fim_template is None and off.fim_inputs(PREFIXES, SUFFIXES, 24) is None
    assert asyncio.run(off.complete(PREFIXES[:1], suffixes=SUFFIXES[:1])) == left_to_right
    spm = fim_model.with_options(fim="starcoder-spm")
    assert spm.fim_inputs(PREFIXES[:1], SUFFIXES[:1], 24) == [
        "<fim_prefix><fim_suffix>" + SUFFIXES[0] + "<fim_middle>" + PREFIXES[0]
    ]


def test_the_context_budget_keeps_the_code_nearest_the_cursor_on_both_sides(fim_model: HFBackend) -> None:
    tok, context = fim_model.tokenizer, fim_model.context
    before = "".join(f"def before_{i}(x):\n    return x + {i}\n\n\n" for i in range(300))
    after = "".join(f"\n\n\ndef after_{i}(x):\n    return x - {i}" for i in range(300))
    prefixes = [before + "def last(value):\n    return ", before + "def last(other):\n    return "]
    rows = fim_model.fim_inputs(prefixes, [after, after], 24)
    assert rows is not None
    for prefix, row in zip(prefixes, rows, strict=True):
        assert len(tok(row, add_special_tokens=False)["input_ids"]) <= context - 24
        head, rest = row.removeprefix("<fim_prefix>").split("<fim_suffix>")
        tail = rest.removesuffix("<fim_middle>")
        assert prefix.endswith(head) and len(head) < len(prefix)
        assert head.endswith(prefix[-30:])  # the code just before the cursor stays
        assert after.startswith(tail) and 0 < len(tail) < len(after)  # the code just after it stays
        # the suffix got its share of the room (a quarter by default), the prefix the rest
        share = len(tok(tail, add_special_tokens=False)["input_ids"]) / context
        assert 0.2 < share < 0.3
    # both rows lost the same number of tokens at their start: they still share a head
    assert fim_model.encode(rows, 24).prefix > 0
    # a short prefix leaves its room to the suffix
    rows = fim_model.fim_inputs(["x = "], [after], 24)
    assert rows is not None and len(tok(rows[0], add_special_tokens=False)["input_ids"]) > context // 2


def test_fim_tokens_added_as_special_tokens_are_never_healed(tmp_path: Path) -> None:
    """A tokenizer whose FIM tokens are added tokens marked special (as the bundled model's
    trainer adds them), not named in its special-tokens map: the row still ends with
    <fim_middle>, which token healing leaves alone (it used to take the token for text to write
    back, and the model then spelled "<f…" instead of the middle)."""
    tok = AutoTokenizer.from_pretrained(bundled_model_path())
    tok.init_kwargs.pop(DECLARED, None)  # PSM, whose rows end with <fim_middle>
    tok.add_tokens(["<fim_prefix>", "<fim_middle>", "<fim_suffix>"], special_tokens=True)
    model = AutoModelForCausalLM.from_pretrained(bundled_model_path())
    model.resize_token_embeddings(len(tok), mean_resizing=False)
    tok.save_pretrained(tmp_path)
    model.save_pretrained(tmp_path)
    backend = HFBackend(tmp_path, options=GenerationOptions(max_new_tokens=8), threads=1)
    middle = tok.convert_tokens_to_ids("<fim_middle>")
    assert middle not in set(tok.all_special_ids)  # the case this test is about
    assert backend.fim_used() == "starcoder (psm)"
    rows = backend.fim_inputs(["def f(x):\n    return "], ["\n\nprint(f(2))\n"], 8)
    assert rows is not None and rows[0].endswith("<fim_middle>")
    enc = backend.encode(rows, 8)
    assert enc.heal == [""] and enc.ids[0][-1] == middle
    assert backend.loaded.token_texts()[middle] == ""


def test_only_the_text_near_the_cursor_is_tokenized_and_the_rows_are_the_same(
    fim_model: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cut reads only the end of a long prompt and the start of a long suffix, and lays the
    rows out exactly as tokenizing the whole texts does."""
    from cctest.backends import _fim_layout

    before = "".join(f"def before_{i}(x):\n    return x + {i}\n\n\n" for i in range(400))
    after = "".join(f"\n\n\ndef after_{i}(x):\n    return x - {i}" for i in range(400))
    prefixes = [before + "def last(value):\n    return ", before + "def last(other):\n    return "]
    suffixes = [after, after.replace("after_1(", "later_1(")]
    read: list[int] = []
    real = _fim_layout._token_spans

    def spy(tokenizer: object, texts: list[str]) -> list[list[tuple[int, int]]]:
        read.append(max(map(len, texts)))
        return real(tokenizer, texts)

    monkeypatch.setattr(_fim_layout, "_token_spans", spy)
    near = fim_model.fim_inputs(prefixes, suffixes, 24)
    assert read and max(read) < 0.6 * len(before)  # neither side was read whole
    read.clear()
    monkeypatch.setattr(_fim_layout, "_spans_near", lambda tok, texts, n, end: real(tok, texts))
    assert near == fim_model.fim_inputs(prefixes, suffixes, 24)


def test_rows_keep_the_same_suffix_when_a_mutant_is_longer(fim_model: HFBackend) -> None:
    """A mutant a step longer than the prompt (dead code near the cursor) keeps as much of the
    code after the cursor as the prompt's row: suffix first, the two rows then share the whole
    suffix and the prefix up to the insertion instead of parting at the suffix's end."""
    tok = fim_model.tokenizer
    before = "".join(f"def before_{i}(x):\n    return x + {i}\n\n\n" for i in range(40))
    dead = "    if False:\n" + "".join(f"        unused_{i} = {i}\n" for i in range(12))
    prompt = before + "def last(value):\n    total = value\n    return "
    mutant = before + "def last(value):\n    total = value\n" + dead + "    return "
    after = "".join(f"\n\n\ndef after_{i}(x):\n    return x - {i}" for i in range(300))
    lengths = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in (prompt, mutant)]
    assert lengths[1] - lengths[0] > 64  # more than one step of the suffix's room apart
    spm = fim_model.with_options(fim="starcoder-spm")
    rows = spm.fim_inputs([prompt, mutant], [after, after], 24)
    assert rows is not None
    tails = [r.split("<fim_middle>")[0] for r in rows]
    assert tails[0] == tails[1] and 0 < len(tails[0]) < len(after) + 30  # cut, and cut alike
    shared = spm.encode(rows, 24).prefix
    suffix_tokens = len(tok(tails[0], add_special_tokens=False)["input_ids"])
    assert shared > suffix_tokens + lengths[0] // 2  # the rows part near the cursor, not at the suffix


def test_a_row_without_a_suffix_stays_left_to_right_in_a_fim_batch(fim_model: HFBackend) -> None:
    """Batched with rows that fill in the middle, a prompt with nothing after its cursor is laid
    out, and completed, as it is alone: left to right, not as FIM with an empty suffix."""
    rows = fim_model.fim_inputs([PREFIXES[0], PREFIXES[1]], [SUFFIXES[0], "  \n"], 24)
    assert rows == [FAMILIES["starcoder"].prompt(PREFIXES[0], SUFFIXES[0]), PREFIXES[1]]
    batched = asyncio.run(fim_model.complete([PREFIXES[0], PREFIXES[1]], suffixes=[SUFFIXES[0], ""]))
    assert batched[1] == asyncio.run(fim_model.complete([PREFIXES[1]]))[0]
    assert batched[0] == asyncio.run(fim_model.complete([PREFIXES[0]], suffixes=[SUFFIXES[0]]))[0]


def test_groups_cut_each_prompt_to_the_context_on_its_own(fim_model: HFBackend) -> None:
    """``groups``: a long prompt beside a short one in one call is cut as it is alone, and the
    short one is not cut for the long one's sake (``Engine.run_many`` batches prompts so)."""
    before = "".join(f"def before_{i}(x):\n    return x + {i}\n\n\n" for i in range(300))
    after = "".join(f"\n\n\ndef after_{i}(x):\n    return x - {i}" for i in range(300))
    long_rows = [before + "def last(value):\n    return ", before + "def last(other):\n    return "]
    long_tails = [after, after]
    short_rows, short_tails = PREFIXES[:2], ["\n\n\nprint(area(2))\n" * 40, "\n\n\nprint(area(2))\n" * 40]
    prompts, suffixes = [*long_rows, *short_rows], [*long_tails, *short_tails]
    together = fim_model.fim_inputs(prompts, suffixes, 24, groups=[2, 2])
    apart = fim_model.fim_inputs(long_rows, long_tails, 24)
    assert apart is not None
    assert together == apart + fim_model.fim_inputs(short_rows, short_tails, 24)
    # without the grouping the short prompt's suffix gives way to the long prompt's prefix
    assert fim_model.fim_inputs(prompts, suffixes, 24)[2:] != together[2:]
    # left to right, each prompt's rows are cut as they are alone
    long_ltr = [before * 3 + "def last(value):\n    return ", before * 3 + "def last(x):\n    return "]
    enc = fim_model.encode([*long_ltr, *PREFIXES[:2]], 24, groups=[2, 2])
    alone = fim_model.encode(PREFIXES[:2], 24)
    assert enc.ids[2:] == alone.ids and enc.ids[:2] == fim_model.encode(long_ltr, 24).ids
    assert len(enc.ids[0]) < len(fim_model.tokenizer(long_ltr[0])["input_ids"])  # the long one is cut
    # and the completions are each prompt's alone
    got = asyncio.run(fim_model.complete_groups(prompts, suffixes=suffixes, groups=[2, 2]))
    assert got[2:] == asyncio.run(fim_model.complete(short_rows, suffixes=short_tails))
    with pytest.raises(ValueError, match="do not cover"):
        fim_model.generate(PREFIXES, groups=[1, 1])


def test_run_many_gives_each_prompt_what_run_gives_it(hf_model: HFBackend) -> None:
    """``cctest bench`` batches prompts (``Engine.run_many``): one with code after its cursor
    and one without, in one call, get the completions each gets alone (the bundled model fills
    in the middle, suffix first)."""
    from cctest.engine import Engine
    from cctest.types import Prompt

    backend = hf_model.with_options(GenerationOptions(max_new_tokens=12))
    engine = Engine(backend, Settings(mutants=3, decide_after=0, threads=1))
    prompts = [
        Prompt(text="def area(radius):\n    return ", suffix="\n\n\nprint(area(2))\n"),
        Prompt(text="def total(items):\n    s = 0\n    for x in items:\n        "),
    ]
    many = asyncio.run(engine.run_many(prompts))
    for prompt, got in zip(prompts, many, strict=True):
        assert not isinstance(got, Exception)
        alone = asyncio.run(engine.run(prompt))
        assert [c.text for c in got.completions] == [c.text for c in alone.completions]
        assert len(got.completions) > 1


def test_token_spans_are_the_tokenizers_offsets_with_equal_texts_read_once(fim_model: HFBackend) -> None:
    from cctest.backends._fim_layout import _token_spans

    tok = fim_model.tokenizer
    texts = [SUFFIXES[0], PREFIXES[0], SUFFIXES[0], "", SUFFIXES[0]]
    spans = _token_spans(tok, texts)
    want = tok(texts, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    assert [list(map(tuple, s)) for s in spans] == [list(map(tuple, w)) for w in want]
    assert spans[0] is spans[2] is spans[4]  # one tokenization for the three equal texts
