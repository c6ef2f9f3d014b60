"""Arguments and helpers shared by several sub-commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ..config import BACKENDS, PROVIDERS, SCOPES, Settings
from ..document import looks_like_python, read_source
from ..redact import redact_url

# the CLI's defaults are the settings' own (each described once, by its Spec in cctest.config)
_DEFAULTS = Settings()

# what ``add_argument`` is called on: a parser or one of its argument groups
Options = argparse._ActionsContainer


class _DeprecatedAlias(argparse.Action):
    """An old spelling of an option, kept for a release: it sets the new option's value and says on
    stderr, in one line, which name to use. Hidden from ``--help`` and from "did you mean"."""

    def __init__(self, option_strings: list[str], dest: str, use: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.use = use

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        print(
            f"cctest: warning: {option_string} is deprecated and will be removed; use {self.use}.",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def add_deprecated_alias(p: Options, old: str, use: str, *, dest: str, type: Any = None) -> None:
    """``old`` as a deprecated spelling of the option ``use`` (whose value is in ``dest``)."""
    p.add_argument(
        old,
        dest=dest,
        type=type,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        action=_DeprecatedAlias,
        use=use,
    )


def default_or_parents(value: Any, shared: bool) -> Any:
    """An option's default, or none at all (``argparse.SUPPRESS``) where it is ``shared``: defined on
    a sub-command's parser as well as on its parent's, where a value given before the sub-command's
    name (read by the parent) must not be overwritten by the sub-command's default."""
    return argparse.SUPPRESS if shared else value


def add_scheme_argument(p: Options) -> None:
    """``--scheme NAME`` (repeatable); the names are checked by ``cctest.mutators.canonical_schemes``."""
    p.add_argument(
        "--scheme",
        action="append",
        default=[],
        metavar="NAME",
        help="restrict to a mutation scheme, in any case (repeatable; default: all)",
    )


def add_backend_arguments(p: argparse.ArgumentParser, *, shared: bool = False) -> None:
    """The model's options, in their group; ``shared``: see ``default_or_parents``."""
    g = p.add_argument_group("model")
    g.add_argument(
        "--backend",
        choices=BACKENDS,
        default=default_or_parents(_DEFAULTS.backend, shared),
        help=(
            "hf: a local transformers model (default: the bundled one); http: a completion server; "
            "rules: a model-free test backend"
        ),
    )
    g.add_argument(
        "--model",
        default=default_or_parents(_DEFAULTS.model, shared),
        help="model directory (hf) or server URL (http); default: the bundled model",
    )
    g.add_argument(
        "--provider",
        choices=PROVIDERS,
        default=default_or_parents(_DEFAULTS.provider, shared),
        help=f"HTTP API flavour (default: {_DEFAULTS.provider})",
    )
    g.add_argument(
        "--model-name",
        default=default_or_parents(_DEFAULTS.model_name, shared),
        help="the model name some servers require (http)",
    )
    g.add_argument(
        "--api-key-env",
        default=default_or_parents(_DEFAULTS.api_key_env, shared),
        help="environment variable holding the API key (http)",
    )
    g.add_argument("--max-new-tokens", type=int, default=default_or_parents(_DEFAULTS.max_new_tokens, shared))
    g.add_argument(
        "--temperature",
        type=float,
        default=default_or_parents(_DEFAULTS.temperature, shared),
        help="0 (greedy, the default) to 2",
    )
    g.add_argument(
        "--top-p",
        type=float,
        default=default_or_parents(_DEFAULTS.top_p, shared),
        help="nucleus sampling mass, above 0 and at most 1",
    )
    g.add_argument(
        "--device",
        default=default_or_parents(_DEFAULTS.device, shared),
        help="auto, cpu, cuda or cuda:N (hf)",
    )
    g.add_argument(
        "--threads",
        type=int,
        default=default_or_parents(_DEFAULTS.threads, shared),
        help="CPU threads for torch, at most the CPU cores; 0: torch's default (hf)",
    )
    g.add_argument(
        "--timeout",
        type=float,
        default=default_or_parents(_DEFAULTS.timeout, shared),
        help="seconds per backend call",
    )
    g.add_argument(
        "--fim",
        default=default_or_parents(_DEFAULTS.fim, shared),
        help=(
            "fill in the middle: auto (detect the template; a server's suffix field), off, a family "
            "(starcoder, qwen, codellama, deepseek, ...; NAME-spm for SPM order) or a layout with "
            "{prefix} and {suffix}"
        ),
    )
    g.add_argument(
        "--completion-scope",
        choices=SCOPES,
        default=default_or_parents(_DEFAULTS.completion_scope, shared),
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
