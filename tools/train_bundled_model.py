"""Train the small GPT-2 code model that ships inside the cctest package.

The corpus is the Python standard library of the interpreter running this script (present on
every machine, so no download). Files are split into train and held-out sets by a hash of their
relative path, so the split does not depend on the order the filesystem lists them in.

    # the left-to-right checkpoint (1.3 h on two CPU cores; held-out loss 4.03):
    python tools/train_bundled_model.py --out cctest/models/cctest-code-small --steps 7000 \
        --batch 8 --seq 256 --warmup 200 --lr 2e-3 --threads 2 --fim-rate 0
    python tools/train_bundled_model.py --tiny --out /tmp/m      # CI: a few steps, then load + generate

Deterministic given --seed and --steps: the learning-rate schedule (linear warm-up, then
inverse square root) does not depend on the total number of steps, so the checkpoint written at
step N is the model that ``--steps N`` produces.

Fill-in-the-middle (FIM), StarCoder's recipe (Bavarian et al., 2022; Allal et al., 2023): each
training window is, with probability ``--fim-rate`` (0.5), cut at two random *character*
positions into prefix, middle and suffix (character level, as StarCoder does, so a cursor in the
middle of a word is something the model has seen); each part is tokenized on its own and laid out
with the tokenizer's ``<fim_prefix>``, ``<fim_suffix>`` and ``<fim_middle>`` tokens, the middle
last and followed by ``<|endoftext|>`` (which is how the model learns to stop):

    PSM  <fim_prefix>prefix<fim_suffix>suffix<fim_middle>middle<|endoftext|>
    SPM  <fim_prefix><fim_suffix>suffix<fim_middle>prefix middle<|endoftext|>

SPM with probability ``--fim-spm-rate`` (0.5) of the FIM windows. The loss covers every token, as
in StarCoder. These are the layouts ``cctest.backends.fim`` detects as ``starcoder`` and
``starcoder-spm``. A window that spans two files is cut within its longest file piece.

``--init DIR`` continues training a saved checkpoint: its tokenizer is kept (the FIM tokens are
appended to it when missing, and the embedding matrix grows to match; transformers draws the new
rows from a normal distribution with the old rows' mean and covariance), and the learning-rate
schedule goes on from the checkpoint's step, ramped up linearly over ``--warmup`` steps because
the optimizer's moments start afresh. Teaching the left-to-right checkpoint FIM this way (its
``training.json`` then records the run, the checkpoint it started from, and the held-out losses
before and after):

    python tools/train_bundled_model.py --init cctest/models/cctest-code-small \
        --out .train/fim/cctest-code-small --steps 4000 --batch 8 --seq 256 --lr 2e-3 \
        --warmup 200 --threads 1 --seed 4321 --save-every 100 --eval-batches 60

The package ships this run's step 300 (the left-to-right checkpoint above as ``--init``), with
``"fim_template": "starcoder-spm"`` added to its tokenizer_config.json: the order it does best in
on humaneval-infill, which ``fim`` ``auto`` then uses. Later steps, and further runs continuing
it, raised every held-out loss (the 3.6M-token corpus is overfitted).

The held-out loss is measured on fixed windows of the held-out files both left to right and as
FIM windows (the same windows cut by a fixed seed, half PSM and half SPM); ``held_out_loss_middle``
is the loss on the middle's tokens alone, with the suffix shown (FIM) and without it (the prefix
and middle only, left to right), the figure that says what the suffix is worth.
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
FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX = "<fim_prefix>", "<fim_middle>", "<fim_suffix>"
FIM_TOKENS = [FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX]
IGNORE = -100  # label of padding: no loss
FIM_SLACK = 8


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


def add_fim_tokens(tokenizer: PreTrainedTokenizerFast) -> list[int]:
    """Append StarCoder's FIM tokens to ``tokenizer`` if missing; their ids (prefix, middle, suffix)."""
    missing = [t for t in FIM_TOKENS if t not in tokenizer.get_vocab()]
    if missing:
        tokenizer.add_tokens(missing, special_tokens=True)
    return [tokenizer.convert_tokens_to_ids(t) for t in FIM_TOKENS]


