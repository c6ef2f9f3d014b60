"""Figure: the cost of measuring one paraphrase of a long description, rouge-score's ROUGE-L table
against cctest's ROUGE-L, and every text metric together.

A description of ``--words`` words (default 1,000, the cap of ``cctest bench operational``) drawn
from a fixed vocabulary, and ``--paraphrases`` copies of it with a few words replaced (as ReplaceWord
makes them). In one run, side by side on the same pairs:

1. rouge-score's ``RougeScorer(["rouge2", "rougeL"]).score`` per pair (its ROUGE-L fills a
   len(a) x len(b) table in Python), as cctest measured ROUGE-2 and ROUGE-L before, once for each;
2. cctest's ``rouge_n`` and ``rouge_l`` (the same figures: rouge-score's tokens and F1, the
   longest common subsequence by rapidfuzz);
3. every text metric of ``Distances().measure`` (what a search pays per paraphrase).

Prints milliseconds per paraphrase for each and the ratio of 1 to 2; asserts the figures agree.

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

from cctest.paraphrase.distance import Distances, rouge_l, rouge_n  # noqa: E402

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
    distances = Distances()
    distances.measure(*pairs[0])  # METEOR's WordNet loads on first use: not in the figure
    start = time.perf_counter()
    for a, b in pairs:
        distances.measure(a, b)
    every = (time.perf_counter() - start) / len(pairs)
    print(f"{args.words} words, {len(pairs)} paraphrases")
    print(f"rouge-score ROUGE-2 + ROUGE-L (twice)   {before * 1000:9.1f} ms per paraphrase")
    ratio = f"({before / after:.0f}x)"
    print(f"cctest rouge_n + rouge_l                {after * 1000:9.1f} ms per paraphrase {ratio}")
    print(f"every text metric (Distances.measure)   {every * 1000:9.1f} ms per paraphrase")


if __name__ == "__main__":
    main()
