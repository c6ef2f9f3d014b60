"""Neighbour sources for ReplaceWord: a word's nearest neighbours, nearest first.

A source is anything with ``name`` and ``neighbours(word, n)`` (``NeighbourSource``); one that
also has word vectors offers ``vector(word)`` for the sentence-vector distances. Two come built in:

* ``WordNet``: synonyms from WordNet, read from Debian's ``wordnet-base`` data
  (``/usr/share/wordnet``) with NLTK's WordNet reader. Debian's data lacks the ``lexnames``
  file NLTK's reader opens, and NLTK reads corpora only from its data roots, so on first use the
  data is copied into cctest's own data directory with ``lexnames`` written from the standard list
  (the lexnames(5WN) manual page), and that directory is put on ``nltk.data.path``. Nothing is
  downloaded. Neighbours are the lemmas of the word's synsets in WordNet's order (most frequent
  sense first), the word itself left out.
* ``Synonyms``: a table given in code.
* ``Vectors``: a word-vectors text file in GloVe's format (``word v1 v2 ...`` per line); the
  neighbours of a word are the n words nearest to it in the vector space, by Euclidean distance
  (the paper's "n words nearest to w in the embedding vector space"), or, with ``by="cosine"``,
  of highest cosine similarity (cctest's earlier choice); ties in the file's order.
"""

from __future__ import annotations

import os
import shutil
import threading
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError
from ..userfile import read_user_lines

WORDNET_SOURCE = Path(os.environ.get("CCTEST_WORDNET_DIR", "/usr/share/wordnet"))
# lexnames(5WN): file number, lexicographer file, syntactic category (1 noun, 2 verb, 3 adj, 4 adv)
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather "
    "adj.ppl"
).split()
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
# a vectors file: GloVe's largest (840B words, 300 dimensions) is 5.6 GB; a line is one word's vector
MAX_VECTORS_BYTES = 8 * 1024**3
MAX_VECTORS_LINE_BYTES = 1024 * 1024
# lines in a vectors file (blank ones too): each word costs about 100 bytes and a few microseconds
# beyond its numbers however short its line, so the count bounds a file of short lines
MAX_VECTORS_LINES = 4_000_000
_CHUNK_VALUES = 1 << 18  # numbers parsed at a time
NEIGHBOURS_BY = ("euclidean", "cosine")  # how Vectors ranks a word's neighbours; the first is the default
_WORDNET_FILES = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb")


@runtime_checkable
class NeighbourSource(Protocol):
    """Where ReplaceWord finds a word's neighbours."""

    name: str

    def neighbours(self, word: str, n: int) -> list[str]:
        """At most ``n`` neighbours of ``word`` (lower case), nearest first; never ``word`` itself."""
        ...


def lexnames_text() -> str:
    """The ``lexnames`` file's content: the standard list of lexicographer files."""
    return "".join(f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))


