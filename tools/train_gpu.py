"""Train a Llama-style code model on a GPU within a time budget, from a corpus made by
``tools/build_corpus.py`` and the tokenizer made by ``tools/train_tokenizer.py``.

    python tools/train_gpu.py --corpus corpus --out run/model --minutes 8        # on an H100
    python tools/train_gpu.py --tiny --corpus corpus --out /tmp/m --device cpu     # CI: seconds

``--minutes`` is the wall-clock budget of the whole command, loading and the final save included:
training stops ``--reserve-s`` seconds before it to evaluate and save. A checkpoint is written about
every ``--save-every-s`` seconds (60) and at the end, so a run cut short still leaves a usable
model. ``--out`` then holds a transformers model (``from_pretrained``): the weights in bf16 as
safetensors shards of at most 15 MiB, ``config.json``, the tokenizer, ``training.json`` (the
arguments, steps, tokens seen, compute, held-out losses, the corpus's totals) and
``optimizer.pt``. Each checkpoint replaces the previous one only once it is complete on disk.
``--export DIR`` also copies the files worth bringing back (the shards, their index,
``config.json`` and ``training.json``: 6 files for a model under 45 MiB) into DIR after each
checkpoint, one file at a time; the tokenizer is the one in the tree, copied back in with
``tools/eval_model.py --tokenizer``.

Resumable: run it again with the same ``--out`` and it goes on from the checkpoint there (the
step count, tokens seen, the weights, and the optimizer's moments and data-order seeds when
``optimizer.pt`` is there; without it the moments start afresh and the learning rate is ramped up
again over ``--warmup`` steps). ``--fresh`` starts over.

The model: Llama (RMSNorm, rotary positions, SwiGLU; tied input and output embeddings),
``--layers`` 8 × ``--dim`` 384 (6 heads of 64), ``--ff`` 1024, the tokenizer's 16,384 tokens:
20.5M parameters, 41 MB in bf16 (3 shards). Trained with AdamW (fused on CUDA), bf16 autocast,
PyTorch's fused scaled-dot-product attention (``attn_implementation="sdpa"``), ``torch.compile``
on CUDA (falling back to eager if it fails), TF32 matrix products. The learning rate warms up
linearly over ``--warmup`` steps, stays at ``--lr``, and decays linearly to 5% over the last
``--decay`` share of the time budget (or of ``--max-steps``): a run cut short by its budget ends
annealed.

The data: the corpus's shards tokenized once in parallel by the tokenizer's Rust threads (one per
CPU core) and cached beside the corpus as uint16 arrays; each training row is a random window of
``--seq`` tokens, and with probability ``--fim-rate`` a fill-in-the-middle window in StarCoder's
PSM or SPM layout, made by ``tools/train_bundled_model.py``'s ``fim_window`` (the same recipe as
the bundled model's), in ``--workers`` DataLoader processes so that the GPU does not wait.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_bundled_model as recipe  # noqa: E402  (tools/ is not a package)

TOOLS = Path(__file__).resolve().parent
TOKENIZER = TOOLS / "tokenizer-16k"
SHARD_BYTES = 15 * 2**20
EXPORTED = ("config.json", "training.json", "model.safetensors.index.json")


def corpus_tokens(corpus: Path, tokenizer: PreTrainedTokenizerFast, split: str) -> np.ndarray:
    """The ``split`` shards' files tokenized and joined by ``<|endoftext|>`` as uint16, cached
    beside the corpus by the tokenizer's hash."""
    prefix = "heldout" if split == "held_out" else "train"
    shards = sorted(corpus.glob(f"{prefix}-*.jsonl"))
    key = hashlib.sha256(tokenizer.backend_tokenizer.to_str().encode())
    for s in shards:
        key.update(f"{s.name}:{s.stat().st_size}:{s.stat().st_mtime_ns}".encode())
    cache = corpus / f"tokens-{prefix}-{key.hexdigest()[:12]}.npy"
    if cache.is_file():
        return np.load(cache)
    eos = tokenizer.eos_token_id
    parts: list[np.ndarray] = []
    for shard in shards:
        texts = [json.loads(line)["text"] for line in shard.read_text(encoding="utf-8").splitlines()]
        # encode_batch runs on every CPU core (the tokenizers library's Rust threads)
        for enc in tokenizer.backend_tokenizer.encode_batch(texts, add_special_tokens=False):
            parts.append(np.asarray([*enc.ids, eos], dtype=np.uint16))
    tokens = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint16)
    tmp = cache.with_name(cache.name + ".tmp.npy")
    np.save(tmp, tokens)
    tmp.replace(cache)
    return tokens


