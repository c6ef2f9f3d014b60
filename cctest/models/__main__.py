"""``python -m cctest.models``: print the bundled model's card (Markdown) from its training.json,
with the trainer's recorded samples and the same prompts completed live through cctest's ``hf``
backend (token healing, stopped at the end of the cursor's block)."""

from __future__ import annotations

import json
import sys

from . import bundled_model_info, bundled_model_path


def card() -> str:
    info = bundled_model_info()
    if not info:
        return f"no training.json in {bundled_model_path()}\n"
    a = info.get("args", {})
    chain = _chain(info)  # this run, the run it continued, …, the run from scratch
    first = chain[-1]
    hours = sum(run.get("seconds", 0) for run in chain) / 3600
    lines = [
        f"- {info['parameters'] / 1e6:.2f}M parameters (GPT-2: {a.get('layers')} layers, "
        f"{a.get('heads')} heads, width {a.get('dim')}, context {a.get('context')}, "
        f"byte-level BPE vocabulary of {first.get('args', a).get('vocab')}"
        + (", plus StarCoder's three FIM tokens)" if info.get("fim") else ")"),
        f"- trained {first['steps']:,} steps of {a.get('batch')} x {a.get('seq')} tokens "
        f"(seed {first['seed']}) on the standard library of "
        f"Python {info.get('python')}: {info['train_tokens']:,} training tokens",
    ]
    for run in reversed(chain[:-1]):
        fim = run.get("fim") or {}
        lines.append(
            f"- then {run['steps']:,} more steps (seed {run['seed']}) with the fill-in-the-middle "
            f"objective: {fim.get('rate', 0):.0%} of the windows cut at two random characters "
            f"into prefix, middle and suffix, {fim.get('spm_rate', 0):.0%} of those in SPM order"
        )
    lines.append(f"- {hours:.1f} h of CPU in all")
    lines += _losses(info)
    declared = _declared_fim()
    if declared:
        lines.append(
            f"- its tokenizer_config.json declares the FIM template `{declared}`, which `fim` `auto` uses"
        )
    lines += [
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


def _losses(info: dict) -> list[str]:
    """The held-out losses (and, for a model continued from another, that model's)."""
    lines = [
        f"- held-out loss {info['held_out_loss']} (perplexity {info['held_out_perplexity']}) on "
        f"{info['held_out_tokens']:,} tokens of held-out standard-library files"
    ]
    chain = _chain(info)
    # the first continuation's starting point: the model before any FIM training
    before = (chain[-2].get("init") or {}).get("held_out_before") if len(chain) > 1 else None
    if "held_out_loss_fim" in info:
        middle = info["held_out_loss_middle"]
        lines.append(
            f"- on {info.get('held_out_windows')} of those windows cut as FIM windows: loss "
            f"{info['held_out_loss_fim']} over every token; on the middle's tokens alone "
            f"{middle['fim']} with the code after it shown, {middle['left_to_right']} without"
        )
    if before:
        lines.append(
            f"- before the FIM training (its FIM tokens' embeddings untrained): left to right "
            f"{before['left_to_right']}, FIM windows {before['fim']}, middle with the code after "
            f"it {before['middle_fim']}, without {before['middle_left_to_right']}"
        )
    return lines


def _declared_fim() -> str | None:
    from ..backends.fim import DECLARED

    try:
        config = json.loads((bundled_model_path() / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config.get(DECLARED)


def _chain(info: dict) -> list[dict]:
    """The model's record, then the record of each run it continued (``init``), back to the run
    that trained it from scratch."""
    chain = [info]
    while chain[-1].get("init"):
        chain.append(chain[-1]["init"])
    return chain


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