def data_dir() -> Path:
    """cctest's own data directory (``CCTEST_DATA_DIR``, else the user's data directory)."""
    env = os.environ.get("CCTEST_DATA_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("cctest"))


def wordnet_root(source: Path | None = None) -> Path:
    """The NLTK data root holding ``corpora/wordnet`` (made from Debian's data on first use)."""
    source = source or WORDNET_SOURCE
    if not all((source / f).is_file() for f in _WORDNET_FILES):
        raise ConfigError(
            f"WordNet's data is not installed in {source}; install it with 'apt-get install wordnet-base'."
        )
    root = data_dir() / "nltk_data"
    target = root / "corpora" / "wordnet"
    if not (target / "lexnames").is_file():
        tmp = root / "corpora" / f".wordnet-{os.getpid()}-{threading.get_ident()}"
        tmp.mkdir(parents=True, exist_ok=True)
        # copies, not links: NLTK refuses symbolic and hard links out of its data roots
        for f in source.iterdir():
            if f.is_file():
                shutil.copyfile(f, tmp / f.name)
        (tmp / "lexnames").write_text(lexnames_text(), encoding="utf-8")
        try:
            tmp.rename(target)
        except OSError:  # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
    return root


_WN_LOCK = threading.Lock()


@lru_cache(maxsize=2)
def _load_wordnet(source: str) -> Any:
    import nltk

    from ._wordnet import DebianWordNet

    root = wordnet_root(Path(source))
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available"
        return DebianWordNet(str(root / "corpora" / "wordnet"), None)


def wordnet(source: Path | None = None) -> Any:
    """NLTK's WordNet reader over Debian's data (loaded once per process)."""
    with _WN_LOCK:
        return _load_wordnet(str(source or WORDNET_SOURCE))


class WordNet:
    """Neighbours: WordNet synonyms, most frequent sense first."""

    name = "wordnet"

    def __init__(self, source: Path | None = None) -> None:
        self.wn = wordnet(source)
        self._cache: dict[str, list[str]] = {}

    def neighbours(self, word: str, n: int) -> list[str]:
        key = word.lower()
        if key not in self._cache:
            out: list[str] = []
            for synset in self.wn.synsets(key):
                for lemma in synset.lemma_names():
                    w = lemma.replace("_", " ").lower()
                    if w != key and w not in out and not any(ch.isdigit() for ch in w):
                        out.append(w)
            self._cache[key] = out
        return self._cache[key][:n]


class Vectors:
    """Neighbours: the words nearest in a GloVe-format vectors file, by Euclidean distance (the
    paper's reading, default) or cosine similarity (``by="cosine"``)."""

    name = "vectors"

    def __init__(self, path: str | Path, by: str = NEIGHBOURS_BY[0]) -> None:
        if by not in NEIGHBOURS_BY:
            raise ConfigError(f"--neighbours-by must be {' or '.join(NEIGHBOURS_BY)} (got '{by}').")
        self.by = by
        path = Path(path).expanduser()
        words: list[str] = []
        chunks: list[np.ndarray] = []
        values: list[str] = []  # the numbers of the lines read since the last chunk, as text
        numbers: list[int] = []  # those lines' numbers, to name the one refused
        dim = 0
        lines = read_user_lines(
            path,
            limit=MAX_VECTORS_BYTES,
            line_limit=MAX_VECTORS_LINE_BYTES,
            what="GloVe-format vectors file",
            error=ConfigError,
        )
        for number, line in lines:
            if number > MAX_VECTORS_LINES:
                raise ConfigError(
                    f"{path} has more than {MAX_VECTORS_LINES:,} lines, the limit for a GloVe-format "
                    "vectors file (GloVe's largest has 2.2 million words)."
                )
            parts = line.rstrip().split(" ")
            if len(parts) < 2:
                continue
            if not dim:
                dim = len(parts) - 1
            elif len(parts) - 1 != dim:
                raise ConfigError(f"{path}:{number} has {len(parts) - 1} numbers, line 1 has {dim}.")
            words.append(parts[0])
            values.extend(parts[1:])
            numbers.append(number)
            if len(values) >= _CHUNK_VALUES:
                chunks.append(_vectors_chunk(path, values, numbers, dim))
                values, numbers = [], []
        if values:
            chunks.append(_vectors_chunk(path, values, numbers, dim))
        if not words:
            raise ConfigError(f"the vectors file {path} holds no vectors.")
        self.path = path
        self.words = words
        self.index = {w: i for i, w in enumerate(words)}
        self.matrix = chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
        del chunks
        self.unit = self.matrix
        if by == "cosine":  # the rows scaled to length 1, for cosine similarity only
            norms = np.linalg.norm(self.matrix, axis=1, keepdims=True)
            self.unit = self.matrix / np.where(norms == 0, 1, norms)
        self._cache: dict[str, list[str]] = {}

    def vector(self, word: str) -> np.ndarray | None:
        i = self.index.get(word.lower(), self.index.get(word))
        return None if i is None else self.matrix[i]

    def neighbours(self, word: str, n: int) -> list[str]:
        key = word.lower()
        i = self.index.get(key)
        if i is None:
            return []
        have = self._cache.get(key)
        if have is None or (len(have) < n and len(have) < len(self.words) - 1):
            # a search widens n one step at a time: rank twice as many as asked, so a widened
            # n is answered from the cache instead of another pass over every vector
            m = min(max(n, 16, 2 * len(have or ())), len(self.words) - 1)
            if self.by == "cosine":
                sims = self.unit @ self.unit[i]
            else:  # minus the squared Euclidean distance: the nearest first
                sims = -np.square(self.matrix - self.matrix[i], dtype=np.float64).sum(axis=1)
            sims[i] = -np.inf
            top = np.argpartition(-sims, m)[: m + 1] if m + 1 < len(sims) else np.arange(len(sims))
            top = np.sort(top)  # ties in the file's order
            top = top[np.argsort(-sims[top], kind="stable")]
            have = self._cache[key] = [self.words[j] for j in top if self.words[j] != key][:m]
        return have[:n]


def _vectors_chunk(path: Path, values: list[str], numbers: list[int], dim: int) -> np.ndarray:
    """The rows of ``values`` (``dim`` numbers each) as float32; ``ConfigError`` naming the first
    line that holds something other than a finite number."""
    try:
        with np.errstate(over="ignore"):  # 1e39 becomes inf, refused below
            rows = np.asarray(values, dtype=np.float32).reshape(len(numbers), dim)
    except ValueError:
        for i, number in enumerate(numbers):
            try:
                np.asarray(values[i * dim : (i + 1) * dim], dtype=np.float32)
            except ValueError:
                raise ConfigError(f"{path}:{number} is not 'word v1 v2 ...' (GloVe's format).") from None
        raise
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        number = numbers[int(np.argmin(finite))]
        raise ConfigError(f"{path}:{number} holds a value that is not a finite number (nan or inf).")
    return rows


class Synonyms:
    """Neighbours from a given table, ``{word: [nearest, next, ...]}`` (a project's own synonyms)."""

    name = "synonyms"

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = {w.lower(): list(ns) for w, ns in table.items()}

    def neighbours(self, word: str, n: int) -> list[str]:
        return [w for w in self.table.get(word.lower(), []) if w != word.lower()][:n]


def neighbour_source(vectors: str | Path | None = None, by: str = NEIGHBOURS_BY[0]) -> NeighbourSource:
    """``Vectors(vectors, by)`` when a file is named, else ``WordNet()``."""
    return Vectors(vectors, by) if vectors else WordNet()