class Windows(torch.utils.data.IterableDataset):  # type: ignore[type-arg]
    """Endless batches of training rows: random windows, a share of them FIM windows."""

    def __init__(
        self,
        tokens: np.ndarray,
        tokenizer: PreTrainedTokenizerFast,
        fim_ids: list[int],
        args: argparse.Namespace,
        seed: int,
    ) -> None:
        self.tokens, self.tokenizer, self.fim_ids = tokens, tokenizer, fim_ids
        self.batch, self.seq, self.seed = args.batch, args.seq, seed
        self.fim_rate, self.spm_rate = args.fim_rate, args.fim_spm_rate

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        rng = random.Random(self.seed * 1009 + (info.id if info else 0))
        high = len(self.tokens) - self.seq - 1
        while True:
            rows, labels = [], []
            for _ in range(self.batch):
                s = rng.randrange(max(1, high))
                window = self.tokens[s : s + self.seq].astype(np.int64).tolist()
                if self.fim_ids and rng.random() < self.fim_rate:
                    ids, lab, _ = recipe.fim_window(
                        window, self.tokenizer, self.fim_ids, rng, self.spm_rate, self.seq
                    )
                else:
                    ids, lab = window, window
                rows.append(ids)
                labels.append(lab)
            yield torch.tensor(rows), torch.tensor(labels)


def lr_factor(step: int, progress: float, warmup: int, decay: float) -> float:
    """Warm-up over ``warmup`` steps, then constant, then a linear decay to 5% over the last
    ``decay`` share of ``progress`` (0 to 1: time or steps spent)."""
    ramp = min(1.0, (step + 1) / max(1, warmup))
    tail = 1.0 if progress < 1 - decay else max(0.05, (1 - progress) / decay)
    return ramp * tail


