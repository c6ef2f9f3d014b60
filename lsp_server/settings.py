"""The server's settings on the wire: camelCase names under the section ``cctest``.

The single source of truth for clients (the VS Code extension's ``package.json`` mirrors
``OPTIONS`` one to one). Validation is ``cctest.config.Settings.from_mapping``'s: an invalid value
keeps its default and yields one message, which the server shows as a warning.

Settings arrive in ``initializationOptions`` and in ``workspace/didChangeConfiguration``; the
latter's values override the former's key by key (so a client may send only what changed).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cctest.config import Settings

SECTION = "cctest"


def wire_name(field: str) -> str:
    """The camelCase name of a Settings field.

    >>> wire_name("max_new_tokens")
    'maxNewTokens'
    """
    head, *rest = field.split("_")
    return head + "".join(p.title() for p in rest)


def field_name(wire: str) -> str:
    """The Settings field of a camelCase name.

    >>> field_name("maxNewTokens")
    'max_new_tokens'
    """
    return re.sub(r"(?<!^)([A-Z])", r"_\1", wire).lower()


@dataclass(frozen=True)
class Option:
    """One setting as clients see it: wire name, JSON type, default, description."""

    name: str
    type: str  # JSON-schema type(s), e.g. "integer", "string|null"
    default: Any
    description: str
    enum: tuple[str, ...] = ()


_DESCRIPTIONS: dict[str, tuple[str, str]] = {
    # field: (JSON type, description)
    "backend": (
        "string",
        "Where completions come from: `hf` (a local transformers model; default: the bundled one), "
        "`http` (a completion server), `rules` (a deterministic model-free backend for demos and tests).",
    ),
    "model": (
        "string|null",
        "`hf`: a model directory (null: the bundled model); `http`: the server's base URL; "
        "`rules`: optionally `fragile=WORD,...;fail_on=WORD,...` (prompts containing a fragile word "
        "get a different completion, ones containing a fail_on word fail), to demonstrate outliers.",
    ),
    "provider": ("string", "`http` only: the API flavour (`openai` /v1/completions, `ollama`, `tgi`)."),
    "model_name": ("string|null", "`http` only: the `model` field some servers require."),
    "api_key_env": (
        "string",
        "`http` only: the environment variable (of the server process) holding the API key; "
        "the key itself is never a setting.",
    ),
    "schemes": ("array", "Mutation schemes to use (empty: all)."),
    "mutants": ("integer", "k, the number of mutants per request (0-64)."),
    "threshold": ("number|null", "Absolute threshold T of Algorithm 1 (null: use relativeThreshold)."),
    "relative_threshold": (
        "number",
        "T as a fraction of the other completions, T = relativeThreshold x (n-1) (0-1).",
    ),
    "max_distance": ("number", "Drop mutants whose structural distance to the prompt exceeds this (0-1)."),
    "max_new_tokens": ("integer", "Longest completion, in tokens."),
    "temperature": ("number", "Sampling temperature; 0 is greedy."),
    "top_p": ("number", "Nucleus sampling mass (0-1)."),
    "stop": ("array", "Extra stop sequences."),
    "device": ("string", "`hf`: `auto`, `cpu`, `cuda` or `cuda:N`."),
    "dtype": ("string", "`hf`: `auto`, `float32`, `float16` or `bfloat16`."),
    "threads": ("integer", "`hf`: CPU threads for torch (0: torch's default)."),
    "timeout": ("number", "Seconds per backend call before it counts as failed."),
    "max_concurrency": ("integer", "`http`: variant requests in flight at once."),
    "seed": ("integer", "Seed for mutant generation and sampling."),
    "mode": (
        "string",
        "`repair`: answer with the repaired completion; `monitor`: answer with the plain completion "
        "at once and check it in the background; `off`: answer nothing.",
    ),
    "defect_log": (
        "string|null",
        "Path of the SQLite defect log (null: `defects.sqlite3` under the user cache directory).",
    ),
    "log_all": ("boolean", "Record every request in the defect log, not only suspected defects."),
    "debounce_ms": (
        "integer",
        "Wait this long after a request before starting model work; a newer request for the same "
        "document in the meantime wins.",
    ),
}
_ENUMS = {
    "backend": ("hf", "http", "rules"),
    "provider": ("openai", "ollama", "tgi"),
    "mode": ("repair", "monitor", "off"),
    "dtype": ("auto", "float32", "float16", "bfloat16"),
}

# the fields the ENGINE and the SERVER read; every other field configures the backend, and a
# change to one of those re-creates it (and, for hf, reloads the model)
NON_BACKEND_FIELDS = frozenset(
    {
        "schemes",
        "mutants",
        "threshold",
        "relative_threshold",
        "max_distance",
        "mode",
        "defect_log",
        "log_all",
        "debounce_ms",
    }
)


def _default(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


OPTIONS: tuple[Option, ...] = tuple(
    Option(
        name=wire_name(f.name),
        type=_DESCRIPTIONS[f.name][0],
        default=_default(f.default),
        description=_DESCRIPTIONS[f.name][1],
        enum=_ENUMS.get(f.name, ()),
    )
    for f in dataclasses.fields(Settings)
)


def backend_key(settings: Settings) -> tuple[Any, ...]:
    """The part of the settings that decides which backend (and model) is built."""
    return tuple(
        (f.name, getattr(settings, f.name))
        for f in dataclasses.fields(settings)
        if f.name not in NON_BACKEND_FIELDS
    )


def unwrap(raw: Any) -> tuple[dict[str, Any], list[str]]:
    """The ``cctest`` section of what a client sent: ``{"cctest": {...}}`` or the section itself."""
    if raw is None:
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [f"cctest: settings must be an object, not {type(raw).__name__}; the defaults are used."]
    if SECTION in raw:
        inner = raw[SECTION]
        if inner is None:
            return {}, []
        if not isinstance(inner, Mapping):
            return {}, [f"cctest: the '{SECTION}' settings must be an object; the defaults are used."]
        return dict(inner), []
    return dict(raw), []


def parse(raw: Mapping[str, Any] | None) -> tuple[Settings, list[str]]:
    """Validated settings from wire values; invalid values keep defaults, one message each."""
    return Settings.from_mapping(raw or {})


def to_wire(settings: Settings) -> dict[str, Any]:
    """The settings under their wire names (what ``cctest/stats`` reports)."""
    return {wire_name(k): v for k, v in settings.to_dict().items()}


__all__ = [
    "OPTIONS",
    "Option",
    "SECTION",
    "NON_BACKEND_FIELDS",
    "backend_key",
    "field_name",
    "parse",
    "to_wire",
    "unwrap",
    "wire_name",
]
