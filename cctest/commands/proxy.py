"""``cctest proxy --upstream URL``: repair the completions an editor plugin asks a model server for."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..config import Settings
from ._common import add_connection_bounds, add_setting, connection_limits


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--upstream", required=True, help="the model server's base URL, e.g. http://127.0.0.1:11434"
    )
    add_setting(
        p, "provider", help="the API the server and the plugin speak (default {default}: /v1/completions)"
    )
    add_setting(
        p,
        "mode",
        help="repair: answer with the repaired completion; monitor: answer with the server's own at "
        "once and record the verdict afterwards; off: pass everything through",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8787, help="port (default 8787; 0: any free port, printed)")
    add_setting(p, "timeout", help="seconds the server has to answer a request (default {default})")
    add_bounds(p)
    add_setting(p, "defect_log")
    add_setting(p, "log_all")
    # the engine's options, those of ``cctest complete`` (the model's own, such as the length and
    # the temperature, come with each of the plugin's requests)
    g = p.add_argument_group("engine")
    add_setting(g, "mutants", help="mutants per completion (default {default})")
    for name in ("threshold", "relative_threshold", "schemes", "max_distance"):
        add_setting(g, name)
    add_setting(
        g,
        "decide_after",
        help="choose on every row's first N streamed tokens and close the other rows' streams "
        "(default {default}; 0: every row completed whole before choosing)",
    )
    add_setting(g, "completion_scope", help="line, block (default) or auto")


def add_bounds(p: argparse.ArgumentParser) -> None:
    """The bounds on clients (as ``cctest serve``'s) and on what a repair may hold."""
    g = p.add_argument_group("bounds")
    add_connection_bounds(g)
    g.add_argument(
        "--max-prompt-chars",
        metavar="N",
        type=int,
        default=None,
        help="code before and after the cursor repaired at most; a longer prompt passes through "
        "unrepaired (default 262144)",
    )
    g.add_argument(
        "--max-repairs",
        metavar="N",
        type=int,
        default=None,
        help="repairs in flight at once; more requests pass through unrepaired (default 8)",
    )


def bounds_from(args: argparse.Namespace) -> dict[str, Any]:
    """``ProxyConfig``'s bounds from the command line (those given; checked where they are kept)."""
    out: dict[str, Any] = {"limits": connection_limits(args)}
    for name in ("max_prompt_chars", "max_repairs"):
        if getattr(args, name) is not None:
            out[name] = getattr(args, name)
    return out


# the settings the command line sets, each a setting of the same name (``--scheme``: ``schemes``)
ENGINE_SETTINGS = (
    "mutants",
    "threshold",
    "relative_threshold",
    "schemes",
    "max_distance",
    "decide_after",
    "completion_scope",
    "timeout",
    "defect_log",
    "log_all",
)


def settings_from(args: argparse.Namespace) -> Settings:
    """The engine's settings from the command line (checked by ``Settings.replace``: a value out of
    range is one sentence and exit status 2)."""
    values = {name: getattr(args, name) for name in ENGINE_SETTINGS if name != "schemes"}
    return Settings().replace(schemes=tuple(args.scheme), **values)


def run(args: argparse.Namespace) -> int:
    from ..admission import headroom_warning
    from ..errors import ConfigError
    from ..proxy import ProxyConfig
    from ..proxy import run as serve
    from ..userfile import check_write_target

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"port {args.port} is out of range; give a number from 0 to 65535.")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"cctest: warning: listening on {args.host}: the proxy has no authentication of its own "
            "and forwards every request to the upstream with the caller's credentials.",
            file=sys.stderr,
        )
    bounds = bounds_from(args)
    warning = headroom_warning(bounds["limits"].max_connections)
    if warning is not None:
        print(f"cctest: warning: {warning}", file=sys.stderr)
    settings = settings_from(args)
    # the defect log is opened at the first repair: a special file there is refused now, not then
    check_write_target(settings.defect_log_path(), what="defect log", error=ConfigError)
    config = ProxyConfig(args.upstream, provider=args.provider, mode=args.mode, settings=settings, **bounds)
    try:
        serve(config, args.host, args.port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc}).") from exc
    return 0
