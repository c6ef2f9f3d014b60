"""``cctest proxy --upstream URL``: repair the completions an editor plugin asks a model server for."""

from __future__ import annotations

import argparse
import sys

from ..config import Settings
from ._common import add_setting


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
    add_setting(p, "mutants", help="mutants per completion")
    add_setting(p, "timeout", help="seconds the server has to answer a request (default {default})")
    add_setting(p, "completion_scope", help="line, block (default) or auto")
    add_setting(p, "defect_log")
    add_setting(p, "log_all")


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..proxy import ProxyConfig
    from ..proxy import run as serve

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"port {args.port} is out of range; give a number from 0 to 65535.")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"cctest: warning: listening on {args.host}: the proxy has no authentication of its own "
            "and forwards every request to the upstream with the caller's credentials.",
            file=sys.stderr,
        )
    settings = Settings().replace(
        mutants=args.mutants,
        timeout=args.timeout,
        completion_scope=args.completion_scope,
        defect_log=args.defect_log,
        log_all=args.log_all,
    )
    config = ProxyConfig(args.upstream, provider=args.provider, mode=args.mode, settings=settings)
    try:
        serve(config, args.host, args.port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc}).") from exc
    return 0
