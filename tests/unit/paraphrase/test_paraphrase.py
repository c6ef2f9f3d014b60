"""ReplaceWord: WordNet neighbours from Debian's data, vectors, paraphrases and the distances."""

from __future__ import annotations

import math
import re
import tracemalloc
from pathlib import Path

import pytest

from cctest.errors import ConfigError
from cctest.paraphrase import (
    Distances,
    Synonyms,
    Vectors,
    WordNet,
    generate,
    neighbour_source,
    neighbours,
    paraphrases,
    replaceable_words,
)
from cctest.paraphrase import distance as d
from cctest.paraphrase.neighbours import lexnames_text, wordnet_root


@pytest.fixture(scope="module")
def wn() -> WordNet:
    return WordNet()


@pytest.fixture
def vectors(tmp_path: Path) -> Vectors:
    f = tmp_path / "glove.txt"
    f.write_text("cat 1 0\ndog 0 1\nsat 1 1\nkitten 0.9 0.1\n", encoding="utf-8")
    return Vectors(f, by="cosine")


def test_lexnames_is_the_standard_list() -> None:
    lines = lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3" and lines[3] == "03\tnoun.Tops\t1" and lines[44] == "44\tadj.ppl\t3"
    assert lines[29] == "29\tverb.body\t2"


def test_wordnet_neighbours_of_known_words(wn: WordNet) -> None:
    assert wn.neighbours("large", 10)[:2] == ["big", "bombastic"]
    assert "listing" in wn.neighbours("list", 5)
    assert "render" in wn.neighbours("return", 60)
    assert all(w != "list" for w in wn.neighbours("list", 50))
    assert len(wn.neighbours("list", 2)) == 2
    assert wn.neighbours("qwzxv", 5) == []


def test_missing_wordnet_data_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"apt-get install wordnet-base"):
        wordnet_root(tmp_path)


def test_vectors_neighbours_by_cosine(vectors: Vectors) -> None:
    assert vectors.neighbours("cat", 3) == ["kitten", "sat", "dog"]
    assert vectors.neighbours("CAT", 1) == ["kitten"]
    assert vectors.neighbours("unknown", 3) == []


def test_glove_neighbours_are_the_nearest_by_euclidean_distance(tmp_path: Path) -> None:
    """The paper: "n words nearest to w in the embedding vector space". 'big' points the way 'cat'
    does but lies far from it; 'near' lies close at a wider angle: Euclidean distance (the default)
    and cosine similarity (--neighbours-by cosine) rank them the other way round."""
    f = tmp_path / "glove.small.txt"
    f.write_text("cat 1.0 0.0 0.0\nbig 3.0 0.3 0.0\nnear 0.6 0.5 0.0\nfar -1.0 0.0 2.0\n", encoding="utf-8")
    assert Vectors(f).neighbours("cat", 3) == ["near", "big", "far"]
    assert Vectors(f, by="euclidean").neighbours("cat", 2) == ["near", "big"]
    assert Vectors(f, by="cosine").neighbours("cat", 3) == ["big", "near", "far"]
    assert neighbour_source(f).neighbours("cat", 1) == ["near"]  # what --vectors FILE gives
    assert neighbour_source(f, "cosine").neighbours("cat", 1) == ["big"]
    with pytest.raises(ConfigError, match="--neighbours-by must be euclidean or cosine"):
        Vectors(f, by="manhattan")


def test_vectors_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("cat 1 0\ndog 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.txt:2 has 1 numbers"):
        Vectors(bad)
    with pytest.raises(ConfigError, match="missing.txt: no such file"):
        Vectors(tmp_path / "missing.txt")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e39"])
def test_vectors_must_be_finite(tmp_path: Path, value: str) -> None:
    """A NaN or an infinity (1e39 overflows float32) would make every distance through it NaN."""
    bad = tmp_path / "bad.txt"
    bad.write_text(f"cat 1 0\ndog 0 {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.txt:2 holds a value that is not a finite number"):
        Vectors(bad)


def test_vectors_file_must_be_utf8(tmp_path: Path) -> None:
    """(A device, a named pipe and an endless line: tests/unit/suites/test_operational_hostile.py.)"""
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"cat 1 0\ncaf\xe9 0 1\n")
    with pytest.raises(ConfigError, match=r"latin.txt is not valid UTF-8"):
        Vectors(latin)


