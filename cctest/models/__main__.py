"""``python -m cctest.models``: print the bundled model's card (Markdown) from its training.json."""

from __future__ import annotations

import sys

from . import bundled_model_info, bundled_model_path


def card() -> str:
    info = bundled_model_info()
    if not info:
        return f"no training.json in {bundled_model_path()}\n"
    args = info.get("args", {})
    lines = [
        f"- {info['parameters'] / 1e6:.2f}M parameters (GPT-2: {args.get('layers')} layers, {args.get('heads')} heads, "
        f"width {args.get('dim')}, context {args.get('context')}, byte-level BPE vocabulary of {args.get('vocab')})",
        f"- trained {info['steps']:,} steps of {args.get('batch')} x {args.get('seq')} tokens (seed {info['seed']}, "
        f"{info.get('seconds', 0) / 3600:.1f} h of CPU) on the standard library of Python {info.get('python')}: "
        f"{info['train_tokens']:,} training tokens",
        f"- held-out loss {info['held_out_loss']} (perplexity {info['held_out_perplexity']}) on "
        f"{info['held_out_tokens']:,} tokens of held-out standard-library files",
        "",
        "Greedy completions (48 new tokens, as recorded by the trainer):",
        "",
    ]
    for sample in info.get("samples", []):
        lines += ["```python", sample["prompt"] + sample["completion"], "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(card())
