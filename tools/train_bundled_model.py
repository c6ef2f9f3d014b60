"""Train the small GPT-2 code model that ships inside the cctest package.

The corpus is the Python standard library of the interpreter running this script (present on
every machine, so no download). Files are split into train and held-out sets by a hash of their
relative path, so the split does not depend on the order the filesystem lists them in.

    # the shipped checkpoint (1.3 h on two CPU cores; held-out loss 4.03):
    python tools/train_bundled_model.py --out cctest/models/cctest-code-small --steps 7000 \
        --batch 8 --seq 256 --warmup 200 --lr 2e-3 --threads 2
    python tools/train_bundled_model.py --tiny --out /tmp/m      # CI: a few steps, then load + generate

Deterministic given --seed and --steps: the learning-rate schedule (linear warm-up, then
inverse square root) does not depend on the total number of steps, so the checkpoint written at
step N is the model that ``--steps N`` produces.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import sysconfig
import time
from pathlib import Path

import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

EOS = "<|endoftext|>"


def corpus_files(root: Path, max_files: int | None) -> list[Path]:
    """Python files of the standard library, excluding site-packages and the test suites."""
    files = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if "site-packages" in rel or rel.startswith(("test/", "idlelib/idle_test/")) or "/tests/" in rel:
            continue
        files.append(path)
    if max_files is not None:
        files = files[:max_files]
    return files


def is_held_out(rel: str, fraction: float) -> bool:
    digest = hashlib.sha256(rel.encode()).digest()
    return digest[0] / 256 < fraction


def read_texts(files: list[Path], root: Path, held_out: float) -> tuple[list[str], list[str]]:
    train, valid = [], []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        (valid if is_held_out(path.relative_to(root).as_posix(), held_out) else train).append(text)
    return train, valid


def train_tokenizer(texts: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS])
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=EOS, eos_token=EOS, unk_token=EOS, pad_token=EOS
    )


def encode(tokenizer: PreTrainedTokenizerFast, texts: list[str]) -> torch.Tensor:
    ids: list[int] = []
    eos = tokenizer.eos_token_id
    for text in texts:
        ids.extend(tokenizer(text)["input_ids"])
        ids.append(eos)
    return torch.tensor(ids, dtype=torch.long)


def lr_at(step: int, base: float, warmup: int) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    return base * math.sqrt(warmup / (step + 1))


@torch.no_grad()
def evaluate(model: GPT2LMHeadModel, data: torch.Tensor, seq: int, batches: int) -> float:
    model.eval()
    n = (len(data) - 1) // seq
    losses = []
    device = next(model.parameters()).device
    # a fixed, evenly spaced set of windows: comparable between evaluations
    for i in range(min(batches, n)):
        start = (i * n // max(1, min(batches, n))) * seq
        x = data[start : start + seq].unsqueeze(0).to(device)
        losses.append(model(input_ids=x, labels=x).loss.item())
    model.train()
    return sum(losses) / max(1, len(losses))


SAMPLE_PROMPTS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "import os\n\n\ndef list_python_files(directory):\n    result = []\n"
    "    for name in os.listdir(directory):\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n",
    "def read_lines(path):\n    with open(path) as f:\n",
]


def sample(model: GPT2LMHeadModel, tokenizer: PreTrainedTokenizerFast, max_new_tokens: int) -> list[dict]:
    model.eval()
    out = []
    for prompt in SAMPLE_PROMPTS:
        enc = tokenizer(prompt, return_tensors="pt").to(next(model.parameters()).device)
        gen = model.generate(
            **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.eos_token_id
        )
        out.append({"prompt": prompt, "completion": tokenizer.decode(gen[0][enc["input_ids"].shape[1] :])})
    model.train()
    return out


def save(model: GPT2LMHeadModel, tokenizer: PreTrainedTokenizerFast, out: Path, meta: dict) -> None:
    tmp = out.with_name(out.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    model.to("cpu").save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    (tmp / "training.json").write_text(json.dumps(meta, indent=2) + "\n")
    # replace the previous checkpoint only once the new one is complete on disk
    if out.exists():
        old = out.with_name(out.name + ".old")
        if old.exists():
            _rmtree(old)
        out.rename(old)
        tmp.rename(out)
        _rmtree(old)
    else:
        tmp.rename(out)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--corpus", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--context", type=int, default=1024, help="n_positions of the model")
    p.add_argument("--dropout", type=float, default=0.0, help="residual, embedding and attention dropout")
    p.add_argument("--held-out", type=float, default=0.03)
    p.add_argument("--save-every", type=int, default=1000)
    p.add_argument("--eval-batches", type=int, default=200)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument(
        "--device", default="cpu", help="cpu, cuda, or auto (cuda when available); results differ by device"
    )
    p.add_argument("--max-files", type=int, default=None)
    p.add_argument("--tiny", action="store_true", help="a few steps of a tiny model (CI)")
    args = p.parse_args(argv)
    if args.tiny:
        args.steps, args.batch, args.seq, args.vocab = 4, 2, 64, 300
        args.layers, args.heads, args.dim, args.context = 1, 2, 32, 128
        args.max_files, args.save_every, args.eval_batches, args.warmup = 20, 4, 4, 2

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)

    files = corpus_files(args.corpus, args.max_files)
    train_texts, valid_texts = read_texts(files, args.corpus, args.held_out)
    if not valid_texts:  # tiny corpora: hold out the last file
        train_texts, valid_texts = train_texts[:-1], train_texts[-1:]
    print(f"corpus: {len(train_texts)} train files, {len(valid_texts)} held-out files", flush=True)

    tokenizer = train_tokenizer(train_texts, args.vocab)
    train = encode(tokenizer, train_texts)
    valid = encode(tokenizer, valid_texts)
    print(f"tokens: {len(train):,} train, {len(valid):,} held out", flush=True)

    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=args.context,
        n_embd=args.dim,
        n_layer=args.layers,
        n_head=args.heads,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.eos_token_id,
        resid_pdrop=args.dropout,
        embd_pdrop=args.dropout,
        attn_pdrop=args.dropout,
    )
    device = torch.device(
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else (args.device if args.device != "auto" else "cpu")
    )
    model = GPT2LMHeadModel(config).to(device)
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params / 1e6:.2f}M parameters", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(args.seed)
    n_windows = len(train) - args.seq - 1

    t0 = time.time()
    model.train()
    meta: dict = {}
    for step in range(1, args.steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr_at(step - 1, args.lr, args.warmup)
        starts = torch.randint(0, n_windows, (args.batch,), generator=gen)
        x = torch.stack([train[s : s + args.seq] for s in starts.tolist()]).to(device)
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == args.steps:
            rate = step * args.batch * args.seq / (time.time() - t0)
            print(f"step {step} loss {loss.item():.3f} ({rate:,.0f} tokens/s)", flush=True)
        if step % args.save_every == 0 or step == args.steps:
            held = evaluate(model, valid, args.seq, args.eval_batches)
            meta = {
                "seed": args.seed,
                "steps": step,
                "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                "parameters": params,
                "train_tokens": len(train),
                "held_out_tokens": len(valid),
                "held_out_loss": round(held, 4),
                "held_out_perplexity": round(math.exp(held), 2),
                "python": sys.version.split()[0],
                "torch": torch.__version__,
                "device": str(device),
                "seconds": round(time.time() - t0),
            }
            meta["samples"] = sample(model, tokenizer, 48)
            save(model, tokenizer, args.out, meta)
            model.to(device)
            print(f"step {step}: held-out loss {held:.3f}, saved to {args.out}", flush=True)
    print(json.dumps({k: v for k, v in meta.items() if k != "samples"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
