"""Typed settings shared by the CLI, the language server and the benchmarks.

One dataclass, ``Settings``, with snake_case fields. ``Settings.from_mapping`` accepts the
camelCase names the language server receives on the wire (``maxNewTokens``) as well as
snake_case, validates every value, and returns the settings plus one message per rejected
value (the rejected value keeps its default), so a caller can warn and carry on.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError

BACKENDS = ("hf", "http", "rules")
PROVIDERS = ("openai", "ollama", "tgi")
MODES = ("repair", "monitor", "off")


def default_defect_log() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cctest")) / "defects.sqlite3"


@dataclass(frozen=True)
class Settings:
    backend: str = "hf"  # hf | http | rules
    model: str | None = None  # a model directory (hf), a server URL (http); None: the bundled model
    provider: str = "openai"  # http only: openai | ollama | tgi
    model_name: str | None = None  # http only: the "model" field some servers require
    api_key_env: str = "CCTEST_API_KEY"  # http only: the environment variable holding the key
    schemes: tuple[str, ...] = ()  # empty: every scheme
    mutants: int = 10  # k
    threshold: float | None = None  # absolute T of Algorithm 1; None: use relative_threshold
    relative_threshold: float = 0.8  # T = relative_threshold * (n - 1)
    max_distance: float = 0.1  # structural-distance bound for mutants
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: str = "auto"  # auto | float32 | float16 | bfloat16
    threads: int = 0  # CPU threads for torch; 0: torch's default
    timeout: float = 30.0  # seconds per backend call
    max_concurrency: int = 8  # http: variants in flight at once
    seed: int = 0
    mode: str = "repair"  # repair | monitor | off
    defect_log: str | None = None  # None: the default path under the user's cache directory
    log_all: bool = False  # record every request, not only suspected defects
    debounce_ms: int = 0

    def defect_log_path(self) -> Path:
        return Path(self.defect_log).expanduser() if self.defect_log else default_defect_log()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> tuple[Settings, list[str]]:
        """Settings from a mapping (camelCase or snake_case keys); invalid values keep defaults."""
        errors: list[str] = []
        values: dict[str, Any] = {}
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for key, raw in (data or {}).items():
            name = _snake(key)
            if name not in fields:
                errors.append(f"cctest: unknown setting '{key}' was ignored.")
                continue
            try:
                values[name] = _coerce(name, raw)
            except ConfigError as exc:
                errors.append(f"cctest: setting '{key}': {str(exc)[:-1]}; the default is used.")
        return cls(**values), errors

    def replace(self, **changes: Any) -> Settings:
        for name, value in changes.items():
            try:
                changes[name] = _coerce(name, value)
            except ConfigError as exc:
                raise ConfigError(f"{name.replace('_', '-')}: {exc}") from None
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
            for f in dataclasses.fields(self)
        }


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def _coerce(name: str, raw: Any) -> Any:
    def need(cond: bool, what: str) -> None:
        if not cond:
            raise ConfigError(f"{raw!r} is not {what}.")

    if name in ("backend", "provider", "mode"):
        choices = {"backend": BACKENDS, "provider": PROVIDERS, "mode": MODES}[name]
        need(isinstance(raw, str) and raw in choices, "one of " + ", ".join(choices))
        return raw
    if name in ("model", "model_name", "defect_log"):
        need(raw is None or isinstance(raw, str), "a string")
        return os.path.expanduser(raw) if (raw and name == "defect_log") else (raw or None)
    if name in ("api_key_env", "device", "dtype"):
        need(isinstance(raw, str) and raw != "", "a non-empty string")
        if name == "dtype":
            need(raw in ("auto", "float32", "float16", "bfloat16"), "auto, float32, float16 or bfloat16")
        return raw
    if name in ("schemes", "stop"):
        need(isinstance(raw, (list, tuple)) and all(isinstance(x, str) for x in raw), "a list of strings")
        if name == "schemes":
            from .mutators import SCHEMES

            unknown = [x for x in raw if x not in SCHEMES]
            need(not unknown, "a list of scheme names (" + ", ".join(SCHEMES) + ")")
        return tuple(raw)
    if name in ("mutants", "max_new_tokens", "threads", "max_concurrency", "seed", "debounce_ms"):
        need(isinstance(raw, int) and not isinstance(raw, bool), "an integer")
        low = {
            "mutants": 0,
            "max_new_tokens": 1,
            "threads": 0,
            "max_concurrency": 1,
            "seed": 0,
            "debounce_ms": 0,
        }[name]
        need(raw >= low, f"an integer of at least {low}")
        if name == "mutants":
            need(raw <= 64, "at most 64 mutants")
        return raw
    if name == "threshold":
        need(
            raw is None or (isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw >= 0),
            "a number >= 0",
        )
        return None if raw is None else float(raw)
    if name in ("relative_threshold", "max_distance", "top_p"):
        need(
            isinstance(raw, (int, float)) and not isinstance(raw, bool) and 0 <= raw <= 1,
            "a number from 0 to 1",
        )
        return float(raw)
    if name in ("temperature", "timeout"):
        need(isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw >= 0, "a number >= 0")
        if name == "timeout":
            need(raw > 0, "a positive number of seconds")
        return float(raw)
    if name == "log_all":
        need(isinstance(raw, bool), "true or false")
        return raw
    raise ConfigError(f"no such setting '{name}'.")  # pragma: no cover - fields are enumerated above


__all__ = ["Settings", "BACKENDS", "PROVIDERS", "MODES", "default_defect_log"]
