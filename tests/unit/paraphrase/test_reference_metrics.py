"""BLEU and ROUGE agree with the reference implementations the paper names (its Table 3).

BLEU is sacrebleu's ``corpus_bleu`` (n = 4), ROUGE-N (ROUGE-2) and ROUGE-L rouge-score's
``RougeScorer`` F1, each with its own tokeniser: punctuation, case, contractions and code in the
text are tokenised as the libraries do, so the figures agree to 1e-9.
"""

from __future__ import annotations

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


def test_the_pairs_tell_the_tokenisers_apart() -> None:
    # the set holds pairs where a tokeniser of our own (punctuation as words, sentence BLEU's
    # effective order) would give another figure
    bleu_sentence = [1 - sacrebleu.sentence_bleu(b, [a]).score / 100 for a, b in PAIRS]
    assert any(abs(x - d.bleu(a, b)) > 1e-6 for x, (a, b) in zip(bleu_sentence, PAIRS, strict=True))
