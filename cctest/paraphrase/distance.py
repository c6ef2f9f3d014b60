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
import itertools
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
    return list(_words(text))


@functools.lru_cache(maxsize=8)
def _words(text: str) -> tuple[str, ...]:
    """``words``, kept for the last few texts: the original recurs in every pair of a search, and
    a paraphrase is measured by two metrics on words."""
    return tuple(_WORDS.findall(text.lower()))


def lev_char(a: str, b: str) -> float:
    from rapidfuzz.distance import Levenshtein

    return float(Levenshtein.distance(a, b))


def lev_word(a: str, b: str) -> float:
    from rapidfuzz.distance import Levenshtein

    return float(Levenshtein.distance(_words(a), _words(b)))


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


@functools.lru_cache(maxsize=_REFERENCES_KEPT)
def _bleu_tokens(reference: str) -> tuple[str, ...]:
    """The reference's tokens as sacrebleu's BLEU splits them (its 13a tokeniser)."""
    return tuple(_bleu_of(reference)._preprocess_segment(reference).split())


@functools.lru_cache(maxsize=2**16)
def _word_tokens(tokenizer: Any, word: str) -> tuple[str, ...]:
    return tuple(tokenizer(word).split())


def _tokens_13a(metric: Any, text: str) -> tuple[str, ...]:
    """``text``'s tokens as ``metric`` (sacrebleu's BLEU) splits them. The 13a tokeniser's rules
    look at one character beside the one they split, and white space splits everywhere, so the
    tokens of a text are its white-space separated words' tokens one after another: each word is
    tokenised once. Its two rules that reach across white space (a hyphen at a line's end joins
    the lines; ``<skipped>`` is removed) send a text that has them to the whole-text tokeniser."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    whole = metric.lowercase or type(metric.tokenizer) is not Tokenizer13a
    if whole or "-\n" in text or "<skipped>" in text:
        return tuple(metric._preprocess_segment(text).split())
    tokens = map(functools.partial(_word_tokens, metric.tokenizer), text.split())
    return tuple(itertools.chain.from_iterable(tokens))


@functools.lru_cache(maxsize=_REFERENCES_KEPT)
def _chrf_units(reference: str) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
    """The reference as sacrebleu's chrF reads it (white space removed), its white-space
    separated words, and where each word starts in the first."""
    return _joined(reference)


def _joined(text: str) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
    parts = tuple(text.split())
    return "".join(parts), parts, (0, *itertools.accumulate(map(len, parts)))


# A paraphrase is its original with a few words replaced: its n-gram counts are the original's
# but for the n-grams that touch a replaced span. Counting only those (both sides' n-grams that
# overlap a span where the two differ, as rapidfuzz's opcodes align the words) gives each order's
# counts and matches exactly as counting every n-gram does, in time proportional to what changed.
# Past this share of the text changed, counting all of them is as quick.
_CHANGED_SHARE = 0.5


def _changed_starts(blocks: Sequence[tuple[int, int]], length: int, n: int) -> list[int]:
    """The start of every n-gram of a sequence of ``length`` units that overlaps one of
    ``blocks`` (a [start, end) span that differs, or an empty one where the other side has units
    inserted), in order, each once."""
    out: set[int] = set()
    for start, end in blocks:
        out.update(range(max(0, start - n + 1), min(end - 1, length - n) + 1))
    return sorted(out)


def _order_stats(
    a: Sequence[Any],
    b: Sequence[Any],
    blocks_a: Sequence[tuple[int, int]],
    blocks_b: Sequence[tuple[int, int]],
    n: int,
    gram: Callable[[Sequence[Any], int, int], Any],
) -> tuple[int, int, int]:
    """(the hypothesis ``b``'s n-grams, the reference ``a``'s, their matches: the sum over
    n-grams of the smaller count) for order ``n``, counting only the n-grams that differ."""
    delta: Counter[Any] = Counter(gram(b, s, n) for s in _changed_starts(blocks_b, len(b), n))
    delta.subtract(Counter(gram(a, s, n) for s in _changed_starts(blocks_a, len(a), n)))
    ref_total = max(len(a) - n + 1, 0)
    # an n-gram the hypothesis has d fewer of matches d fewer times; one it has more of, no more
    match = ref_total + sum(d for d in delta.values() if d < 0)
    return max(len(b) - n + 1, 0), ref_total, match


def _differing(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int, int]]:
    """The spans (a_start, a_end, b_start, b_end) where the word sequences differ."""
    from rapidfuzz.distance import Levenshtein

    return [
        (o.src_start, o.src_end, o.dest_start, o.dest_end)
        for o in Levenshtein.opcodes(a, b)
        if o.tag != "equal"
    ]


def _mostly_same(blocks: Sequence[tuple[int, int, int, int]], length_a: int, length_b: int) -> bool:
    changed = sum(max(a1 - a0, b1 - b0) for a0, a1, b0, b1 in blocks)
    return changed <= _CHANGED_SHARE * max(length_a, length_b, 1)


def _word_gram(units: Sequence[Any], start: int, n: int) -> tuple[Any, ...]:
    return tuple(units[start : start + n])


def _char_gram(units: Sequence[Any], start: int, n: int) -> Any:
    return units[start : start + n]


def bleu(a: str, b: str) -> float:
    """1 - BLEU / 100 of ``b`` against the reference ``a``: sacrebleu's ``corpus_bleu`` (n = 4, its
    13a tokeniser), as the paper computes it (not ``sentence_bleu``, whose effective order differs).
    Its statistics (each order's matched and total n-grams, the lengths) are counted on the n-grams
    that differ from the reference's, and the score is sacrebleu's ``compute_bleu`` of them."""
    metric = _bleu_of(a)
    ref = _bleu_tokens(a)
    hyp = _tokens_13a(metric, b)
    blocks = _differing(ref, hyp)
    if metric.lowercase or not _mostly_same(blocks, len(ref), len(hyp)):
        return 1.0 - metric.corpus_score([b], None).score / 100.0
    orders = [
        _order_stats(ref, hyp, [x[:2] for x in blocks], [x[2:] for x in blocks], n, _word_gram)
        for n in range(1, metric.max_ngram_order + 1)
    ]
    score = metric.compute_bleu(
        correct=[o[2] for o in orders],
        total=[o[0] for o in orders],
        sys_len=len(hyp),
        ref_len=len(ref),
        smooth_method=metric.smooth_method,
        smooth_value=metric.smooth_value,
        effective_order=metric.effective_order,
        max_ngram_order=metric.max_ngram_order,
    ).score
    return 1.0 - float(score) / 100.0


def chrf(a: str, b: str) -> float:
    """1 - sacrebleu's ``sentence_chrf`` / 100 (one sentence scored against its cached reference):
    each order's character n-gram counts and matches counted on the n-grams that differ from the
    reference's, the score sacrebleu's own F-score of them."""
    metric = _chrf_of(a)
    ref, ref_words, ref_at = _chrf_units(a)
    hyp, hyp_words, hyp_at = _joined(b)
    words = _differing(ref_words, hyp_words)
    if (
        metric.lowercase
        or metric.whitespace
        or metric.word_order
        or not _mostly_same(words, len(ref_words), len(hyp_words))
    ):
        return 1.0 - metric.corpus_score([b], None).score / 100.0
    blocks_a = [(ref_at[a0], ref_at[a1]) for a0, a1, _, _ in words]
    blocks_b = [(hyp_at[b0], hyp_at[b1]) for _, _, b0, b1 in words]
    stats: list[int] = []
    for n in range(1, metric.char_order + 1):
        hyp_count, ref_count, match = _order_stats(ref, hyp, blocks_a, blocks_b, n, _char_gram)
        # sacrebleu counts no hypothesis n-gram of an order the reference has none of
        stats += [hyp_count if ref_count else 0, ref_count, match]
    return 1.0 - float(metric._compute_f_score(stats)) / 100.0


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
        return 1.0 - float(meteor_score([_words(a)], _words(b), wordnet=self._wordnet))

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
