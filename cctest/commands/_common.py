"""Arguments and helpers shared by several sub-commands."""

from __future__ import annotations

import argparse
import sys

from ..config import BACKENDS, PROVIDERS, SCOPES, Settings
from ..document import looks_like_python, read_source
from ..redact import redact_url


def add_scheme_argument(p: argparse.ArgumentParser) -> None:
    """``--scheme NAME`` (repeatable); the names are checked by ``cctest.mutators.canonical_schemes``."""
    p.add_argument(
        "--scheme",
        action="append",
        default=[],
        metavar="NAME",
        help="restrict to a mutation scheme, in any case (repeatable; default: all)",
    )


def add_backend_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument(
        "--backend",
        choices=BACKENDS,
        default="hf",
        help=(
            "hf: a local transformers model (default: the bundled one); http: a completion server; "
            "rules: a model-free test backend"
        ),
    )
    g.add_argument(
        "--model", default=None, help="model directory (hf) or server URL (http); default: the bundled model"
    )
    g.add_argument(
        "--provider", choices=PROVIDERS, default="openai", help="HTTP API flavour (default: openai)"
    )
    g.add_argument("--model-name", default=None, help="the model name some servers require (http)")
    g.add_argument(
        "--api-key-env", default="CCTEST_API_KEY", help="environment variable holding the API key (http)"
    )
    g.add_argument("--max-new-tokens", type=int, default=64)
    g.add_argument("--temperature", type=float, default=0.0, help="0 (greedy, the default) to 2")
    g.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass, above 0 and at most 1")
    g.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (hf)")
    g.add_argument(
        "--threads",
        type=int,
        default=0,
        help="CPU threads for torch, at most the CPU cores; 0: torch's default (hf)",
    )
    g.add_argument("--timeout", type=float, default=30.0, help="seconds per backend call")
    g.add_argument(
        "--fim",
        default="auto",
        help=(
            "fill in the middle: auto (detect the template; a server's suffix field), off, a family "
            "(starcoder, qwen, codellama, deepseek, ...; NAME-spm for SPM order) or a layout with "
            "{prefix} and {suffix}"
        ),
    )
    g.add_argument(
        "--completion-scope",
        choices=SCOPES,
        default="block",
        help="line, block (default) or auto (a line inside an unfinished line, a block on an empty one)",
    )


def settings_from_args(args: argparse.Namespace, **extra: object) -> Settings:
    names = (
        "backend",
        "model",
        "provider",
        "model_name",
        "api_key_env",
        "max_new_tokens",
        "temperature",
        "top_p",
        "device",
        "threads",
        "timeout",
        "fim",
        "completion_scope",
    )
    values = {n: getattr(args, n) for n in names if hasattr(args, n)}
    values.update(extra)
    return Settings().replace(**values)


def recorded_model(settings: Settings) -> str | None:
    """The model as a run records it: the bundled model by name, a server URL without secrets."""
    from ..models import BUNDLED_MODEL

    if settings.model is None:
        return f"{BUNDLED_MODEL} (bundled)" if settings.backend == "hf" else None
    return redact_url(settings.model)


def read_python(path: str) -> str:
    """The source at ``path`` (see ``read_source``), with one warning on stderr when the file does not
    say it is Python: the schemes and the completion's boundaries are Python's."""
    text = read_source(path)
    if not looks_like_python(path, text):
        print(
            f"cctest: warning: {path} does not look like Python (no .py suffix or python #! line); "
            "cctest mutates and completes Python code.",
            file=sys.stderr,
        )
    return text
