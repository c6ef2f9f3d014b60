"""The loaded model: a transformers causal language model and its tokenizer, and what every call
on it shares (its lock, its token texts, the last call's prefix cache, the FIM templates it was
asked for), and the texts its tokenizer makes (token texts, chat prompts). ``LoadedModel`` is the
state the HF backend's parts read; ``HFBackend`` (``hf.py``) is a view of one (``_view.View``: its
generation options and settings), and several views share one load.

Below every other module of the HF backend: it imports none of them but ``fim.py`` (and
``base.py``, shared by every backend).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..cache import LRU
from ..config import missing_model_dir
from ..errors import BackendOutOfMemory, ConfigError, ModelLoadError
from ..redact import redact_url
from .base import Message, plain_chat_template
from .fim import FAMILIES, FimTemplate

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


class Reused(NamedTuple):
    """The last call's shared prefix: its token ids and, per layer, its keys and values (batch 1)."""

    ids: list[int]
    kv: list[tuple[Any, Any]]


@dataclass(frozen=True)
class Generation:
    """One row's result: the trimmed completion and what ended it (OpenAI's finish_reason)."""

    text: str
    # "stop": EOS, a stop sequence or a boundary; "length": max_new_tokens; "decided": stopped
    # where an early decision chose another row (``generate_deciding``)
    finish_reason: str
    prompt_tokens: int  # after truncation
    completion_tokens: int  # generated before the row finished


def idle_cores(most: int, loadavg: str = "/proc/loadavg", samples: int = 3) -> int:
    """The cores this process may use without waiting for other work, at least 1 and at most
    ``most``: its CPUs less the threads of other processes runnable now (the kernel's count in
    ``loadavg``'s fourth field less this process's own runnable threads), the fewest of
    ``samples`` counts half a millisecond apart, so that a kernel thread waking for a moment does
    not count. ``most`` where the counts cannot be read."""
    try:
        cpus = len(os.sched_getaffinity(0))
        others = _runnable_elsewhere(loadavg, 0)
        for i in range(1, samples):
            if others == 0:  # no fewer to find: a quiet machine pays one count, no pause
                break
            others = min(others, _runnable_elsewhere(loadavg, i))
    except (OSError, ValueError, IndexError, AttributeError):
        return most
    return max(1, min(most, cpus - others))


def _runnable_elsewhere(loadavg: str, pause: int) -> int:
    """One count of the threads runnable in other processes (after half a millisecond's pause
    when ``pause``)."""
    if pause:
        time.sleep(0.0005)
    with open(loadavg, encoding="ascii") as f:
        running = int(f.read().split()[3].split("/")[0])
    own = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat", encoding="ascii", errors="replace") as f:
                own += f.read().rpartition(")")[2].split()[0] == "R"
        except (OSError, IndexError):
            continue  # a thread that has just ended
    return max(0, running - max(1, own))


