"""Distances between a description and its paraphrase; every one oriented so larger is farther.

=================  ===================================================================
``lev_char``       Levenshtein distance on characters (rapidfuzz)
``lev_word``       Levenshtein distance on words (rapidfuzz over word lists); the default
``bleu``           1 - sacrebleu's ``corpus_bleu`` (n = 4) / 100, as the paper's Table 3
``chrf``           1 - sacrebleu's ``sentence_chrf`` / 100
``rouge_n``        1 - ROUGE-2 F1 as rouge-score's ``RougeScorer`` (its own tokeniser)
``rouge_l``        1 - ROUGE-L F1 as rouge-score's ``RougeScorer`` (the LCS by rapidfuzz)
``meteor``         1 - NLTK's METEOR, with WordNet from the same data as the neighbours
``euclidean``      Euclidean distance of the mean word vectors (needs a ``Vectors`` source)
``cosine``         1 - cosine similarity of the mean word vectors (needs a ``Vectors`` source)
``cross_encoder``  1 - a cross-encoder's similarity (needs a local model directory)
=================  ===================================================================

``Distances(vectors=..., cross_encoder=...)`` holds what the metrics need; ``metrics`` lists those
available, and ``measure(original, paraphrase)`` returns all of them at once.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError

_WORDS = re.compile(r"\w+|[^\w\s]")
DEFAULT_METRIC = "lev_word"
TEXT_METRICS = ("lev_char", "lev_word", "bleu", "chrf", "rouge_n", "rouge_l", "meteor")
VECTOR_METRICS = ("euclidean", "cosine")
METRICS = (*TEXT_METRICS, *VECTOR_METRICS, "cross_encoder")


def words(text: str) -> list[str]:
    """Lower-case word and punctuation tokens."""
    return _WORDS.findall(text.lower())


def lev_char(a: str, b: str) -> float:
    from rapidfuzz.distance import Levenshtein

    return float(Levenshtein.distance(a, b))


def lev_word(a: str, b: str) -> float:
    from rapidfuzz.distance import Levenshtein

    return float(Levenshtein.distance(words(a), words(b)))


# The original description recurs in every pair of a task's search: the reference side of each
# library metric (sacrebleu's tokenised reference and its n-grams, rouge-score's tokens) is kept for
# the last few originals, so each paraphrase pays only for its own side.
_REFERENCES_KEPT = 8


@functools.lru_cache(maxsize=_REFERENCES_KEPT)
def _bleu_of(reference: str) -> Any:
    """sacrebleu's BLEU with ``reference`` cached, its arguments those of ``corpus_bleu``."""
    from sacrebleu.metrics import BLEU

    return BLEU(references=[[reference]])


@functools.lru_cache(maxsize=_REFERENCES_KEPT)
def _chrf_of(reference: str) -> Any:
    """sacrebleu's chrF with ``reference`` cached, its arguments those of ``sentence_chrf``."""
    from sacrebleu.metrics import CHRF

    return CHRF(references=[[reference]])


def bleu(a: str, b: str) -> float:
    """1 - BLEU / 100 of ``b`` against the reference ``a``: sacrebleu's ``corpus_bleu`` (n = 4, its
    13a tokeniser), as the paper computes it (not ``sentence_bleu``, whose effective order differs)."""
    return 1.0 - _bleu_of(a).corpus_score([b], None).score / 100.0


def chrf(a: str, b: str) -> float:
    """1 - sacrebleu's ``sentence_chrf`` / 100 (one sentence scored against its cached reference)."""
    return 1.0 - _chrf_of(a).corpus_score([b], None).score / 100.0


class _RougeTokens:
    """rouge-score's default tokeniser (no stemmer), remembering the texts it last tokenised and
    their bigrams."""

    def __init__(self) -> None:
        from rouge_score import tokenizers  # type: ignore[import-untyped,unused-ignore]

        self._tokenizer = tokenizers.DefaultTokenizer(use_stemmer=False)
        self.tokens = functools.lru_cache(maxsize=_REFERENCES_KEPT)(self._tokenize)
        self.bigrams = functools.lru_cache(maxsize=_REFERENCES_KEPT)(self._bigrams)

    def _tokenize(self, text: str) -> tuple[str, ...]:
        return tuple(self._tokenizer.tokenize(text))

    def _bigrams(self, text: str) -> Counter[tuple[str, str]]:
        tokens = self.tokens(text)
        return Counter(zip(tokens, tokens[1:], strict=False))


@functools.cache
def _rouge() -> _RougeTokens:
    return _RougeTokens()


def _fmeasure(precision: float, recall: float) -> float:
    from rouge_score import scoring  # type: ignore[import-untyped,unused-ignore]

    return float(scoring.fmeasure(precision, recall))