def test_a_vectors_file_of_more_lines_than_the_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every line costs time and a word's memory however short it is (50 MB of 'ab 1' lines took
    over 4 GB and 247 s): a file of more lines than the bound is refused, blank lines counted."""
    monkeypatch.setattr(neighbours, "MAX_VECTORS_LINES", 1000)
    at = tmp_path / "at.txt"
    at.write_text("cat 1 0\n" + "\n" * 998 + "dog 0 1\n", encoding="utf-8")
    assert Vectors(at).words == ["cat", "dog"]
    over = tmp_path / "over.txt"
    over.write_text("cat 1 0\n" + "\n" * 999 + "dog 0 1\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"over.txt has more than 1,000 lines, the limit for a GloVe-format"
    ):
        Vectors(over)


def test_a_vectors_file_of_short_lines_costs_little_memory_per_line(tmp_path: Path) -> None:
    """A line's vector is parsed into float32 rows in chunks, not kept as an array object of its own
    (about 360 bytes a line of 'ab 1' before, with the words; about 110 now)."""
    lines = 100_000
    f = tmp_path / "short.txt"
    f.write_text("ab 1\n" * lines, encoding="utf-8")
    tracemalloc.start()
    try:
        vectors = Vectors(f)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(vectors.words) == lines and vectors.matrix.shape == (lines, 1)
    assert peak < 200 * lines


def test_a_bad_value_is_named_by_its_line_in_any_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(neighbours, "_CHUNK_VALUES", 4)
    for bad, message in (("x", "is not 'word v1 v2 ...'"), ("nan", "holds a value that is not a finite")):
        f = tmp_path / "chunks.txt"
        f.write_text("".join(f"w{i} 1 {bad if i == 6 else 0}\n" for i in range(9)), encoding="utf-8")
        with pytest.raises(ConfigError, match=rf"chunks.txt:7 {re.escape(message)}"):
            Vectors(f)
    f.write_text("".join(f"w{i} {i} 0\n" for i in range(9)), encoding="utf-8")
    assert Vectors(f).matrix[:, 0].tolist() == list(range(9))


def test_vectors_neighbours_widen_from_the_cache(vectors: Vectors) -> None:
    """n grows one step at a time as a search widens; every n gives the nearest n, in order."""
    assert [vectors.neighbours("cat", n) for n in (1, 2, 3, 4)] == [
        ["kitten"],
        ["kitten", "sat"],
        ["kitten", "sat", "dog"],
        ["kitten", "sat", "dog"],
    ]


TEXT = """Return the largest element of the list `lst` as "max" or 'none' with 3 items.
    my_list and camelCase stay; None too.
    >>> max_element([1, 2, 3])
    3
    For example: max_element([5]) == 5