def fim_window(
    tokens: list[int],
    tokenizer: PreTrainedTokenizerFast,
    fim_ids: list[int],
    rng: random.Random,
    spm_rate: float,
    seq: int,
) -> tuple[list[int], list[int], tuple[int, int]]:
    """One window cut into prefix, middle and suffix at two random character positions and laid
    out PSM or SPM, ``seq`` tokens long: (input ids, labels, the middle's [start, end) in them).

    Padding (a short result) is labelled IGNORE; a long one loses its tail."""
    eos = tokenizer.eos_token_id
    # room for the three FIM tokens, the closing <|endoftext|> and the few more tokens that
    # tokenizing the three parts apart can take, so that the middle's end is rarely cut off
    tokens = tokens[: max(1, seq - FIM_SLACK)]
    # a window across a file boundary: the longest piece of one file
    pieces: list[list[int]] = [[]]
    for t in tokens:
        if t == eos:
            pieces.append([])
        else:
            pieces[-1].append(t)
    text = tokenizer.decode(max(pieces, key=len))
    a, b = sorted((rng.randint(0, len(text)), rng.randint(0, len(text))))

    def enc(part: str) -> list[int]:
        return list(tokenizer(part, add_special_tokens=False)["input_ids"]) if part else []

    prefix, middle, suffix = enc(text[:a]), enc(text[a:b]), enc(text[b:])
    pre, mid, suf = fim_ids
    if rng.random() < spm_rate:
        head = [pre, suf, *suffix, mid, *prefix]
    else:
        head = [pre, *prefix, suf, *suffix, mid]
    ids = [*head, *middle, eos][:seq]
    span = (min(len(head), seq), min(len(head) + len(middle), seq))
    labels = ids + [IGNORE] * (seq - len(ids))
    return ids + [eos] * (seq - len(ids)), labels, span


def chain_steps(meta: dict) -> int:
    """The steps a checkpoint has been trained in all: its run's and, through ``init``, those of
    every run it continued."""
    return int(meta.get("steps", 0)) + (chain_steps(meta["init"]) if meta.get("init") else 0)


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


