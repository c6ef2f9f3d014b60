"""``python -m cctest.models``: print the bundled model's card (Markdown) from its training.json,
with the trainer's recorded samples and the same prompts completed live through cctest's ``hf``
backend (token healing, stopped at the end of the cursor's block)."""

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
    samples = info.get("samples", [])
    for sample in samples:
        lines += _block(sample["prompt"], sample["completion"])
    prompts = [sample["prompt"] for sample in samples]
    if prompts:
        lines += ["The same prompts through cctest's `hf` backend (greedy, 48 new tokens, token", ""]
        lines[-2] += " healing, cut at the end of the cursor's block):"
        for prompt, completion in zip(prompts, _complete(prompts), strict=True):
            lines += _block(prompt, completion)
    return "\n".join(lines)


def _block(prompt: str, completion: str) -> list[str]:
    if completion.strip():
        text = prompt + completion.rstrip()
    else:
        text = prompt.rstrip() + "\n# (the model wrote nothing here)"
    return ["```python", text, "```", ""]


def _complete(prompts: list[str]) -> list[str]:
    from ..backends.base import GenerationOptions
    from ..backends.hf import HFBackend

    backend = HFBackend(None, options=GenerationOptions(max_new_tokens=48), threads=1)
    return [g.text for g in backend.generate(prompts)]


if __name__ == "__main__":
    sys.stdout.write(card())
