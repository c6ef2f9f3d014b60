"""The server's settings on the wire: camelCase names under the section ``cctest``.

``OPTIONS`` is what clients see of each setting, derived from its one description in
``cctest.config`` (``tools/sync_settings.py`` writes the VS Code extension's ``package.json`` and the
docs' table from it). Validation is ``cctest.config.Settings.from_mapping``'s: an invalid value
keeps its default and yields one message, which the server shows as a warning.

Settings arrive in ``initializationOptions`` and in ``workspace/didChangeConfiguration``; the
latter's values override the former's key by key (so a client may send only what changed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cctest.config import SPECS, Settings, Spec, backend_key

SECTION = "cctest"


def wire_name(field: str) -> str:
    """The camelCase name of a Settings field.

    >>> wire_name("max_new_tokens")
    'maxNewTokens'
    """
    head, *rest = field.split("_")
    return head + "".join(p.title() for p in rest)


@dataclass(frozen=True)
class Option:
    """One setting as clients see it: wire name, JSON type, default, description, allowed values."""

    name: str
    type: str  # JSON-schema type(s), e.g. "integer", "string|null"
    default: Any
    description: str
    enum: tuple[str, ...] = ()  # the allowed values (of the items, for an array)
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    backend: bool = True  # a change re-creates the backend


def _option(name: str, spec: Spec, default: Any) -> Option:
    return Option(
        name=wire_name(name),
        type=spec.json_type(),
        default=list(default) if isinstance(default, tuple) else default,
        description=spec.description,
        enum=spec.allowed(),
        minimum=spec.minimum,
        maximum=spec.maximum,
        exclusive_minimum=spec.exclusive_minimum,
        backend=spec.backend,
    )


# derived from cctest.config's one description of each setting
OPTIONS: tuple[Option, ...] = tuple(
    _option(f.name, SPECS[f.name], f.default) for f in dataclasses.fields(Settings)
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
    "backend_key",
    "parse",
    "to_wire",
    "unwrap",
    "wire_name",
]
