"""The GPU trainer (tools/train_gpu.py), the committed tokenizer (tools/tokenizer-16k) and the
prepared command (tools/gpu_train.sh), each in a tiny configuration on the CPU: a few steps, a
checkpoint that transformers loads and generates with, a resumed run that continues the step
count, and the whole prepared command leaving at most 8 files of at most 16 MiB."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from cctest.backends.fim import FAMILIES, detect

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
TOKENIZER = TOOLS / "tokenizer-16k"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _corpus(root: Path) -> Path:
    """A small corpus as build_corpus.py writes it: standard-library files, two shards."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root.mkdir(parents=True, exist_ok=True)
    for name, files in (
        ("train-00000.jsonl", ["textwrap.py", "shlex.py"]),
        ("heldout-00000.jsonl", ["glob.py"]),
    ):
        with (root / name).open("w", encoding="utf-8") as f:
            for file in files:
                text = (stdlib / file).read_text(encoding="utf-8")
                f.write(json.dumps({"text": text, "dist": "python-stdlib", "path": file}) + "\n")
    (root / "manifest.json").write_text(json.dumps({"python": "3", "totals": {}}))
    return root


def _train(corpus: Path, out: Path, *extra: str) -> str:
    cmd = [sys.executable, str(TOOLS / "train_gpu.py"), "--tiny", "--device", "cpu", "--threads", "1"]
    cmd += ["--corpus", str(corpus), "--out", str(out), "--reserve-s", "0", "--minutes", "5", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    return p.stdout


def test_the_committed_tokenizer_is_16k_byte_level_bpe_with_starcoder_s_fim_tokens() -> None:
    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    assert len(tok) == 16384
    assert tok.convert_ids_to_tokens([0, 1, 2, 3, 4]) == [
        "<|endoftext|>",
        "<fim_prefix>",
        "<fim_middle>",
        "<fim_suffix>",
        "<fim_pad>",
    ]
    assert tok.eos_token_id == tok.pad_token_id == 0
    assert detect(tok) == FAMILIES["starcoder"]  # cctest's FIM detection recognises it
    code = "def f(x):\n    '''Add one.'''\n\treturn x + 1  # é ✓\n"
    ids = tok(code)["input_ids"]
    assert tok.decode(ids) == code  # byte level: any text round-trips
    text = Path(json.__file__).read_text(encoding="utf-8")
    assert len(tok(text)["input_ids"]) < 0.4 * len(text)  # and Python compresses well
    # each FIM token is one token, never split
    assert tok("<fim_prefix>a<fim_suffix>b<fim_middle>")["input_ids"][0] == 1
    size = sum(p.stat().st_size for p in TOKENIZER.iterdir())
    assert size < 3_000_000


def test_train_tokenizer_makes_the_special_tokens_first(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    out = tmp_path / "tok"
    p = subprocess.run(
        [sys.executable, str(TOOLS / "train_tokenizer.py"), "--corpus", str(corpus), "--out", str(out)]
        + ["--vocab", "400", "--sample-mb", "0.01"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    tok = AutoTokenizer.from_pretrained(out)
    assert len(tok) == 400 and tok.convert_ids_to_tokens([0, 1, 4]) == [
        "<|endoftext|>",
        "<fim_prefix>",
        "<fim_pad>",
    ]
    meta = json.loads((out / "training.json").read_text())
    # the sample stops once past 0.01 MB: the first file in hashed order alone
    assert meta["sample_files"] == 1 and meta["vocab_size"] == 400


def test_the_learning_rate_warms_up_holds_and_decays_at_the_end_of_the_budget() -> None:
    t = _load("train_gpu")
    assert t.lr_factor(0, 0.0, 10, 0.25) == pytest.approx(0.1)
    assert t.lr_factor(50, 0.5, 10, 0.25) == 1.0
    assert t.lr_factor(50, 0.875, 10, 0.25) == pytest.approx(0.5)
    assert t.lr_factor(50, 1.0, 10, 0.25) == pytest.approx(0.05)


def test_a_tiny_run_saves_a_loadable_model_and_a_resumed_run_continues_it(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    out, export = tmp_path / "model", tmp_path / "export"
    log = _train(corpus, out, "--max-steps", "3", "--save-every-s", "0", "--export", str(export))
    assert "step 3: final checkpoint" in log
    # the token cache is written once, beside the corpus
    assert len(list(corpus.glob("tokens-train-*.npy"))) == 1
    meta = json.loads((out / "training.json").read_text())
    assert meta["steps"] == 3 and meta["tokens"] == 3 * 4 * 64 and meta["final"]
    assert meta["held_out_loss"] > 0 and set(meta["held_out_loss_middle"]) == {"fim", "left_to_right"}
    assert meta["fim"]["rate"] == 0.5 and meta["architecture"] == "llama"
    assert [h["step"] for h in meta["history"]] == [1, 2, 3]
    assert {p.name for p in export.iterdir()} == {"config.json", "model.safetensors", "training.json"}
    assert (export / "model.safetensors").read_bytes() == (out / "model.safetensors").read_bytes()

    # transformers loads the checkpoint (bf16 safetensors, sdpa) and generates; cctest detects FIM
    model = AutoModelForCausalLM.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(out)
    assert model.config.model_type == "llama"
    assert json.loads((out / "config.json").read_text())["dtype"] == "bfloat16"
    assert {v.dtype for v in load_file(out / "model.safetensors").values()} == {torch.bfloat16}
    assert model.config._attn_implementation == "sdpa"
    ids = tok("def f(x):\n", return_tensors="pt")
    gen = model.generate(**ids, max_new_tokens=3, do_sample=False, pad_token_id=tok.eos_token_id)
    assert gen.shape[1] == ids["input_ids"].shape[1] + 3
    assert detect(tok) == FAMILIES["starcoder"]

    # run again: it resumes at step 3 with the optimizer's state, and goes on to step 5
    log = _train(corpus, out, "--max-steps", "5", "--save-every-s", "100")
    assert "resuming" in log and "step 4 " in log
    meta2 = json.loads((out / "training.json").read_text())
    assert meta2["steps"] == 5 and meta2["resumed_from"] == 3 and meta2["tokens"] == 5 * 4 * 64
    assert [h["step"] for h in meta2["history"]] == [1, 2, 3, 5]
    # --fresh starts over
    _train(corpus, out, "--max-steps", "1", "--fresh")
    assert json.loads((out / "training.json").read_text())["steps"] == 1


def test_a_default_size_model_fits_the_return_limits(tmp_path: Path) -> None:
    """The default model (20.5M parameters) saves as 3 bf16 shards of at most 15 MiB: with its
    index, config and training.json, and the manifest and log, 8 files in all."""
    t = _load("train_gpu")
    args = t.argparse.Namespace(dim=384, ff=1024, layers=8, heads=6, context=2048)
    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    model = t.make_model(args, tok)
    assert 18e6 < sum(p.numel() for p in model.parameters()) < 24e6  # ≤ 48 MB in bf16
    opt = torch.optim.AdamW(model.parameters())
    t.save(model, tok, opt, tmp_path / "m", {"steps": 0, "data_seed": 0}, tmp_path / "export")
    exported = sorted(p.name for p in (tmp_path / "export").iterdir())
    assert len(exported) == 6 and "model.safetensors.index.json" in exported
    assert all((tmp_path / "export" / n).stat().st_size <= 15 * 2**20 for n in exported)


@pytest.mark.skipif(sys.platform == "win32", reason="bash")
def test_the_prepared_command_runs_end_to_end_in_its_tiny_mode(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "GPU_TRAIN_TINY": "1", "PYTHON": sys.executable}
    env |= {"WORK": str(tmp_path / "work"), "BUDGET_S": "400", "CORPUS_ARGS": "--no-stdlib"}
    p = subprocess.run(
        ["bash", str(TOOLS / "gpu_train.sh")], env=env, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    files = sorted(str(f.relative_to(out)) for f in out.rglob("*") if f.is_file())
    assert files == [
        "manifest.json",
        "model/config.json",
        "model/model.safetensors",
        "model/training.json",
        "train.log",
    ]
    log = (out / "train.log").read_text()
    assert "smoke model loads and generates" in log and "building the corpus" in log
    meta = json.loads((out / "model" / "training.json").read_text())
    assert meta["steps"] == 6 and meta["final"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["totals"]["train"]["files"] > 0 and manifest["contamination"]["problems_found"] >= 0
    # the tokenizer stays in the tree: the exported weights load with it
    model = AutoModelForCausalLM.from_pretrained(out / "model")
    assert model.config.vocab_size == len(AutoTokenizer.from_pretrained(TOKENIZER))


def test_a_failing_smoke_run_stops_the_prepared_command(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "GPU_TRAIN_TINY": "1", "PYTHON": sys.executable}
    env |= {"WORK": str(tmp_path / "work"), "CORPUS_ARGS": "--no-stdlib --max-files 50"}
    env["SMOKE_ARGS"] = "--no-such-option"  # the smoke run fails: no main run
    p = subprocess.run(
        ["bash", str(TOOLS / "gpu_train.sh")], env=env, capture_output=True, text=True, timeout=600
    )
    assert p.returncode != 0
    assert "training for" not in (out / "train.log").read_text()