def rouge_n(a: str, b: str) -> float:
    """1 - ROUGE-2 F1 as rouge-score's ``RougeScorer`` computes it (its tokens, its counts of
    bigrams, its F1) with ``a`` the target and ``b`` the prediction."""
    rouge = _rouge()
    target, prediction = rouge.bigrams(a), rouge.bigrams(b)
    overlap = sum(min(count, prediction[gram]) for gram, count in target.items())
    precision = overlap / max(sum(prediction.values()), 1)
    recall = overlap / max(sum(target.values()), 1)
    return 1.0 - _fmeasure(precision, recall)


def rouge_l(a: str, b: str) -> float:
    """1 - ROUGE-L F1 as rouge-score's ``RougeScorer`` computes it (its tokens, its F1) with ``a``
    the target: the longest common subsequence of the tokens by rapidfuzz's bit-parallel ``LCSseq``
    (about len(a) x len(b) / 64 word operations) instead of rouge-score's table in Python (len(a) x
    len(b) cells, seconds for a pair of 1,000-word texts); the same length, so the same figure."""
    from rapidfuzz.distance import LCSseq

    target, prediction = _rouge().tokens(a), _rouge().tokens(b)
    if not target or not prediction:
        return 1.0  # rouge-score's F1 is 0 when a side has no token
    lcs = LCSseq.similarity(target, prediction)
    return 1.0 - _fmeasure(lcs / len(prediction), lcs / len(target))


class Distances:
    """The metrics available with the given resources, measured together."""

    def __init__(self, vectors: Any = None, cross_encoder: str | Path | None = None) -> None:
        self.vectors = vectors if vectors is not None and hasattr(vectors, "vector") else None
        self._encoder_dir = Path(cross_encoder).expanduser() if cross_encoder else None
        self._encoder: Any = None
        self._wordnet: Any = None
        self._sentence: dict[str, np.ndarray | None] = {}

    @property
    def metrics(self) -> tuple[str, ...]:
        out = list(TEXT_METRICS)
        if self.vectors is not None:
            out += VECTOR_METRICS
        if self._encoder_dir is not None:
            out.append("cross_encoder")
        return tuple(out)

    def check(self, metric: str) -> None:
        if metric not in METRICS:
            raise ConfigError(f"unknown distance '{metric}'; the distances are {', '.join(METRICS)}.")
        if metric not in self.metrics:
            need = "--cross-encoder MODEL_DIR" if metric == "cross_encoder" else "--vectors FILE"
            raise ConfigError(f"the distance '{metric}' needs {need}.")

    def meteor(self, a: str, b: str) -> float:
        from nltk.translate.meteor_score import meteor_score

        from .neighbours import wordnet

        if self._wordnet is None:
            self._wordnet = wordnet()
        return 1.0 - float(meteor_score([words(a)], words(b), wordnet=self._wordnet))

    def _mean(self, text: str) -> np.ndarray | None:
        if text not in self._sentence:
            assert self.vectors is not None
            vs = [v for w in words(text) if (v := self.vectors.vector(w)) is not None]
            self._sentence[text] = np.mean(vs, axis=0) if vs else None
        return self._sentence[text]

    def euclidean(self, a: str, b: str) -> float:
        va, vb = self._mean(a), self._mean(b)
        if va is None or vb is None:
            return float("nan")
        return float(np.linalg.norm(va - vb))

    def cosine(self, a: str, b: str) -> float:
        va, vb = self._mean(a), self._mean(b)
        if va is None or vb is None:
            return float("nan")
        denom = float(np.linalg.norm(va) * np.linalg.norm(vb))
        return 1.0 - (float(va @ vb) / denom if denom else 0.0)

    def cross_encoder(self, a: str, b: str) -> float:
        return 1.0 - self.similarities([(a, b)])[0]

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The cross-encoder's similarity (sigmoid of its single logit) of each pair."""
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if self._encoder is None:
            assert self._encoder_dir is not None
            try:
                tok = AutoTokenizer.from_pretrained(self._encoder_dir, local_files_only=True)
                model = AutoModelForSequenceClassification.from_pretrained(
                    self._encoder_dir, local_files_only=True
                )
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot load the cross-encoder in {self._encoder_dir} ({exc}).") from None
            self._encoder = (tok, model.eval())
        tok, model = self._encoder
        with torch.no_grad():
            batch = tok(
                [p[0] for p in pairs],
                [p[1] for p in pairs],
                padding=True,
                truncation=True,
                return_tensors="pt",
            )
            logits = model(**batch).logits
        return [float(x) for x in torch.sigmoid(logits[:, 0])]

    def function(self, metric: str) -> Callable[[str, str], float]:
        self.check(metric)
        plain: dict[str, Callable[[str, str], float]] = {
            "lev_char": lev_char,
            "lev_word": lev_word,
            "bleu": bleu,
            "chrf": chrf,
            "rouge_n": rouge_n,
            "rouge_l": rouge_l,
        }
        return plain.get(metric) or getattr(self, metric)

    def measure(
        self, original: str, paraphrase: str, metrics: Sequence[str] | None = None
    ) -> dict[str, float]:
        """Every available metric (or ``metrics``) between ``original`` and ``paraphrase``."""
        return {m: self.function(m)(original, paraphrase) for m in (metrics or self.metrics)}
