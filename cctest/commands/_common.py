"""Arguments and helpers shared by several sub-commands."""

from __future__ import annotations

import argparse
import sys

from ..config import BACKENDS, PROVIDERS, SCOPES, Settings
from ..document import looks_like_python, read_source
from ..redact import redact_url

# the CLI's defaults are the settings' own (each described once, by its Spec in cctest.config)
_DEFAULTS = Settings()


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
        default=_DEFAULTS.backend,
        help=(
            "hf: a local transformers model (default: the bundled one); http: a completion server; "
            "rules: a model-free test backend"
        ),
    )
    g.add_argument(
        "--model",
        default=_DEFAULTS.model,
        help="model directory (hf) or server URL (http); default: the bundled model",
    )
    g.add_argument(
        "--provider",
        choices=PROVIDERS,
        default=_DEFAULTS.provider,
        help=f"HTTP API flavour (default: {_DEFAULTS.provider})",
    )
    g.add_argument(
        "--model-name", default=_DEFAULTS.model_name, help="the model name some servers require (http)"
    )
    g.add_argument(
        "--api-key-env", default=_DEFAULTS.api_key_env, help="environment variable holding the API key (http)"
    )
    g.add_argument("--max-new-tokens", type=int, default=_DEFAULTS.max_new_tokens)
    g.add_argument(
        "--temperature", type=float, default=_DEFAULTS.temperature, help="0 (greedy, the default) to 2"
    )
    g.add_argument(
        "--top-p", type=float, default=_DEFAULTS.top_p, help="nucleus sampling mass, above 0 and at most 1"
    )
    g.add_argument("--device", default=_DEFAULTS.device, help="auto, cpu, cuda or cuda:N (hf)")
    g.add_argument(
        "--threads",
        type=int,
        default=_DEFAULTS.threads,
        help="CPU threads for torch, at most the CPU cores; 0: torch's default (hf)",
    )
    g.add_argument("--timeout", type=float, default=_DEFAULTS.timeout, help="seconds per backend call")
    g.add_argument(
        "--fim",
        default=_DEFAULTS.fim,
        help=(
            "fill in the middle: auto (detect the template; a server's suffix field), off, a family "
            "(starcoder, qwen, codellama, deepseek, ...; NAME-spm for SPM order) or a layout with "
            "{prefix} and {suffix}"
        ),
    )
    g.add_argument(
        "--completion-scope",
        choices=SCOPES,
        default=_DEFAULTS.completion_scope,
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