def make_model(args: argparse.Namespace, tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    vocab = len(tokenizer)
    # attn_implementation is a PretrainedConfig keyword the stubs leave out
    config = LlamaConfig(  # type: ignore[call-arg]
        vocab_size=vocab,
        hidden_size=args.dim,
        intermediate_size=args.ff,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.heads,
        max_position_embeddings=args.context,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.eos_token_id,
        attn_implementation="sdpa",
    )
    return LlamaForCausalLM(config)


@torch.no_grad()
def held_out_loss(model: LlamaForCausalLM, windows: list[list[int]], batch: int, autocast: Any) -> float:
    """Mean left-to-right loss over fixed windows, ``batch`` at a time."""
    model.eval()
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for i in range(0, len(windows), batch):
        x = torch.tensor(windows[i : i + batch], device=device)
        with autocast():
            total += model(input_ids=x, labels=x).loss.item() * len(x)
        count += len(x)
    model.train()
    return round(total / max(1, count), 4)


def save(
    model: LlamaForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    opt: torch.optim.Optimizer,
    out: Path,
    meta: dict[str, Any],
    export: Path | None,
) -> None:
    """A checkpoint in ``out`` (bf16 shards of at most 15 MiB), replacing the previous one once
    complete; then the files worth bringing back copied into ``export``."""
    tmp = out.with_name(out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    state = {k: v.detach().to("cpu", torch.bfloat16) for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    model.save_pretrained(tmp, state_dict=state, max_shard_size=SHARD_BYTES, safe_serialization=True)
    # save_pretrained writes the dtype of the (fp32) training weights: say what the shards hold
    config = json.loads((tmp / "config.json").read_text(encoding="utf-8"))
    (tmp / "config.json").write_text(
        json.dumps({**config, "dtype": "bfloat16"}, indent=2) + "\n", encoding="utf-8"
    )
    (tmp / "generation_config.json").unlink(missing_ok=True)  # the defaults; one file fewer to carry
    tokenizer.save_pretrained(tmp)
    (tmp / "training.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    torch.save(
        {"optimizer": opt.state_dict(), "step": meta["steps"], "seed": meta["data_seed"]},
        tmp / "optimizer.pt",
    )
    if out.exists():
        old = out.with_name(out.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old)
    else:
        tmp.rename(out)
    if export is not None:
        export.mkdir(parents=True, exist_ok=True)
        keep = [p for p in out.iterdir() if p.name.endswith(".safetensors") or p.name in EXPORTED]
        for stale in export.iterdir():
            if stale.is_file() and stale.name not in {p.name for p in keep}:
                stale.unlink()
        for p in sorted(keep, key=lambda p: p.name == "training.json"):  # training.json last
            part = export / (p.name + ".part")
            shutil.copyfile(p, part)
            part.replace(export / p.name)


def main(argv: list[str] | None = None) -> int:
    t_start = time.time()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, required=True, help="a folder made by tools/build_corpus.py")
    p.add_argument("--tokenizer", type=Path, default=TOKENIZER)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--export", type=Path, default=None, help="copy the weights, config, training.json here")
    p.add_argument("--minutes", type=float, default=8.0, help="wall-clock budget of the whole command")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (in all)")
    p.add_argument(
        "--reserve-s", type=float, default=40.0, help="seconds kept for the final evaluation and save"
    )
    p.add_argument("--save-every-s", type=float, default=60.0)
    p.add_argument("--fresh", action="store_true", help="start over even if --out holds a checkpoint")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument(
        "--batch", type=int, default=128, help="rows a step (128 x 1024 tokens: ~30 GB on an H100)"
    )
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--context", type=int, default=2048, help="max_position_embeddings of the model")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--ff", type=int, default=1024)
    p.add_argument("--lr", type=float, default=1.5e-3)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument(
        "--decay", type=float, default=0.25, help="share of the budget the learning rate decays over"
    )
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--fim-rate", type=float, default=0.5)
    p.add_argument("--fim-spm-rate", type=float, default=0.5)
    p.add_argument(
        "--eval-windows",
        type=int,
        default=128,
        help="held-out windows at the end (every checkpoint: a quarter)",
    )
    p.add_argument("--workers", type=int, default=-1, help="DataLoader processes (-1: CPU cores - 2)")
    p.add_argument("--device", default="auto", help="cuda, cpu or auto")
    p.add_argument(
        "--compile", choices=["auto", "on", "off"], default="auto", help="torch.compile (auto: on CUDA)"
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--tiny", action="store_true", help="a tiny model and batch (CI and a first check)")
    args = p.parse_args(argv)
    if args.tiny:
        args.batch, args.seq, args.context = 4, 64, 128
        args.layers, args.dim, args.heads, args.ff = 2, 64, 2, 128
        args.warmup, args.eval_windows = 2, 8
    if args.threads:
        torch.set_num_threads(args.threads)
    deadline = t_start + args.minutes * 60
    device = torch.device(
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else ("cpu" if args.device == "auto" else args.device)
    )
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    def log(msg: str) -> None:
        print(f"[{time.time() - t_start:6.1f}s] {msg}", flush=True)

    resume = not args.fresh and (args.out / "training.json").is_file()
    tokenizer = PreTrainedTokenizerFast.from_pretrained(args.out if resume else args.tokenizer)
    fim_ids = recipe.add_fim_tokens(tokenizer) if args.fim_rate > 0 else []
    train = corpus_tokens(args.corpus, tokenizer, "train")
    valid = corpus_tokens(args.corpus, tokenizer, "held_out")
    if len(valid) < args.seq + 1:  # a corpus without held-out files: the training tokens' tail
        valid, train = (
            train[-(args.seq * args.eval_windows + 1) :],
            train[: -(args.seq * args.eval_windows + 1)],
        )
    log(f"tokens: {len(train):,} train, {len(valid):,} held out ({os.cpu_count()} CPU cores)")

    prior: dict[str, Any] = {}
    if resume:
        prior = json.loads((args.out / "training.json").read_text(encoding="utf-8"))
        model = LlamaForCausalLM.from_pretrained(args.out, dtype=torch.float32, attn_implementation="sdpa")
        log(f"resuming {args.out} at step {prior['steps']}")
    else:
        torch.manual_seed(args.seed)
        model = make_model(args, tokenizer)
    model.to(device)  # type: ignore[arg-type]
    params = sum(p.numel() for p in model.parameters())
    log(f"model: {params / 1e6:.2f}M parameters, {device}")

    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for _name, w in model.named_parameters():
        (decay if w.dim() >= 2 else no_decay).append(w)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        fused=cuda,
    )
    step = int(prior.get("steps", 0))
    tokens_seen = int(prior.get("tokens", 0))
    fresh_moments = True
    state_file = args.out / "optimizer.pt"
    if resume and state_file.is_file():
        state = torch.load(state_file, map_location=device, weights_only=True)
        if state.get("step") == step:
            opt.load_state_dict(state["optimizer"])
            fresh_moments = False
    warm_from = step if (resume and fresh_moments) else 0
    # each run (a resumed one too) draws new windows: its seed follows from the step it starts at
    data_seed = args.seed + 7919 * step

    autocast = (
        (lambda: torch.autocast("cuda", dtype=torch.bfloat16))
        if cuda
        else (lambda: torch.autocast("cpu", enabled=False))
    )
    workers = (
        (max(0, (os.cpu_count() or 1) - 2) if args.workers < 0 else args.workers)
        if cuda
        else max(0, args.workers)
    )
    loader = torch.utils.data.DataLoader(
        Windows(train, tokenizer, fim_ids, args, data_seed),
        batch_size=None,
        num_workers=workers,
        pin_memory=cuda,
        prefetch_factor=8 if workers else None,
        persistent_workers=bool(workers),
    )
    batches = iter(loader)
    windows = recipe.eval_windows(torch.from_numpy(valid.astype(np.int64)), args.seq, args.eval_windows)
    forward: Any = model
    if args.compile == "on" or (args.compile == "auto" and cuda):
        forward = torch.compile(model)

    corpus_manifest = args.corpus / "manifest.json"
    corpus_meta = json.loads(corpus_manifest.read_text()) if corpus_manifest.is_file() else {}
    history: list[dict[str, Any]] = list(prior.get("history", []))
    run_start_step, t_train = step, time.time()
    train_budget = max(1.0, deadline - args.reserve_s - t_train)
    seconds_before = float(prior.get("seconds", 0.0))

    def metadata(final: bool, loss: float) -> dict[str, Any]:
        held: dict[str, Any] = {
            "left_to_right": held_out_loss(
                model, windows if final else windows[: max(1, len(windows) // 4)], 16, autocast
            )
        }
        if final and fim_ids:
            with autocast():
                held |= recipe.evaluate_fim(cast(Any, model), tokenizer, fim_ids, windows, args.seq, 0)
        elapsed = time.time() - t_train
        run_tokens = tokens_seen - int(prior.get("tokens", 0))
        entry = {
            "step": step,
            "tokens": tokens_seen,
            "train_loss": round(loss, 4),
            "held_out": held,
            "seconds": round(seconds_before + elapsed, 1),
        }
        if history and history[-1]["step"] == step:  # the final evaluation of a step just saved
            history.pop()
        history.append(entry)
        meta: dict[str, Any] = {
            "architecture": "llama",
            "steps": step,
            "tokens": tokens_seen,
            "parameters": params,
            # 6 N per token for the weights, and the attention's 6 * layers * seq * dim
            "compute_flops": float(tokens_seen * (6 * params + 6 * args.layers * args.seq * args.dim)),
            "seconds": round(seconds_before + elapsed, 1),
            "tokens_per_second_this_run": round(run_tokens / max(elapsed, 1e-9)),
            "held_out_loss": held["left_to_right"],
            "held_out_perplexity": round(math.exp(held["left_to_right"]), 2),
            "held_out_windows": len(windows) if final else max(1, len(windows) // 4),
            "held_out_tokens": int(len(valid)),
            "train_tokens": int(len(train)),
            "data_seed": data_seed,
            "final": final,
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "command": "python tools/train_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "device": torch.cuda.get_device_name(device) if cuda else "cpu",
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "compiled": forward is not model,
            "tokenizer_sha256": hashlib.sha256((args.tokenizer / "tokenizer.json").read_bytes()).hexdigest()
            if (args.tokenizer / "tokenizer.json").is_file()
            else None,
            "corpus": {k: corpus_meta.get(k) for k in ("python", "totals", "files_dropped", "contamination")},
            "history": history,
            "resumed_from": prior.get("steps") if resume else None,
        }
        if fim_ids:
            meta["fim"] = {
                "rate": args.fim_rate,
                "spm_rate": args.fim_spm_rate,
                "split": "character",
                "tokens": recipe.FIM_TOKENS,
            }
            if final:
                meta["held_out_loss_fim"] = held["fim"]
                meta["held_out_loss_middle"] = {
                    "fim": held["middle_fim"],
                    "left_to_right": held["middle_left_to_right"],
                }
        if final:
            meta["samples"] = recipe.sample(cast(Any, model), tokenizer, 32)
        return meta

    model.train()
    last_save, loss_value, t_log = time.time(), float("nan"), time.time()
    while True:
        now = time.time()
        progress = (now - t_train) / train_budget
        if args.max_steps is not None:
            progress = max(progress, (step - run_start_step) / max(1, args.max_steps - run_start_step))
            if step >= args.max_steps:
                break
        if now >= deadline - args.reserve_s:
            break
        lr = args.lr * lr_factor(step - warm_from, progress, args.warmup, args.decay)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = next(batches)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        try:
            with autocast():
                loss = forward(input_ids=x, labels=y).loss
            loss.backward()
        except Exception as exc:  # torch.compile failed: go on without it
            if forward is model:
                raise
            log(f"torch.compile failed ({type(exc).__name__}: {str(exc)[:200]}); training without it")
            forward = model
            opt.zero_grad(set_to_none=True)
            continue
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens_seen += x.numel()
        if step % 50 == 0 or time.time() - t_log > 15 or step == run_start_step + 1:
            loss_value = loss.item()
            rate = (tokens_seen - int(prior.get("tokens", 0))) / max(1e-9, time.time() - t_train)
            log(f"step {step} loss {loss_value:.3f} lr {lr:.2e} ({rate:,.0f} tokens/s)")
            t_log = time.time()
        if time.time() - last_save >= args.save_every_s:
            loss_value = loss.item()
            save(model, tokenizer, opt, args.out, metadata(False, loss_value), args.export)
            log(
                f"step {step}: checkpoint in {args.out} "
                f"(held-out loss {history[-1]['held_out']['left_to_right']})"
            )
            last_save = time.time()
    if step > int(prior.get("steps", 0)):
        loss_value = loss.item()
    meta = metadata(True, loss_value)
    save(model, tokenizer, opt, args.out, meta, args.export)
    log(f"step {step}: final checkpoint in {args.out}: {json.dumps(history[-1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
