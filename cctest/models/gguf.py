"""A cctest model folder as a GGUF file, for llama.cpp's server (and Ollama, LM Studio, llamafile):

    python -m cctest.models.gguf                              # the bundled model -> cctest-code-small.gguf
    python -m cctest.models.gguf MODEL_DIR -o model.gguf [--llama-cpp DIR] [--outtype f16]

The conversion is llama.cpp's own (``convert_hf_to_gguf.py`` and the ``gguf-py`` beside it, from
a llama.cpp source tree: ``--llama-cpp DIR``, ``$CCTEST_LLAMA_CPP``, or the tree that
``scripts/setup-llama.sh`` unpacked), run in a child process, with two things it does not do by
itself for the models cctest makes:

* a GPT-2 folder written by transformers 5 has ``n_positions`` and no ``n_ctx``, which the
  converter's GPT-2 path reads for the context length: ``n_ctx`` is taken from ``n_positions``;
* the converter names a BPE tokenizer's pre-tokenizer by a hash of how it splits a test text, and
  a tokenizer trained by cctest (``tools/train_bundled_model.py``) is in none of its tables. When
  ``tokenizer.json`` is a byte-level BPE with GPT-2's own split (``ByteLevel`` with its regex, no
  prefix space, no normalizer, no byte fallback), that is GPT-2's pre-tokenizer and the file says
  ``gpt-2``; any other unknown tokenizer stays an error.

tests/e2e/llama/test_gguf.py checks that llama.cpp's ids for a text (FIM tokens included) are the
transformers tokenizer's and that its greedy text is transformers' ``generate``'s.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import CCTestError, ConfigError, ModelLoadError
from ..userfile import check_write_target

# where scripts/setup-llama.sh keeps what it fetches and builds, one directory per version
CACHE_ENV = "CCTEST_LLAMA_CACHE"
SOURCE_ENV = "CCTEST_LLAMA_CPP"
OUTTYPES = ("f32", "f16", "bf16", "q8_0")


def llama_cache() -> Path:
    """The directory ``scripts/setup-llama.sh`` builds llama.cpp under (``llama.cpp-VERSION/``)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "cctest")


def installed_llama_cpp_python() -> str | None:
    """The version of llama-cpp-python installed beside cctest, if any: the setup installs the
    version whose llama.cpp it built."""
    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return None


def setup_dir(version: str | None = None) -> Path | None:
    """The setup's directory for ``version`` (default: the installed llama-cpp-python's, else the
    newest there is), or None when there is none."""
    version = version or installed_llama_cpp_python()
    if version:
        path = llama_cache() / f"llama.cpp-{version}"
        return path if path.is_dir() else None
    found = [p for p in llama_cache().glob("llama.cpp-*") if p.is_dir()]

    def key(p: Path) -> tuple[int, ...]:
        return tuple(int(x) if x.isdigit() else -1 for x in p.name.removeprefix("llama.cpp-").split("."))

    return max(found, key=key) if found else None


def llama_cpp_source(explicit: str | Path | None = None) -> Path:
    """A llama.cpp source tree holding ``convert_hf_to_gguf.py`` and ``gguf-py``: ``explicit``,
    ``$CCTEST_LLAMA_CPP``, or the one the setup unpacked; a ConfigError saying how to get one."""
    given = explicit or os.environ.get(SOURCE_ENV)
    if given:
        root = Path(given).expanduser()
        if not (root / "convert_hf_to_gguf.py").is_file() or not (root / "gguf-py").is_dir():
            raise ConfigError(
                f"{root} is not a llama.cpp source tree (no convert_hf_to_gguf.py and gguf-py in it)."
            )
        return root
    base = setup_dir()
    if base is not None:
        for root in sorted(base.glob("llama_cpp_python-*/vendor/llama.cpp")):
            if (root / "convert_hf_to_gguf.py").is_file():
                return root
    raise ConfigError(
        "no llama.cpp source tree to convert with: run 'make setup-e2e' (scripts/setup-llama.sh), "
        f"or pass --llama-cpp DIR (or set {SOURCE_ENV}) naming a llama.cpp checkout."
    )


def gpt2_pretokenizer(tokenizer_json: dict[str, Any]) -> bool:
    """Whether a ``tokenizer.json`` splits text as GPT-2's does: a byte-level BPE with GPT-2's
    regex, no prefix space, no normalizer and no byte fallback.

    >>> gpt2_pretokenizer({"normalizer": None, "model": {"type": "BPE"},
    ...     "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}})
    True
    >>> gpt2_pretokenizer({"normalizer": None, "model": {"type": "BPE"},
    ...     "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True}})
    False
    """
    pre = tokenizer_json.get("pre_tokenizer") or {}
    model = tokenizer_json.get("model") or {}
    return (
        tokenizer_json.get("normalizer") is None
        and model.get("type") == "BPE"
        and not model.get("byte_fallback", False)
        and pre.get("type") == "ByteLevel"
        and pre.get("add_prefix_space") is False
        and pre.get("use_regex", True) is True
    )


def default_output(model_dir: Path) -> Path:
    return Path(f"{model_dir.resolve().name}.gguf")