class LoadedModel:
    """The loaded model and tokenizer, shared by every HFBackend view of them."""

    def __init__(self, path: Path, device: str, dtype: str, threads: int, adapt_threads: bool = True) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        if threads > 0:
            torch.set_num_threads(threads)
        self.path = path
        self.device = _resolve_device(device)
        # threads 0 on a CPU: as many as the cores left idle by other work, up to torch's default,
        # decided again before each call (``fit_threads``); not for a benchmark (``adapt_threads``
        # False), whose greedy completions must not depend on the machine's load
        self.most_threads = torch.get_num_threads()
        self.auto_threads = adapt_threads and threads == 0 and self.device.type == "cpu"
        self.dtype = _resolve_dtype(dtype, self.device)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except Exception as exc:  # transformers raises OSError, ValueError, … for unusable files
            raise ModelLoadError(f"the tokenizer in {path} cannot be loaded: {_first_line(exc)}.") from exc
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # a progress bar per load is noise in a CLI or a server log
        try:
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=self.dtype)
        except Exception as exc:
            if is_oom(exc):
                raise BackendOutOfMemory(f"loading the model in {path} ran out of memory.") from exc
            raise ModelLoadError(
                f"{path} cannot be loaded as a causal language model: {_first_line(exc)}."
            ) from exc
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        self.model = model.to(self.device).eval()
        config = model.config
        supports = getattr(self.model, "_supports_logits_to_keep", None)
        self.keeps_logits = bool(supports and supports())
        self.layers = int(getattr(config.get_text_config(decoder=True), "num_hidden_layers", 0) or 0)
        # the key/value cache's argument: ``cache`` since transformers 5.2x, where the older
        # ``past_key_values`` still works with a FutureWarning and is to be removed
        self.cache_kw = cache_keyword(self.model)
        # the prefix kept as one copy that attention reads for all rows (else a copy per row)
        self.cascade = _enable_shared_prefix(self.model) and self.layers > 0
        self.context = int(
            getattr(config, "max_position_embeddings", 0) or getattr(config, "n_positions", 0) or 0
        )
        eos = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else config.eos_token_id
        if isinstance(eos, list):
            eos = eos[0] if eos else None
        self.eos_ids = {int(i) for i in ([eos] if eos is not None else []) + _as_list(config.eos_token_id)}
        # the tokens that end a FIM middle (<EOT>, <|file_sep|>, ...) end a completion too
        vocab = self.tokenizer.get_vocab()
        self.eos_ids |= {int(vocab[t]) for tpl in FAMILIES.values() for t in tpl.stops if t in vocab}
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        self.pad_id = int(pad if pad is not None else 0)
        self.start_id = int(eos if eos is not None else self.pad_id)  # the input of an empty prompt
        # cctest pads and masks each batch itself (its pad id goes to generate). transformers drops a
        # mask of all ones, and the model then warns of padding on stderr whenever its config's pad id
        # is at an edge of the input; when that id is also a real token (BOS/EOS: the input of a prompt
        # healed down to nothing) the warning is always wrong, so the loaded config forgets it.
        for cfg in (config, config.get_text_config(decoder=True)):
            if getattr(cfg, "pad_token_id", None) in {self.start_id, *self.eos_ids, config.bos_token_id}:
                cfg.pad_token_id = None
        # rows that share the prompt's head for different lengths make a batch wider than any row
        # (``row_shares``); transformers then warns that the input passed the context, but positions
        # come from the mask and stay within it, so that one warning is dropped
        logging.getLogger("transformers.generation.stopping_criteria").addFilter(_WideBatchFilter())
        self.lock = threading.Lock()
        # the FIM template per `fim` setting: resolving reads the whole vocabulary (about 1 ms),
        # and a request asks several times
        self.fim_templates: dict[str, FimTemplate | None] = {}
        self._texts: list[str] | None = None
        # the key/value cache of the last call's shared prefix (one, under the lock): the next
        # request's prompt mostly extends it, and only the tokens past it are run (``_prefill.prefix_kv``)
        self.reused: Reused | None = None
        self.prefix_tokens = [0, 0]  # prefix tokens taken from ``reused``, and run, since loaded
        self._allowed: LRU[tuple[str, int], Any] = LRU(256)

    def fit_threads(self) -> int:
        """Before a call (on the model thread): with ``threads`` 0 on a CPU, torch's threads set to
        the cores other work leaves idle now (``idle_cores``), at least one and at most torch's
        default. A thread more than there are free cores makes every parallel region wait for a
        thread the kernel has put aside (docs/backend-hf.md, "Threads on a busy machine").
        Otherwise its own number (another model loaded in the process may have set another).
        Returns the threads in use."""
        import torch

        wanted = idle_cores(self.most_threads) if self.auto_threads else self.most_threads
        if wanted != torch.get_num_threads():
            torch.set_num_threads(wanted)
        return wanted

    def token_texts(self) -> list[str]:
        """Every token id's text ("" for special tokens), computed once."""
        if self._texts is None:
            tok = self.tokenizer
            # added tokens marked special count too: a tokenizer may hold its FIM tokens only
            # there, and healing must never take "<fim_middle>" for text to write back
            added = getattr(tok, "added_tokens_decoder", {}) or {}
            special = set(tok.all_special_ids) | {i for i, t in added.items() if getattr(t, "special", False)}
            texts = tok.batch_decode([[i] for i in range(len(tok))], clean_up_tokenization_spaces=False)
            self._texts = ["" if i in special else t for i, t in enumerate(texts)]
        return self._texts

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's chat template (None: the model has none)."""
        template = getattr(self.tokenizer, "chat_template", None)
        return template if isinstance(template, str) and template else None

    def chat_prompt(self, messages: Sequence[Message]) -> str:
        """The text a conversation becomes: the tokenizer's chat template with the assistant's
        turn opened, or ``plain_chat_template`` for a model without one."""
        if self.chat_template is None:
            return plain_chat_template(messages)
        text = self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
        )
        return str(text)

    def allowed(self, rest: str, vocab: int) -> Any:
        """A bool mask over ``vocab`` logits: the tokens that write ``rest`` back, i.e. whose
        text starts with it or is a (non-empty) beginning of it."""
        return self._allowed.get_or_compute((rest, vocab), lambda: self._mask(rest, vocab))

    def _mask(self, rest: str, vocab: int) -> Any:
        import torch

        texts = self.token_texts()
        ok = [bool(t) and (t.startswith(rest) or rest.startswith(t)) for t in texts[:vocab]]
        mask = torch.zeros(vocab, dtype=torch.bool)
        mask[: len(ok)] = torch.tensor(ok, dtype=torch.bool)
        return mask.to(self.device)


