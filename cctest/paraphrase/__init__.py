"""ReplaceWord paraphrases of task descriptions and the distances between texts.

``neighbours``: where a word's neighbours come from (WordNet from Debian's data, or a GloVe-format
vectors file); ``replace``: paraphrases of orders 1..k that leave code, numbers, quoted strings and
examples alone; ``distance``: the metrics (Levenshtein, BLEU, chrF, ROUGE, METEOR, vectors, a
cross-encoder), each oriented so that larger means farther.
"""

from .distance import DEFAULT_METRIC, METRICS, Distances
from .neighbours import NeighbourSource, Synonyms, Vectors, WordNet, neighbour_source
from .replace import Generated, Paraphrase, generate, paraphrases, replaceable_words

__all__ = [
    "DEFAULT_METRIC",
    "METRICS",
    "Distances",
    "Generated",
    "NeighbourSource",
    "Paraphrase",
    "Synonyms",
    "Vectors",
    "WordNet",
    "generate",
    "neighbour_source",
    "paraphrases",
    "replaceable_words",
]
