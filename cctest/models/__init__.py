"""The code model shipped inside the package, used when the user names no model.

``cctest-code-small`` is a 4.5M-parameter GPT-2 with a byte-level BPE tokenizer, trained on the
Python standard library by ``tools/train_bundled_model.py`` and saved with ``save_pretrained``
(its ``training.json`` records the seed, steps, held-out loss and sample completions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ModelLoadError

BUNDLED_MODEL = "cctest-code-small"


def bundled_model_path() -> Path:
    """The directory of the bundled model; a ModelLoadError if this installation lacks it."""
    path = Path(__file__).resolve().parent / BUNDLED_MODEL
    if not (path / "config.json").is_file():
        raise ModelLoadError(
            f"the bundled model is missing from {path}; reinstall cctest or pass --model DIR."
        )
    return path


def bundled_model_info() -> dict[str, Any]:
    """The bundled model's ``training.json`` (held-out loss, samples, …), or {} if absent."""
    try:
        return dict(json.loads((bundled_model_path() / "training.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, ModelLoadError):
        return {}


__all__ = ["BUNDLED_MODEL", "bundled_model_info", "bundled_model_path"]
