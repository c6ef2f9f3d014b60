"""Evaluate a model on the CPU on data it never trained on: held-out losses, then cctest's own
benchmarks (HumanEval and humaneval-infill) through ``cctest bench``.

    python tools/eval_model.py --model run/model --corpus corpus --out eval/   # the whole evaluation
    python tools/eval_model.py --model run/model --corpus corpus --dry-run      # the commands only

1. Held-out losses on the corpus's held-out distributions (``heldout-*.jsonl``; ``--windows``
   fixed windows of ``--seq`` tokens, evenly spaced): left to right, on FIM windows (cut by a fixed
   seed, half PSM, half SPM), and on the middle's tokens alone with the code after it (FIM) and
   without it (prefix and middle, left to right), with ``tools/train_bundled_model.py``'s functions,
   as the trainers measure them.
2. HumanEval pass@1 on all 164 problems, and humaneval-infill single-line pass@1 with FIM and left
   to right on the same seeded sample of ``--infill-sample`` tasks (0: all 1,033), each a
   ``cctest bench`` run (its summary.json holds ``pass_at_1``; ``-k 1``: one mutant, the least the
   bench takes, since only the original completion's pass@1 is read here).

A model folder brought back from a GPU machine holds no tokenizer: ``--tokenizer`` (default
``tools/tokenizer-16k``) is copied into it first. Results go to ``--out``/eval.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_bundled_model as recipe  # noqa: E402
import train_gpu  # noqa: E402


def bench_commands(args: argparse.Namespace) -> dict[str, list[str]]:
    """The ``cctest bench`` runs, by name."""
    common = [sys.executable, "-m", "cctest", "bench", "--model", str(args.model), "-k", "1"]
    common += ["--threads", str(args.threads), "--no-progress"]
    infill = ["--dataset", "humaneval-infill", "--completion-scope", "line", "--max-new-tokens", "24"]
    if args.infill_sample:
        infill += ["--shuffle", "--limit", str(args.infill_sample), "--seed", str(args.seed)]
    limit = ["--limit", str(args.limit)] if args.limit else []
    out = args.out
    return {
        "humaneval": [*common, "--dataset", "humaneval", *limit, "--out", str(out / "humaneval")],
        "infill_fim": [*common, *infill, *limit, "--fim", "auto", "--out", str(out / "infill-fim")],
        "infill_left_to_right": [*common, *infill, *limit, "--fim", "off", "--out", str(out / "infill-ltr")],
    }


def held_out_losses(args: argparse.Namespace) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    if args.threads:
        torch.set_num_threads(args.threads)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(args.model)
    fim_ids = recipe.add_fim_tokens(tokenizer)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    tokens = train_gpu.corpus_tokens(args.corpus, tokenizer, "held_out")
    windows = recipe.eval_windows(torch.from_numpy(tokens.astype(np.int64)), args.seq, args.windows)
    ltr = train_gpu.held_out_loss(cast(Any, model), windows, 8, lambda: torch.autocast("cpu", enabled=False))
    fim = recipe.evaluate_fim(cast(Any, model), tokenizer, fim_ids, windows, args.seq, 0)
    return {
        "windows": len(windows),
        "seq": args.seq,
        "left_to_right": ltr,
        "fim": fim["fim"],
        "middle": {"fim": fim["middle_fim"], "left_to_right": fim["middle_left_to_right"]},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--corpus", type=Path, required=True, help="a folder made by tools/build_corpus.py")
    p.add_argument("--tokenizer", type=Path, default=train_gpu.TOKENIZER)
    p.add_argument("--out", type=Path, default=Path("eval"))
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--windows", type=int, default=200)
    p.add_argument("--infill-sample", type=int, default=300, help="seeded humaneval-infill tasks (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--limit", type=int, default=None, help="only the first N prompts of each bench (tests)")
    p.add_argument("--skip-bench", action="store_true", help="the held-out losses alone")
    p.add_argument("--dry-run", action="store_true", help="print the bench commands and stop")
    args = p.parse_args(argv)
    commands = bench_commands(args)
    if args.dry_run:
        for name, cmd in commands.items():
            print(f"{name}: {' '.join(cmd)}")
        return 0
    if not (args.model / "tokenizer.json").is_file():
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(args.tokenizer / f, args.model / f)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    result: dict[str, Any] = {"model": str(args.model), "held_out": held_out_losses(args)}
    print(json.dumps(result["held_out"]), flush=True)
    if not args.skip_bench:
        for name, cmd in commands.items():
            run = subprocess.run(cmd, text=True)
            if run.returncode != 0:
                print(f"{name}: cctest bench exited {run.returncode}", file=sys.stderr)
                return run.returncode
            summary = json.loads((Path(cmd[cmd.index("--out") + 1]) / "summary.json").read_text())
            result[name] = {"command": " ".join(cmd[2:]), "pass_at_1": _pass_at_1(summary)}
            print(f"{name}: pass@1 {result[name]['pass_at_1']}", flush=True)
    result["seconds"] = round(time.time() - t0, 1)
    (args.out / "eval.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out / 'eval.json'}")
    return 0


def _pass_at_1(summary: dict[str, Any]) -> Any:
    """The original completions' pass@1 from a bench summary (wherever the summary keeps it)."""
    stack: list[Any] = [summary]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            if "pass_at_1" in node and isinstance(node["pass_at_1"], dict):
                return node["pass_at_1"].get("original")
            if "pass_at_1_original" in node:
                return node["pass_at_1_original"]
            stack.extend(node.values())
    return None


if __name__ == "__main__":
    sys.exit(main())
