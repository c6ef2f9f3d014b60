"""The bundled model's training script, end to end in its tiny configuration (so it cannot rot):
it trains a few steps, saves a model the HF backend loads and generates with, and is
deterministic given its seed."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from safetensors.torch import load_file
from script_module import load_script
from transformers import PreTrainedTokenizerFast

from cctest.backends.base import GenerationOptions
from cctest.backends.fim import FAMILIES, detect
from cctest.backends.hf import HFBackend
from cctest.models import bundled_model_path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "train_bundled_model.py"


def _train(out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), "--tiny", "--threads", "1", "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_tiny_training_run_saves_a_loadable_deterministic_model(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    runs = [_train(a), _train(b)]  # side by side: the two runs must not influence each other
    logs = [p.communicate(timeout=600)[0] for p in runs]
    for p, log in zip(runs, logs, strict=True):
        assert p.returncode == 0, log[-3000:]

    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "training.json",
    ):
        assert (a / name).is_file(), name
    meta = json.loads((a / "training.json").read_text())
    assert meta["steps"] == 4 and meta["held_out_loss"] > 0 and len(meta["samples"]) >= 1

    # deterministic given the seed: the same weights, bit for bit
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys() and all(wa[k].equal(wb[k]) for k in wa)
    assert (a / "tokenizer.json").read_bytes() == (b / "tokenizer.json").read_bytes()

    # the saved model loads through the HF backend and generates
    backend = HFBackend(a, options=GenerationOptions(max_new_tokens=8), threads=1)
    assert backend.context == 128
    gens = backend.with_options(boundaries=False).generate(["def f(x):\n    return ", "import "])
    assert all(g.completion_tokens >= 1 and isinstance(g.text, str) for g in gens)
    assert asyncio.run(backend.complete(["x = "])) != []

    # trained with the FIM objective (half the windows): StarCoder's tokens, detected as such,
    # and the held-out loss measured both ways
    assert detect(backend.tokenizer) == FAMILIES["starcoder"]
    assert meta["fim"]["rate"] == 0.5 and meta["held_out_loss_fim"] > 0
    assert set(meta["held_out_loss_middle"]) == {"fim", "left_to_right"}

    # --init continues a checkpoint: its tokenizer as it is (the FIM tokens not added twice),
    # the losses before recorded, the run it started from named
    c = tmp_path / "c"
    p = _train(c, "--init", str(a))
    log = p.communicate(timeout=600)[0]
    assert p.returncode == 0, log[-3000:]
    meta_c = json.loads((c / "training.json").read_text())
    assert meta_c["init"]["steps"] == 4 and meta_c["init"]["path"] == str(a)
    assert meta_c["init"]["held_out_before"]["left_to_right"] == meta["held_out_loss"]
    assert (c / "tokenizer.json").read_text() == (a / "tokenizer.json").read_text()
    # a continuation of a continuation keeps the whole chain, back to the run from scratch
    d = tmp_path / "d"
    p = _train(d, "--init", str(c))
    log = p.communicate(timeout=600)[0]
    assert p.returncode == 0, log[-3000:]
    meta_d = json.loads((d / "training.json").read_text())
    assert meta_d["init"]["path"] == str(c) and meta_d["init"]["init"]["path"] == str(a)
    assert meta_d["init"]["init"]["held_out_before"] == meta_c["init"]["held_out_before"]
    assert "init" not in meta_d["init"]["init"]  # a was trained from scratch
    assert _trainer().chain_steps(meta_d) == 3 * meta["steps"]


def _trainer() -> Any:
    return load_script(SCRIPT, "train_bundled_model")


def test_a_fim_window_is_laid_out_psm_or_spm() -> None:
    """A window cut at two character positions, each part tokenized apart, in StarCoder's PSM
    and SPM layouts, the middle last and closed by <|endoftext|>, padding without loss."""
    t = _trainer()
    tok = PreTrainedTokenizerFast.from_pretrained(bundled_model_path())
    fim_ids = t.add_fim_tokens(tok)
    assert tok.convert_ids_to_tokens(fim_ids) == ["<fim_prefix>", "<fim_middle>", "<fim_suffix>"]
    text = "def f(x):\n    return x + 1\n"
    window = tok(text)["input_ids"]
    seq = len(window) + 16
    for spm, rng in ((0.0, random.Random(1)), (1.0, random.Random(1))):
        ids, labels, (m0, m1) = t.fim_window(window, tok, fim_ids, rng, spm, seq)
        cut = random.Random(1)  # the draws fim_window makes first
        a, b = sorted((cut.randint(0, len(text)), cut.randint(0, len(text))))
        prefix, middle, suffix = text[:a], text[a:b], text[b:]
        if spm:
            head = "<fim_prefix><fim_suffix>" + suffix + "<fim_middle>" + prefix
        else:
            head = "<fim_prefix>" + prefix + "<fim_suffix>" + suffix + "<fim_middle>"
        n = len([x for x in labels if x != t.IGNORE])
        assert tok.decode(ids[:n]) == head + middle + "<|endoftext|>"
        assert tok.decode(ids[m0:m1]) == middle and len(ids) == len(labels) == seq
        assert labels[n:] == [t.IGNORE] * (seq - n) and ids[m1] == tok.eos_token_id
