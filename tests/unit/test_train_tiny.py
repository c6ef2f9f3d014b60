"""The bundled model's training script, end to end in its tiny configuration (so it cannot rot):
it trains a few steps, saves a model the HF backend loads and generates with, and is
deterministic given its seed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from safetensors.torch import load_file

from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "train_bundled_model.py"


def _train(out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), "--tiny", "--threads", "1", "--out", str(out)],
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
