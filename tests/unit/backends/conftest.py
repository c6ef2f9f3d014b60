"""The models the backend tests share: the bundled one (loaded once), small random-weight ones."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.models import bundled_model_path


@pytest.fixture(scope="session")
def hf_model() -> HFBackend:
    """The bundled model, greedy, 32 new tokens; tests derive views with ``with_options``.

    One torch thread: on a machine shared with other jobs, a team of spinning threads is far
    slower than one (the tests measured 30 times slower on a busy 2-core machine)."""
    return HFBackend(None, options=GenerationOptions(max_new_tokens=32), threads=1)


@pytest.fixture(scope="module", params=["llama-gqa", "gpt2"])
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HFBackend]:
    """A small random-weight model with the bundled tokenizer."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    out: Path = tmp_path_factory.mktemp(request.param)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(bundled_model_path() / f, out / f)
    tok = AutoTokenizer.from_pretrained(out, local_files_only=True)
    eos = tok.eos_token_id if tok.eos_token_id is not None else 0
    torch.manual_seed(0)
    model: Any
    if request.param == "gpt2":
        # weights drawn wider than the default so that greedy choices are not near-ties
        gpt2 = GPT2Config(
            vocab_size=len(tok),
            n_embd=64,
            n_layer=2,
            n_head=4,
            n_positions=1024,
            bos_token_id=eos,
            eos_token_id=eos,
            initializer_range=0.3,
        )
        model = GPT2LMHeadModel(gpt2)
    else:
        llama = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=96,
            intermediate_size=192,
            num_hidden_layers=2,
            num_attention_heads=6,
            num_key_value_heads=2,
            max_position_embeddings=1024,
            bos_token_id=eos,
            eos_token_id=eos,
            initializer_range=0.3,
        )
        model = LlamaForCausalLM(llama)
    model.save_pretrained(out)
    yield HFBackend(out, threads=1, fim="off")
