"""BLEU and ROUGE agree with the reference implementations the paper names (its Table 3).

BLEU is sacrebleu's ``corpus_bleu`` (n = 4), ROUGE-N (ROUGE-2) and ROUGE-L rouge-score's
``RougeScorer`` F1, each with its own tokeniser: punctuation, case, contractions and code in the
text are tokenised as the libraries do, so the figures agree to 1e-9.
"""

from __future__ import annotations

import random

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from cctest.paraphrase import distance as d

PAIRS = [
    ("the cat sat on the mat", "the cat sat on a mat"),
    ("Return the sum of a and b.", "Return the total of a and b."),
    (
        "Write a function that returns the list's largest element, or None.",
        "Write a function which gives back the list's biggest element, or None.",
    ),
    (
        "Check if in given list of numbers, are any two numbers closer to each other than given threshold.",
        "Check whether in given list of numbers, are any two numbers nearer to each "
        "other than the given threshold.",
    ),
    ("Don't round(x, 2)!", "Do not round(x, 2) !"),
    ("a b", "c d"),
    ("short", "short"),
    (
        "Find the solutions for 'x' in the equation a*x + b = 0.",
        "Find the answers for 'x' in the equation a*x + b = 0.",
    ),
    ("Übersetze den Text: café, naïve.", "Übersetze den Text: cafe, naive."),
    ("", "something"),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_bleu_is_sacrebleus_corpus_bleu(a: str, b: str) -> None:
    assert d.bleu(a, b) == pytest.approx(1 - sacrebleu.corpus_bleu([b], [[a]]).score / 100, abs=1e-9)


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_rouge_is_rouge_scores(a: str, b: str) -> None:
    scores = rouge_scorer.RougeScorer(["rouge2", "rougeL"]).score(a, b)
    assert d.rouge_n(a, b) == pytest.approx(1 - scores["rouge2"].fmeasure, abs=1e-9)
    assert d.rouge_l(a, b) == pytest.approx(1 - scores["rougeL"].fmeasure, abs=1e-9)


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_chrf_is_sacrebleus_sentence_chrf(a: str, b: str) -> None:
    assert d.chrf(a, b) == pytest.approx(1 - sacrebleu.sentence_chrf(b, [a]).score / 100, abs=1e-9)


def _random_pairs(count: int, longest: int) -> list[tuple[str, str]]:
    rng = random.Random(7)
    vocab = "the of a to and sort list return given each value first Don't x, 2)! café naïve 3.5 None".split()
    pairs = []
    for _ in range(count):
        a = [rng.choice(vocab) for _ in range(rng.randint(0, longest))]
        b = [w if rng.random() < 0.9 else rng.choice(vocab) for w in a]  # a paraphrase of it...
        if rng.random() < 0.3:
            b = [rng.choice(vocab) for _ in range(rng.randint(0, longest))]  # ...or another text
        pairs.append((" ".join(a), " ".join(b)))
    return pairs


def test_the_metrics_equal_the_libraries_on_many_pairs_the_original_repeated() -> None:
    # the reference side is kept per original: pairs that share an original, long ones among them,
    # in the order a search measures them, give the libraries' figures exactly
    scorer = rouge_scorer.RougeScorer(["rouge2", "rougeL"])
    pairs = _random_pairs(60, 40) + _random_pairs(4, 1000)
    pairs += [(a, b2) for a, _ in pairs[:5] for _, b2 in pairs[5:15]]
    for a, b in pairs:
        scores = scorer.score(a, b)
        assert d.rouge_l(a, b) == 1 - scores["rougeL"].fmeasure, (a, b)
        assert d.rouge_n(a, b) == 1 - scores["rouge2"].fmeasure, (a, b)
        assert d.bleu(a, b) == 1 - sacrebleu.corpus_bleu([b], [[a]]).score / 100, (a, b)
        assert d.chrf(a, b) == 1 - sacrebleu.sentence_chrf(b, [a]).score / 100, (a, b)


def test_rouge_l_of_descriptions_at_the_cap_is_not_rouge_scores_quadratic_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # rouge-score fills a table of len(a) x len(b) cells in Python (seconds for two 1,000-word
    # descriptions, per paraphrase); cctest's ROUGE-L takes the same longest common subsequence
    # from rapidfuzz, so that table is never built
    a, b = _random_pairs(4, 1000)[-1]
    expected = 1 - rouge_scorer.RougeScorer(["rougeL"]).score(a, b)["rougeL"].fmeasure

    def no_table(*args: object) -> None:
        raise AssertionError("rouge-score's LCS table was built")

    monkeypatch.setattr(rouge_scorer, "_lcs_table", no_table)
    assert d.rouge_l(a, b) == expected
    assert d.Distances().measure(a, b)["rouge_l"] == expected


def test_the_pairs_tell_the_tokenisers_apart() -> None:
    # the set holds pairs where a tokeniser of our own (punctuation as words, sentence BLEU's
    # effective order) would give another figure
    bleu_sentence = [1 - sacrebleu.sentence_bleu(b, [a]).score / 100 for a, b in PAIRS]
    assert any(abs(x - d.bleu(a, b)) > 1e-6 for x, (a, b) in zip(bleu_sentence, PAIRS, strict=True))


def _paraphrased(seed: int, words: int) -> tuple[str, list[str]]:
    """An original of ``words`` words (punctuation, numbers, line ends, a hyphen ending a line)
    and paraphrases of it with a few words replaced, by one word or two, as ReplaceWord makes
    them."""
    rng = random.Random(seed)
    vocab = 'the of a to sort list return given value first x, (y) 2.5 3-4 -1 a.b &amp; "q" it\'s'.split()
    text = [rng.choice(vocab) for _ in range(words)]
    seps = [rng.choice([" ", " ", " ", "\n", "  ", "\t"]) for _ in text]
    if words > 10:
        text[5], seps[5] = "well-", "\n"  # sacrebleu's 13a joins a hyphen at a line's end
    original = "".join(w + s for w, s in zip(text, seps, strict=True)).strip()
    out = []
    for _ in range(6):
        changed = list(text)
        for i in rng.sample(range(len(text)), min(3, len(text))):
            changed[i] = rng.choice([*vocab, "look for", "Übersetze", "café."])
        out.append("".join(w + s for w, s in zip(changed, seps, strict=True)).strip())
    return original, out


@pytest.mark.parametrize(("seed", "words"), [(1, 1000), (2, 200), (3, 12), (4, 3), (5, 1)])
def test_bleu_and_chrf_of_paraphrases_equal_sacrebleus(seed: int, words: int) -> None:
    # counted on the n-grams that differ from the original's, the statistics are sacrebleu's own
    original, paraphrases = _paraphrased(seed, words)
    for b in [*paraphrases, original, original.replace("\n", " "), "something else entirely"]:
        assert d.bleu(original, b) == 1 - sacrebleu.corpus_bleu([b], [[original]]).score / 100, b
        assert d.chrf(original, b) == 1 - sacrebleu.sentence_chrf(b, [original]).score / 100, b


def test_bleu_and_chrf_of_a_paraphrase_count_only_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    # sacrebleu counts every n-gram of the paraphrase (every character 1..6-gram for chrF: most of
    # a search's time on a 1,000-word description); cctest counts the original's once and, per
    # paraphrase, only those that touch a replaced word, and tokenises each word once
    from sacrebleu.metrics import bleu as bleu_module
    from sacrebleu.metrics import chrf as chrf_module

    original, paraphrases = _paraphrased(11, 1000)
    # a hyphen ending a line is tokenised with the whole text (13a joins the lines): not here
    original, paraphrases = original.replace("-\n", "- "), [b.replace("-\n", "- ") for b in paraphrases]
    expected = [
        (
            1 - sacrebleu.corpus_bleu([b], [[original]]).score / 100,
            1 - sacrebleu.sentence_chrf(b, [original]).score / 100,
        )
        for b in paraphrases
    ]
    d.bleu(original, original), d.chrf(original, original)  # the original's side, counted once

    def every_ngram(*args: object) -> None:
        raise AssertionError("every n-gram of the paraphrase was counted")

    monkeypatch.setattr(chrf_module, "extract_all_char_ngrams", every_ngram)
    monkeypatch.setattr(bleu_module, "extract_all_word_ngrams", every_ngram)
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tokenised: list[str] = []
    tokenize = Tokenizer13a.__call__

    def recording(self: Tokenizer13a, text: str) -> str:
        tokenised.append(text)
        return str(tokenize(self, text))

    monkeypatch.setattr(Tokenizer13a, "__call__", recording)
    assert [(d.bleu(original, b), d.chrf(original, b)) for b in paraphrases] == expected
    assert all(len(t.split()) == 1 for t in tokenised)  # word by word, never the whole paraphrase
