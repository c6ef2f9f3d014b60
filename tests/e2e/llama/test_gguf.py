"""``cctest.models.gguf`` against llama.cpp itself: the bundled model as GGUF, served by
``llama-server``, tokenizes every text (FIM tokens included) to the transformers tokenizer's ids
and writes transformers' greedy text; the 135M Llama shape (random weights, the bundled tokenizer)
converts and tokenizes alike; a folder that is not a model, or a tokenizer that is not GPT-2's
byte-level one, is one sentence and exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from llama_helpers import ROOT, Server, llama_server
from transformers import AutoModelForCausalLM, AutoTokenizer

from cctest.models import bundled_model_path
from cctest.models.gguf import convert

TEXTS = [
    "def add(a, b):\n    return a + b\n",
    "<fim_prefix>def area(r):\n    <fim_suffix>\n    return result\n<fim_middle>",
    "<fim_suffix>\n        return x\n<fim_prefix>class Point:\n    def norm(self):<fim_middle>",
    "    \n\n\t\tx = 1  # a comment with 🚀 and naïve café\n",
    "import os, sys\nfrom collections import OrderedDict as OD\n\n\n",
    "<|endoftext|>if __name__ == '__main__':\n    main()\n",
    "values = [3, 33, 333, 3333, 3.14, 0x1F, 1e-5]  \t  \n",
    "s = f'{name!r:>10}' + \"\"\"doc\"\"\" + r'\\d+'  ''''''\n",
]

PROMPTS = [
    "def fibonacci(n):\n    ",
    "import os\n\n\ndef read_lines(path):\n    with open(path) as f:\n        ",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n        ",
    "for i in range(10):\n    if i % 2 == 0:\n        ",
    "def parse_args(argv):\n    parser = argparse.ArgumentParser()\n    parser.add_argument(",
    "    def __repr__(self):\n        return ",
    "try:\n    import json\nexcept ImportError:\n    ",
]
NEW_TOKENS = 24


def _tokenize(server: Server, text: str) -> list[int]:
    return list(server.post("/tokenize", {"content": text, "add_special": False})["tokens"])


def _greedy_ids(server: Server, prompt: str) -> list[int]:
    answer = server.post(
        "/completion",
        {
            "prompt": prompt,
            "n_predict": NEW_TOKENS,
            "temperature": 0,
            "cache_prompt": False,
            "return_tokens": True,
        },
    )
    return list(answer["tokens"])


def test_the_bundled_model_tokenizes_as_transformers_does(llama_defaults: Server) -> None:
    tok = AutoTokenizer.from_pretrained(bundled_model_path())
    for text in TEXTS:
        assert _tokenize(llama_defaults, text) == tok(text, add_special_tokens=False).input_ids, text


def test_the_bundled_models_greedy_text_is_transformers(llama_defaults: Server) -> None:
    path = bundled_model_path()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    for prompt in PROMPTS:
        ids = tok(prompt, return_tensors="pt").input_ids
        with torch.inference_mode():
            out = model.generate(
                ids, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=tok.eos_token_id
            )
        expected = out[0, ids.shape[1] :].tolist()
        assert _greedy_ids(llama_defaults, prompt) == expected, prompt


@pytest.fixture(scope="module")
def llama135m(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The 135M Llama shape of the benchmarks (random weights, the bundled tokenizer): its folder
    and its GGUF."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from repair_latency import random_llama
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    with random_llama("llama135m") as folder:
        yield folder, convert(folder, tmp_path_factory.mktemp("gguf135m") / "llama135m.gguf")


def test_the_135m_llama_shape_converts_tokenizes_and_writes_as_transformers_does(
    llama135m: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, gguf = llama135m
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    with llama_server(gguf, tmp_path, "-c", "2048") as server:
        props = server.get("/props")
        assert props["default_generation_settings"]["n_ctx"] == 2048
        for text in TEXTS:
            assert _tokenize(server, text) == tok(text, add_special_tokens=False).input_ids, text
        for prompt in PROMPTS[:3]:
            ids = tok(prompt, return_tensors="pt").input_ids
            with torch.inference_mode():
                out = model.generate(
                    ids, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=tok.eos_token_id
                )
            assert _greedy_ids(server, prompt) == out[0, ids.shape[1] :].tolist(), prompt


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cctest.models.gguf", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )


def test_a_folder_that_is_not_a_model_is_one_sentence(tmp_path: Path) -> None:
    done = _cli(str(tmp_path), "-o", str(tmp_path / "x.gguf"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"{tmp_path} is not a model folder (no config.json in it)."
    assert not list(tmp_path.glob("*.gguf*"))


def test_a_tokenizer_that_is_not_gpt2s_stays_an_error(tmp_path: Path, bundled_gguf: Path) -> None:
    """With a prefix space the split is not GPT-2's: the converter's refusal, and no file."""
    folder = tmp_path / "model"
    shutil.copytree(bundled_model_path(), folder)
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["pre_tokenizer"]["add_prefix_space"] = True
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    done = _cli(str(folder), "-o", str(tmp_path / "x.gguf"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"llama.cpp's converter could not convert {folder}: ")
    assert "pre-tokenizer was not recognized" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob("*.gguf*"))
