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