"""


def test_protected_tokens_are_never_replaced() -> None:
    """Any word, stop-words included (the paper's Table 2 replaces "a", "to", "with"); never code,
    numbers, quoted strings, examples, None."""
    words = [w for _, w in replaceable_words(TEXT, protect=("largest",))]
    assert words == [
        *("Return", "the", "element", "of", "the", "list", "as", "or", "with", "items"),
        *("and", "stay", "too"),
    ]
    # cctest's earlier rule, still there to repeat earlier runs
    words = [w for _, w in replaceable_words(TEXT, protect=("largest",), protect_stop_words=True)]
    assert words == ["Return", "element", "list", "items", "stay", "too"]


def test_the_papers_example_sentence_is_replaceable_word_by_word() -> None:
    """Every word of the paper's example (Table 1) may be replaced, stop-words included, and
    Table 2's third-order paraphrase is among those made."""
    text = "Write a Java program to replace a specified character with another character."
    words = [w for _, w in replaceable_words(text)]
    assert words == [
        *("Write", "a", "Java", "program", "to", "replace", "a", "specified", "character", "with"),
        *("another", "character"),
    ]
    table1 = Synonyms(
        {"a": ["another", "an"], "to": ["take", "would"], "specified": ["applicable", "parameter"]}
    )
    texts = {p.text for p in paraphrases(text, table1, n=2, k=3)}
    assert "Write an Java program would replace a parameter character with another character." in texts


def test_formulas_one_letter_names_and_hyphenated_pieces_stay() -> None:
    """A stop-word may be replaced, but not the 'a' of a formula, a one-letter name, or i-th's i."""
    text = "Solve a*x + b = 0 and a - b = 1 for a non-zero x, the i-th value of a list."
    words = [w for _, w in replaceable_words(text)]
    assert words == ["Solve", "and", "for", "a", "non", "zero", "the", "value", "of", "a", "list"]


def test_an_overlong_word_is_not_replaced() -> None:
    """No English word has more than 50 letters: a longer run of letters is not looked up."""
    text = f"Return {'q' * 50} or {'z' * 51} now."
    assert [w for _, w in replaceable_words(text)] == ["Return", "q" * 50, "or", "now"]


LONG = " ".join(["Count", "every", "large", "number", "given", "here"] * 50) + "."
MANY = Synonyms(
    {w: [f"{w}{i}" for i in "abcde"] for w in ("count", "every", "large", "number", "given", "here")}
)


def test_paraphrases_stop_at_the_limit() -> None:
    """300 replaceable words with 5 neighbours each make 1,500 order-1 paraphrases: with a limit,
    order 1 is a seeded sample in text order and the higher orders still get their share."""
    assert len(paraphrases(LONG, MANY, n=5, k=1)) == 1500
    made = paraphrases(LONG, MANY, n=5, k=3, per_order=10, limit=100)
    assert len(made) == 100 and len({p.text for p in made}) == 100
    assert [sum(p.order == o for p in made) for o in (1, 2, 3)] == [80, 10, 10]
    firsts = [p.replaced[0][2] for p in made if p.order == 1]
    assert firsts == sorted(firsts) and firsts[-1] > len(LONG) // 2  # spread over the text
    assert made == paraphrases(LONG, MANY, n=5, k=3, per_order=10, limit=100)
    assert paraphrases(LONG, MANY, n=5, k=3, per_order=10, limit=100, seed=1) != made
    # a limit the complete set fits in changes nothing
    short = "Count every large number given here."
    whole = paraphrases(short, MANY, n=5, k=2, per_order=50)
    assert len(whole) == 30 + 50 and paraphrases(short, MANY, n=5, k=2, per_order=50, limit=1000) == whole


def test_every_kth_order_mutant_by_default() -> None:
    """The paper's generator: all first-order mutants, then all second-order ones, ... (6 words
    with 5 neighbours: 30 + 15 * 25 + 20 * 125 = 2,905 up to order 3), none sampled."""
    short = "Count every large number given here."
    made = generate(short, MANY, n=5, k=3)
    assert made.total == 2905 and not made.sampled and len(made.paraphrases) == 2905
    assert [sum(p.order == o for p in made.paraphrases) for o in (1, 2, 3)] == [30, 375, 2500]
    assert [p.order for p in made.paraphrases] == sorted(p.order for p in made.paraphrases)
    assert made.paraphrases[0].replaced == (("Count", "counta", 0),)
    assert generate(short, MANY, n=5, k=3, limit=2905) == made  # a limit it fits in changes nothing


def test_sampling_only_past_the_limit_and_said() -> None:
    """Past the limit, orders are whole from 1 up while they fit, the first that does not a seeded
    sample filling the rest; ``sampled`` says so. cctest's earlier per_order draw says so too."""
    short = "Count every large number given here."
    made = generate(short, MANY, n=5, k=3, limit=1000)
    assert made.sampled and made.total == 2905 and len(made.paraphrases) == 1000
    assert [sum(p.order == o for p in made.paraphrases) for o in (1, 2, 3)] == [30, 375, 595]
    assert made == generate(short, MANY, n=5, k=3, limit=1000)
    assert generate(short, MANY, n=5, k=3, limit=1000, seed=1) != made
    assert len(generate(LONG, MANY, n=5, k=3, limit=1000).paraphrases) == 1000  # order 1 sampled
    assert generate(short, MANY, n=5, k=3, per_order=50).sampled
    assert not generate(short, MANY, n=5, k=1, per_order=50).sampled


def test_paraphrase_orders_and_replacements() -> None:
    source = Synonyms({"return": ["give back", "yield"], "element": ["item"], "list": ["listing", "array"]})
    one = paraphrases(TEXT, source, n=1, k=1)
    assert [p.replaced for p in one] == [
        (("Return", "give back", 0),),
        (("element", "item", 19),),
        (("list", "listing", 34),),
    ]
    assert one[0].text.startswith("Give back the largest element of the list `lst`")
    both = paraphrases(TEXT, source, n=2, k=3, per_order=10)
    assert {p.order for p in both} == {1, 2, 3}
    assert sum(p.order == 1 for p in both) == 5  # every word times each of its neighbours
    assert sum(p.order == 3 for p in both) == 4  # 2 * 1 * 2 distinct ones exist
    for p in both:
        assert "`lst`" in p.text and '"max"' in p.text and ">>> max_element([1, 2, 3])" in p.text
        assert len({r[2] for r in p.replaced}) == p.order
    assert len({p.text for p in both}) == len(both) and TEXT not in {p.text for p in both}


def test_paraphrases_are_deterministic_with_a_seed(wn: WordNet) -> None:
    text = (
        "Check if in the given list of numbers, any two numbers are closer to each other than the threshold."
    )
    a = paraphrases(text, wn, n=4, k=4, seed=3, per_order=8)
    b = paraphrases(text, wn, n=4, k=4, seed=3, per_order=8)
    c = paraphrases(text, wn, n=4, k=4, seed=4, per_order=8)
    assert a == b
    assert [p.text for p in a if p.order > 1] != [p.text for p in c if p.order > 1]
    assert [p.text for p in a if p.order == 1] == [p.text for p in c if p.order == 1]


def test_levenshtein_distances() -> None:
    assert d.lev_char("kitten", "sitting") == 3
    assert d.lev_word("the cat sat", "the dog sat down") == 2
    assert d.lev_word("Same words.", "same words .") == 0


def test_bleu_and_chrf() -> None:
    # matches 5/6, 3/5, 2/4, 1/3 of the 1..4-grams; equal lengths: no brevity penalty
    expected = 1 - (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert d.bleu("the cat sat on the mat", "the cat sat on a mat") == pytest.approx(expected, abs=1e-4)
    assert d.bleu("the cat sat on the mat", "the cat sat on the mat") == pytest.approx(0)
    assert d.chrf("abcdef", "abcdef") == pytest.approx(0)
    assert d.chrf("abc", "xyz") == pytest.approx(1)


def test_rouge() -> None:
    assert d.rouge_n("the cat sat", "the cat ran") == pytest.approx(0.5)  # 1 of 2 bigrams
    assert d.rouge_l("a b c d", "a c d e") == pytest.approx(0.25)  # LCS 3 of 4
    assert d.rouge_l("a b", "c d") == 1


def test_meteor_with_debian_wordnet(wn: WordNet) -> None:
    dist = Distances()
    # identical: P = R = 1, one chunk of 3 matches: penalty 0.5 * (1/3)^3
    assert dist.meteor("the cat sat", "the cat sat") == pytest.approx(0.5 / 27, abs=1e-6)
    # "auto" matches "car" through WordNet: still all matched, one chunk
    assert dist.meteor("a fast car", "a fast auto") == pytest.approx(0.5 / 27, abs=1e-6)
    assert dist.meteor("a large house", "a tiny house") > 0.3


def test_vector_distances(vectors: Vectors) -> None:
    dist = Distances(vectors=vectors)
    assert "cosine" in dist.metrics and "euclidean" in dist.metrics
    # means: (1, 0.5) and (0.5, 1)
    assert dist.euclidean("cat sat", "dog sat") == pytest.approx(math.sqrt(0.5))
    assert dist.cosine("cat sat", "dog sat") == pytest.approx(1 - 1.0 / 1.25)
    assert dist.cosine("cat", "cat") == pytest.approx(0)


def test_metric_needs() -> None:
    dist = Distances()
    assert "cosine" not in dist.metrics and "cross_encoder" not in dist.metrics
    with pytest.raises(ConfigError, match="needs --vectors FILE"):
        dist.check("cosine")
    with pytest.raises(ConfigError, match="unknown distance 'bert'"):
        dist.check("bert")
    got = dist.measure("the cat sat", "the dog sat")
    assert set(got) == set(d.TEXT_METRICS) and all(v > 0 for v in got.values())


def test_cross_encoder_from_a_local_directory(tmp_path: Path) -> None:
    """A cross-encoder with random weights (a tiny BERT from a config, no download): the distance
    is 1 - sigmoid of the model's logit for the pair, the pair read as one input."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    vocab = tmp_path / "vocab.txt"
    vocab.write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog"]) + "\n"
    )
    model_dir = tmp_path / "ce"
    BertTokenizer(str(vocab)).save_pretrained(model_dir)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=9,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=1,
    )
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(model_dir)
    dist = Distances(cross_encoder=model_dir)
    assert "cross_encoder" in dist.metrics
    tok = BertTokenizer.from_pretrained(model_dir)
    with torch.no_grad():
        logit = model(**tok(["the cat sat"], ["the dog sat"], return_tensors="pt")).logits[0, 0]
    assert dist.cross_encoder("the cat sat", "the dog sat") == pytest.approx(
        1 - float(torch.sigmoid(logit)), abs=1e-5
    )
    with pytest.raises(ConfigError, match="cannot load the cross-encoder"):
        Distances(cross_encoder=tmp_path / "missing").cross_encoder("a", "b")
