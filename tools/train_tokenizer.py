"""Train the byte-level BPE tokenizer of the bundled model on a sample of a corpus made by
``tools/build_corpus.py``.

    python tools/build_corpus.py --out corpus
    python tools/train_tokenizer.py --corpus corpus --out tools/tokenizer-16k   # 16,384 tokens

The sample is the training shards' files taken in a fixed, hashed order (SHA-256 of distribution
and path, so no one distribution fills it) until ``--sample-mb`` MB of text. The vocabulary opens
with the special tokens, in StarCoder's order and spelling, so that ``cctest.backends.fim`` detects
the ``starcoder`` FIM family: ``<|endoftext|>`` (id 0: beginning, end, padding and unknown),
``<fim_prefix>``, ``<fim_middle>``, ``<fim_suffix>``, ``<fim_pad>``. The folder is a transformers
tokenizer (``tokenizer.json``, ``tokenizer_config.json``, loaded by ``AutoTokenizer``) with a
``training.json`` that says what it was trained on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tokenizers import ByteLevelBPETokenizer
from transformers import PreTrainedTokenizerFast

EOS = "<|endoftext|>"
SPECIAL = [EOS, "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>"]


def sample_texts(corpus: Path, megabytes: float, split: str = "train") -> list[str]:
    """The corpus's ``split`` files in hashed order, until ``megabytes`` MB of text."""
    prefix = "heldout" if split == "held_out" else "train"
    records: list[tuple[bytes, str]] = []
    for shard in sorted(corpus.glob(f"{prefix}-*.jsonl")):
        with shard.open(encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                key = hashlib.sha256(f"{r['dist']}:{r['path']}".encode()).digest()
                records.append((key, r["text"]))
    records.sort(key=lambda kv: kv[0])
    out, size, limit = [], 0, int(megabytes * 1e6)
    for _, text in records:
        if size >= limit:
            break
        out.append(text)
        size += len(text.encode("utf-8"))
    return out


def train(texts: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    bpe = ByteLevelBPETokenizer()

    def batches() -> Iterator[list[str]]:
        for i in range(0, len(texts), 256):
            yield texts[i : i + 256]

    bpe.train_from_iterator(
        batches(), vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIAL, length=len(texts)
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=EOS,
        eos_token=EOS,
        unk_token=EOS,
        pad_token=EOS,
        additional_special_tokens=SPECIAL[1:],
        model_max_length=2048,
    )
    return tok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, required=True, help="a folder made by tools/build_corpus.py")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--vocab", type=int, default=16384)
    p.add_argument("--sample-mb", type=float, default=64.0)
    args = p.parse_args(argv)
    t0 = time.time()
    texts = sample_texts(args.corpus, args.sample_mb)
    if not texts:
        p.error(f"{args.corpus} has no train-*.jsonl shards")
    chars = sum(len(t) for t in texts)
    tok = train(texts, args.vocab)
    seconds = round(time.time() - t0, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(args.out)
    manifest = args.corpus / "manifest.json"
    meta = {
        "vocab_size": len(tok),
        "special_tokens": SPECIAL,
        "sample_files": len(texts),
        "sample_characters": chars,
        "sample_mb": args.sample_mb,
        "corpus_python": json.loads(manifest.read_text())["python"] if manifest.is_file() else None,
        "seconds": seconds,
        "command": "python tools/train_tokenizer.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    (args.out / "training.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(
        f"tokenizer of {len(tok):,} tokens in {args.out}: {len(texts):,} files, "
        f"{chars / 1e6:.1f}M characters, {seconds} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
