"""Figure: the cost of measuring one paraphrase of a long description, rouge-score's ROUGE-L table
against cctest's ROUGE-L, sacrebleu's BLEU and chrF against cctest's, and every text metric
together.

A description of ``--words`` words (default 1,000, the cap of ``cctest bench operational``) drawn
from a fixed vocabulary, and ``--paraphrases`` copies of it with a few words replaced (as ReplaceWord
makes them). In one run, side by side on the same pairs:

1. rouge-score's ``RougeScorer(["rouge2", "rougeL"]).score`` per pair (its ROUGE-L fills a
   len(a) x len(b) table in Python), as cctest measured ROUGE-2 and ROUGE-L before, once for each;
2. cctest's ``rouge_n`` and ``rouge_l`` (the same figures: rouge-score's tokens and F1, the
   longest common subsequence by rapidfuzz);
3. sacrebleu's ``corpus_bleu`` and ``sentence_chrf`` per pair (every n-gram of the paraphrase
   counted, as cctest measured BLEU and chrF before);
4. cctest's ``bleu`` and ``chrf`` (the same figures: only the n-grams that touch a replaced word
   counted, sacrebleu's score of them);
5. every text metric of ``Distances().measure`` (what a search pays per paraphrase: a search
   measures each of its up to 1,000 paraphrases by every metric, for the distinguishability
   measures), with sacrebleu's BLEU and chrF in it and with cctest's.

Prints milliseconds per paraphrase for each and the ratios of 1 to 2 and 3 to 4; asserts the
figures agree.

    .venv/bin/python benchmarks/paraphrase_metrics.py
    .venv/bin/python benchmarks/paraphrase_metrics.py --words 300 --paraphrases 20
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cctest.paraphrase.distance import Distances, bleu, chrf, rouge_l, rouge_n  # noqa: E402

VOCAB = (
    "return the largest number in a given list of integers when the list is empty return none write "
    "a function that checks whether each string contains only lower case letters and count them sort "
    "the values in increasing order and give back the first element found"
).split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--words", type=int, default=1000)
    ap.add_argument("--paraphrases", type=int, default=10)
    args = ap.parse_args()
    rng = random.Random(0)
    words = [rng.choice(VOCAB) for _ in range(args.words)]
    original = " ".join(words)
    pairs = []
    for _ in range(args.paraphrases):
        changed = list(words)
        for i in rng.sample(range(len(words)), 3):
            changed[i] = rng.choice(VOCAB)
        pairs.append((original, " ".join(changed)))

    from rouge_score import rouge_scorer  # type: ignore[import-untyped]

    scorer = rouge_scorer.RougeScorer(["rouge2", "rougeL"])
    start = time.perf_counter()
    theirs = []
    for a, b in pairs:  # rouge_n and rouge_l each called the scorer
        theirs.append((1 - scorer.score(a, b)["rouge2"].fmeasure, 1 - scorer.score(a, b)["rougeL"].fmeasure))
    before = (time.perf_counter() - start) / len(pairs)
    start = time.perf_counter()
    ours = [(rouge_n(a, b), rouge_l(a, b)) for a, b in pairs]
    after = (time.perf_counter() - start) / len(pairs)
    assert ours == theirs, "cctest's ROUGE differs from rouge-score's"
    import sacrebleu

    start = time.perf_counter()
    theirs_bleu = [
        (1 - sacrebleu.corpus_bleu([b], [[a]]).score / 100, 1 - sacrebleu.sentence_chrf(b, [a]).score / 100)
        for a, b in pairs
    ]
    library = (time.perf_counter() - start) / len(pairs)
    bleu(*pairs[0]), chrf(*pairs[0])  # the original's side, counted once per task
    start = time.perf_counter()
    ours_bleu = [(bleu(a, b), chrf(a, b)) for a, b in pairs]
    counted = (time.perf_counter() - start) / len(pairs)
    assert ours_bleu == theirs_bleu, "cctest's BLEU or chrF differs from sacrebleu's"
    distances = Distances()
    distances.measure(*pairs[0])  # METEOR's WordNet loads on first use: not in the figure
    start = time.perf_counter()
    for a, b in pairs:
        distances.measure(a, b)
    every = (time.perf_counter() - start) / len(pairs)
    # the same, BLEU and chrF counted by sacrebleu on every n-gram (as every paraphrase was measured before)
    from cctest.paraphrase import distance

    kept = distance.bleu, distance.chrf
    distance.bleu = lambda a, b: 1 - sacrebleu.corpus_bleu([b], [[a]]).score / 100  # type: ignore[assignment]
    distance.chrf = lambda a, b: 1 - sacrebleu.sentence_chrf(b, [a]).score / 100  # type: ignore[assignment]
    start = time.perf_counter()
    for a, b in pairs:
        distances.measure(a, b)
    every_before = (time.perf_counter() - start) / len(pairs)
    distance.bleu, distance.chrf = kept
    print(f"{args.words} words, {len(pairs)} paraphrases")
    print(f"rouge-score ROUGE-2 + ROUGE-L (twice)   {before * 1000:9.1f} ms per paraphrase")
    ratio = f"({before / after:.0f}x)"
    print(f"cctest rouge_n + rouge_l                {after * 1000:9.1f} ms per paraphrase {ratio}")
    ratio = f"({library / counted:.0f}x)"
    print(f"sacrebleu BLEU + chrF                   {library * 1000:9.1f} ms per paraphrase")
    print(f"cctest bleu + chrf                      {counted * 1000:9.1f} ms per paraphrase {ratio}")
    print(f"every text metric, sacrebleu's BLEU/chrF {every_before * 1000:8.1f} ms per paraphrase")
    ratio = f"({every_before / every:.1f}x)"
    print(f"every text metric (Distances.measure)   {every * 1000:9.1f} ms per paraphrase {ratio}")


if __name__ == "__main__":
    main()
