"""Arguments and helpers shared by several sub-commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..config import SPECS, Settings
from ..document import looks_like_python, read_source

if TYPE_CHECKING:  # (aiohttp, which admission imports, is loaded by the servers alone)
    from ..admission import Limits

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


_UNSET: Any = object()


def add_setting(
    p: Options, name: str, *, shared: bool = False, default: Any = _UNSET, help: Any = _UNSET
) -> argparse.Action:
    """The option of the setting ``name``, generated from its ``Spec`` (``cctest.config.SPECS``):
    its spellings, metavar and help line (``{default}`` filled in), its default (the setting's own;
    ``shared``: see ``default_or_parents``), argparse's type for a number and its choices for a
    name from a fixed list, so a wrong type or name is refused as the command line is parsed and a
    value out of range by ``Settings.replace`` (the settings' one validation). A list (``--scheme``)
    is a repeatable option; a yes/no setting is ``--name``/``--no-name`` when it is on by default,
    else a switch. ``default`` and ``help`` replace the setting's where a command means something
    of its own by the option (``cctest bench --decide-after``: 0, not asked)."""
    spec = SPECS[name]
    value = getattr(_DEFAULTS, name) if default is _UNSET else default
    text = spec.cli_help if help is _UNSET else help
    if isinstance(text, str) and "{default}" in text:
        text = text.replace("{default}", f"{value:g}" if isinstance(value, float) else str(value))
    kwargs: dict[str, Any] = {"help": text}
    if spec.metavar:
        kwargs["metavar"] = spec.metavar
    if spec.kind is tuple:
        kwargs.update(action="append", default=default_or_parents(list(value), shared))
    elif spec.kind is bool:
        action = argparse.BooleanOptionalAction if value else "store_true"
        kwargs.update(action=action, default=default_or_parents(value, shared))
    else:
        kwargs["default"] = default_or_parents(value, shared)
        if spec.kind in (int, float):
            kwargs["type"] = spec.kind
        elif isinstance(spec.choices, tuple) and spec.choices:
            kwargs["choices"] = spec.choices
    return p.add_argument(*spec.option_strings(name), **kwargs)


def add_scheme_argument(p: Options) -> None:
    """``--scheme NAME`` (repeatable); the names are checked by ``cctest.mutators.canonical_schemes``."""
    add_setting(p, "schemes")


# the model's options (``add_backend_arguments``), each a setting of the same name
BACKEND_SETTINGS = (
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


def add_backend_arguments(p: argparse.ArgumentParser, *, shared: bool = False) -> None:
    """The model's options, in their group; ``shared``: see ``default_or_parents``."""
    g = p.add_argument_group("model")
    for name in BACKEND_SETTINGS:
        add_setting(g, name, shared=shared)


def add_connection_bounds(p: Options) -> None:
    """The bounds on clients' connections, the same for ``cctest serve`` and ``cctest proxy``
    (``cctest.admission.Limits``; each unset unless given, so the defaults are ``Limits``' own)."""
    p.add_argument(
        "--request-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="seconds a request's headers may take to arrive, and its body after them; an idle "
        "connection is closed after as long (default 30)",
    )
    p.add_argument(
        "--max-connections",
        metavar="N",
        type=int,
        default=None,
        help="most connections open at a time; more get a 503 (default: the open-file limit less "
        "a tenth, at least 64, kept free)",
    )
    p.add_argument(
        "--max-connections-per-address",
        metavar="N",
        type=int,
        default=None,
        help="most connections open at a time from one client address; more get a 429 (default 256)",
    )


def connection_limits(args: argparse.Namespace) -> Limits:
    """The ``cctest.admission.Limits`` the options of ``add_connection_bounds`` give (checked there:
    a value out of range is one sentence)."""
    from ..admission import Limits

    given = {
        name: value
        for name, value in (
            ("request_timeout", args.request_timeout),
            ("max_connections", args.max_connections),
            ("max_per_address", args.max_connections_per_address),
        )
        if value is not None
    }
    return Limits(**given)


def settings_from_args(args: argparse.Namespace, **extra: object) -> Settings:
    values = {n: getattr(args, n) for n in BACKEND_SETTINGS if hasattr(args, n)}
    values.update(extra)
    return Settings().replace(**values)


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