# Run in the child: llama.cpp's converter with the two adjustments of the module's docstring.
_DRIVER = r"""
import json, logging, sys
from pathlib import Path

root, model, out, outtype, pre = sys.argv[1:6]
sys.path[:0] = [root, str(Path(root) / "gguf-py")]
logging.basicConfig(level=logging.WARNING, format="%(message)s")

import torch
import gguf
from conversion import ModelBase, ModelType, TextModel, get_model_architecture, get_model_class

recognised = TextModel.get_vocab_base_pre

def get_vocab_base_pre(self, tokenizer):
    if pre:
        log = logging.getLogger("hf-to-gguf")
        level = log.level
        log.setLevel(logging.CRITICAL)  # the converter's banner for an unknown hash, answered here
        try:
            return recognised(self, tokenizer)
        except NotImplementedError:
            return pre
        finally:
            log.setLevel(level)
    return recognised(self, tokenizer)

TextModel.get_vocab_base_pre = get_vocab_base_pre

sentencepiece_vocab = TextModel._create_vocab_sentencepiece

def _create_vocab_sentencepiece(self):
    # the Llama path tries a SentencePiece vocabulary first, importing sentencepiece before it
    # looks for tokenizer.model: without that file it is a byte-level BPE folder either way
    if not (self.dir_model / "tokenizer.model").is_file():
        raise FileNotFoundError(self.dir_model / "tokenizer.model")
    return sentencepiece_vocab(self)

TextModel._create_vocab_sentencepiece = _create_vocab_sentencepiece

types = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
         "bf16": gguf.LlamaFileType.MOSTLY_BF16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}
with torch.inference_mode():
    hparams = ModelBase.load_hparams(Path(model), False)
    arch = get_model_architecture(hparams, ModelType.TEXT)
    cls = get_model_class(arch, mmproj=False)
    instance = cls(Path(model), types[outtype], Path(out))
    if "n_ctx" not in instance.hparams and "n_positions" in instance.hparams:
        instance.hparams["n_ctx"] = instance.hparams["n_positions"]
    instance.write()
print(json.dumps({"architecture": arch, "output": out}))
"""


def convert(
    model_dir: str | Path,
    out: str | Path | None = None,
    *,
    llama_cpp: str | Path | None = None,
    outtype: str = "f32",
) -> Path:
    """Write ``model_dir`` (a transformers folder: config.json, weights, tokenizer.json) as a GGUF
    file at ``out`` (default ``NAME.gguf`` in the working directory) and return its path. The file
    appears whole or not at all. ModelLoadError for a folder that is not a model; ConfigError for
    no converter, an unknown tokenizer or a failed conversion (with the converter's last lines)."""
    model = Path(model_dir)
    if not (model / "config.json").is_file():
        raise ModelLoadError(f"{model} is not a model folder (no config.json in it).")
    if outtype not in OUTTYPES:
        raise ConfigError(f"--outtype must be one of {', '.join(OUTTYPES)}, not {outtype!r}.")
    target = Path(out) if out is not None else default_output(model)
    # the file is renamed over ``target``, which replaces whatever is there (``--output /dev/null``)
    check_write_target(target, what="GGUF file", error=ConfigError, link_ok=True)
    root = llama_cpp_source(llama_cpp)
    pre = ""
    tokenizer = model / "tokenizer.json"
    if tokenizer.is_file():
        try:
            if gpt2_pretokenizer(json.loads(tokenizer.read_text(encoding="utf-8"))):
                pre = "gpt-2"
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"cannot read {tokenizer}: {e}.") from e
    partial = target.with_name(target.name + ".partial")
    target.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(root), str(model), str(partial), outtype, pre],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_LOCAL_GGUF": "1"},
    )
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = " | ".join(line for line in proc.stderr.strip().splitlines()[-3:] if line.strip())
        raise ConfigError(f"llama.cpp's converter could not convert {model}: {tail or 'no message'}.")
    os.replace(partial, target)
    return target


def main(argv: list[str] | None = None) -> int:
    from . import bundled_model_path

    ap = argparse.ArgumentParser(
        prog="python -m cctest.models.gguf",
        description="Convert a cctest model folder (default: the bundled model) to a GGUF file "
        "for llama.cpp's server.",
    )
    ap.add_argument("model", nargs="?", help="a model folder (default: the bundled model)")
    ap.add_argument("-o", "--output", help="the GGUF file to write (default: NAME.gguf here)")
    ap.add_argument("--llama-cpp", help=f"a llama.cpp source tree (default: ${SOURCE_ENV}, or the setup's)")
    ap.add_argument(
        "--outtype", default="f32", choices=OUTTYPES, help="the weights' type (default f32: as trained)"
    )
    args = ap.parse_args(argv)
    try:
        model = Path(args.model) if args.model else bundled_model_path()
        path = convert(model, args.output, llama_cpp=args.llama_cpp, outtype=args.outtype)
    except CCTestError as e:
        print(e, file=sys.stderr)
        return 2
    print(path)
    return 0


__all__ = ["convert", "gpt2_pretokenizer", "llama_cache", "llama_cpp_source", "setup_dir"]

if __name__ == "__main__":
    sys.exit(main())
