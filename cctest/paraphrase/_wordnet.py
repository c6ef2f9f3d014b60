"""NLTK's WordNet reader for Debian's data (imported only when WordNet is used: NLTK is large)."""

from __future__ import annotations

from nltk.corpus.reader.wordnet import WordNetCorpusReader


class DebianWordNet(WordNetCorpusReader):  # type: ignore[misc]
    """The reader without the map to WordNet 3.0, which needs ``index.sense`` (not in
    ``wordnet-base``) and serves only multilingual data, never used here."""

    def map_wn(self, version: str = "wordnet") -> None:
        return None