def eval_windows(data: torch.Tensor, seq: int, batches: int) -> list[list[int]]:
    """The fixed, evenly spaced held-out windows every evaluation uses."""
    n = (len(data) - 1) // seq
    count = min(batches, n)
    return [data[(i * n // max(1, count)) * seq :][:seq].tolist() for i in range(count)]


@torch.no_grad()
def evaluate_fim(
    model: GPT2LMHeadModel,
    tokenizer: PreTrainedTokenizerFast,
    fim_ids: list[int],
    windows: list[list[int]],
    seq: int,
    seed: int,
) -> dict[str, float]:
    """Held-out losses on ``windows`` cut as FIM windows by a fixed seed (half PSM, half SPM):
    ``fim`` over every token (the training objective) and, on the middle's tokens alone,
    ``middle_fim`` (with the suffix shown) and ``middle_left_to_right`` (prefix + middle only)."""
    model.eval()
    device = next(model.parameters()).device
    rng = random.Random(seed)
    full, with_suffix, without = [], [], []
    for window in windows:
        ids, labels, (m0, m1) = fim_window(window, tokenizer, fim_ids, rng, 0.5, seq)
        if m1 - m0 < 1:
            continue
        x = torch.tensor([ids], device=device)
        y = torch.tensor([labels], device=device)
        full.append(model(input_ids=x, labels=y).loss.item())
        only_middle = torch.full_like(y, IGNORE)
        only_middle[0, m0:m1] = y[0, m0:m1]
        with_suffix.append(model(input_ids=x, labels=only_middle).loss.item())
        # the same prefix and middle tokens, left to right (no FIM tokens, no suffix)
        prefix = _prefix_of(ids, m0, fim_ids)
        plain = torch.tensor([prefix + ids[m0:m1]], device=device)
        plain_labels = torch.full_like(plain, IGNORE)
        plain_labels[0, len(prefix) :] = plain[0, len(prefix) :]
        without.append(model(input_ids=plain, labels=plain_labels).loss.item())
    model.train()

    def mean(xs: list[float]) -> float:
        return round(sum(xs) / max(1, len(xs)), 4)

    return {"fim": mean(full), "middle_fim": mean(with_suffix), "middle_left_to_right": mean(without)}


def _prefix_of(ids: list[int], middle_start: int, fim_ids: list[int]) -> list[int]:
    """The prefix's tokens of a PSM or SPM layout whose middle starts at ``middle_start``."""
    pre, mid, suf = fim_ids
    head = ids[:middle_start]
    if head[1] == suf:  # SPM: <pre><suf>suffix<mid>prefix
        return head[head.index(mid) + 1 :]
    return head[1 : head.index(suf)]  # PSM: <pre>prefix<suf>suffix<mid>


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
    p.add_argument("--fim-rate", type=float, default=0.5, help="share of windows trained as FIM windows")
    p.add_argument("--fim-spm-rate", type=float, default=0.5, help="share of FIM windows in SPM order")
    p.add_argument(
        "--init",
        type=Path,
        default=None,
        help="continue training this checkpoint (its tokenizer, its weights)",
    )
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

    init_meta: dict = {}
    if args.init:
        tokenizer = PreTrainedTokenizerFast.from_pretrained(args.init)
        init_meta = json.loads((args.init / "training.json").read_text(encoding="utf-8"))
    else:
        tokenizer = train_tokenizer(train_texts, args.vocab)
    vocab_before = len(tokenizer)
    # --fim-rate 0 (a left-to-right model, as before) leaves the tokenizer as it was
    fim_ids = add_fim_tokens(tokenizer) if args.fim_rate > 0 else []
    train = encode(tokenizer, train_texts)
    valid = encode(tokenizer, valid_texts)
    print(f"tokens: {len(train):,} train, {len(valid):,} held out", flush=True)

    device = torch.device(
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else (args.device if args.device != "auto" else "cpu")
    )
    if args.init:
        model = GPT2LMHeadModel.from_pretrained(args.init)
        # new rows: the mean of the others (transformers' mean resizing)
        model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
        model.config.vocab_size = len(tokenizer)
    else:
        model = GPT2LMHeadModel(
            GPT2Config(
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
        )
    model.to(device)
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params / 1e6:.2f}M parameters", flush=True)
    windows = eval_windows(valid, args.seq, args.eval_batches)

    def held_out() -> dict[str, float]:
        ltr = evaluate(model, valid, args.seq, args.eval_batches)
        fim = evaluate_fim(model, tokenizer, fim_ids, windows, args.seq, 0) if fim_ids else {}
        return {"left_to_right": round(ltr, 4), **fim}

    before: dict[str, float] = {}
    if args.init:
        before = held_out()
        print(f"held-out loss of {args.init} (new tokens untrained): {before}", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(args.seed)
    rng = random.Random(args.seed)
    n_windows = len(train) - args.seq - 1
    offset = chain_steps(init_meta)

    t0 = time.time()
    model.train()
    meta: dict = {}
    for step in range(1, args.steps + 1):
        for group in opt.param_groups:
            # a continued run goes on with the schedule where the checkpoint left it, ramped up
            # over --warmup steps since the optimizer's moments start from zero
            ramp = min(1.0, step / args.warmup) if offset else 1.0
            group["lr"] = lr_at(offset + step - 1, args.lr, args.warmup) * ramp
        starts = torch.randint(0, n_windows, (args.batch,), generator=gen)
        rows, labels = [], []
        for s in starts.tolist():
            window = train[s : s + args.seq].tolist()
            if fim_ids and rng.random() < args.fim_rate:
                ids, lab, _ = fim_window(window, tokenizer, fim_ids, rng, args.fim_spm_rate, args.seq)
            else:
                ids, lab = window, window
            rows.append(ids)
            labels.append(lab)
        x, y = torch.tensor(rows, device=device), torch.tensor(labels, device=device)
        loss = model(input_ids=x, labels=y).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == args.steps:
            rate = step * args.batch * args.seq / (time.time() - t0)
            print(f"step {step} loss {loss.item():.3f} ({rate:,.0f} tokens/s)", flush=True)
        if step % args.save_every == 0 or step == args.steps:
            held = held_out()
            meta = {
                "seed": args.seed,
                "steps": step,
                "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                "parameters": params,
                "train_tokens": len(train),
                "held_out_tokens": len(valid),
                "held_out_loss": held["left_to_right"],
                "held_out_perplexity": round(math.exp(held["left_to_right"]), 2),
                "held_out_windows": len(windows),
            }
            if fim_ids:
                meta["held_out_loss_fim"] = held["fim"]
                meta["held_out_loss_middle"] = {
                    "fim": held["middle_fim"],
                    "left_to_right": held["middle_left_to_right"],
                }
                meta["fim"] = {
                    "rate": args.fim_rate,
                    "spm_rate": args.fim_spm_rate,
                    "split": "character",
                    "tokens": FIM_TOKENS,
                }
            meta |= {
                "python": sys.version.split()[0],
                "torch": torch.__version__,
                "device": str(device),
                "seconds": round(time.time() - t0),
            }
            if args.init:
                meta["init"] = {
                    "path": str(args.init),
                    "vocab": vocab_before,
                    "held_out_before": before,
                    # the whole chain back to the run from scratch (its own "init"), so the
                    # record says how the model was made
                    **{k: v for k, v in init_meta.items() if k != "samples"},
                }
            meta["samples"] = sample(model, tokenizer, 48)
            save(model, tokenizer, args.out, meta)
            model.to(device)
            print(f"step {step}: held-out loss {held}, saved to {args.out}", flush=True)
    print(json.dumps({k: v for k, v in meta.items() if k != "samples"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