class _WideBatchFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "exceeded the model's predefined maximum length" not in record.getMessage()


def attention_kernels(device: Any) -> Any:
    """The SDPA backends a call may use: on CUDA all but cuDNN's. PyTorch prefers cuDNN attention
    on recent GPUs, and it builds an execution plan for every new sequence length: on an H100 and
    an H200 a plain completion of the bundled model took about 1.3 s at each new prompt length
    (every keystroke) and 0.1 s when the length was seen before; flash and memory-efficient
    attention build nothing. Elsewhere, and on a torch without the choice, nothing changes."""
    if getattr(device, "type", None) != "cuda":
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # torch < 2.3: no cuDNN attention to avoid
        return contextlib.nullcontext()
    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])


def cache_keyword(model: Any) -> str:
    """The name under which ``model``'s forward (and ``generate``) take the key/value cache, and
    its outputs return it."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def _enable_shared_prefix(model: Any) -> bool:
    try:
        from ._prefix_attention import enable

        return enable(model)
    except Exception:  # an architecture or transformers version it does not fit: repeat the prefix
        return False


def model_dir(model: str | Path | None) -> Path:
    if model is None:
        from ..models import bundled_model_path

        return bundled_model_path()
    if isinstance(model, str) and "://" in model:
        raise ModelLoadError(
            f"{redact_url(model)} is a server's URL, not a model directory; use --backend http for a server."
        )
    path = Path(model).expanduser()
    if not path.exists():
        raise ModelLoadError(missing_model_dir(str(model)))
    if not path.is_dir():
        raise ModelLoadError(f"{path} is a file; give the directory of a saved model.")
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{path} is not a model directory because it has no config.json.")
    if not any((path / f).is_file() for f in _TOKENIZER_FILES):
        raise ModelLoadError(f"{path} has no tokenizer (tokenizer.json or tokenizer_config.json).")
    return path


def _resolve_device(device: str) -> Any:
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ConfigError(f"'{device}' is not a device; use auto, cpu, cuda or cuda:N.") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device '{device}' was asked for but CUDA is not available here.")
    return dev


def _resolve_dtype(dtype: str, device: Any) -> Any:
    import torch

    if dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]


def is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.OutOfMemoryError | MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "out of memory" in text or "not enough memory" in text or "can't allocate memory" in text
    )


def free_cuda_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _as_list(x: Any) -> list[int]:
    if x is None:
        return []
    return [int(i) for i in x] if isinstance(x, list | tuple) else [int(x)]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n", 1)[0].rstrip(".") or type(exc).__name__
    return text[:200]


__all__ = [
    "Generation",
    "LoadedModel",
    "idle_cores",
    "Reused",
    "attention_kernels",
    "free_cuda_cache",
    "is_oom",
    "model_dir",
]
