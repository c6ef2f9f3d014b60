"""``python -m cctest.models``: print the bundled model's card (Markdown) from its training.json."""

from __future__ import annotations

import sys

from . import bundled_model_info, bundled_model_path


def card() -> str:
    info = bundled_model_info()
    if not info:
        return f"no training.json in {bundled_model_path()}\n"
    a = info.get("args", {})
    hours = info.get("seconds", 0) / 3600
    lines = [
        f"- {info['parameters'] / 1e6:.2f}M parameters (GPT-2: {a.get('layers')} layers, "
        f"{a.get('heads')} heads, width {a.get('dim')}, context {a.get('context')}, "
        f"byte-level BPE vocabulary of {a.get('vocab')})",
        f"- trained {info['steps']:,} steps of {a.get('batch')} x {a.get('seq')} tokens "
        f"(seed {info['seed']}, {hours:.1f} h of CPU) on the standard library of "
        f"Python {info.get('python')}: {info['train_tokens']:,} training tokens",
        f"- held-out loss {info['held_out_loss']} (perplexity {info['held_out_perplexity']}) on "
        f"{info['held_out_tokens']:,} tokens of held-out standard-library files",
        "",
        "Greedy completions (48 new tokens, as recorded by the trainer):",
        "",
    ]
    for sample in info.get("samples", []):
        completion = sample["completion"]
        if completion.strip():
            text = sample["prompt"] + completion.rstrip()
        else:
            text = sample["prompt"].rstrip() + "\n# (the model wrote only blank lines here)"
        lines += ["```python", text, "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(card())
