"""``cctest proxy --upstream URL``: repair the completions an editor plugin asks a model server for."""

from __future__ import annotations

import argparse

from ..config import PROVIDERS, Settings

_DEFAULTS = Settings()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--upstream", required=True, help="the model server's base URL, e.g. http://127.0.0.1:11434"
    )
    p.add_argument(
        "--provider",
        choices=PROVIDERS,
        default="openai",
        help="the API the server and the plugin speak (default openai: /v1/completions)",
    )
    p.add_argument(
        "--mode",
        choices=("repair", "monitor", "off"),
        default="repair",
        help="repair: answer with the repaired completion; monitor: answer with the server's own at "
        "once and record the verdict afterwards; off: pass everything through",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8787, help="port (default 8787; 0: any free port, printed)")
    p.add_argument("-k", "--mutants", type=int, default=_DEFAULTS.mutants, help="mutants per completion")
    p.add_argument(
        "--timeout",
        type=float,
        default=_DEFAULTS.timeout,
        help=f"seconds the server has to answer a request (default {_DEFAULTS.timeout:g})",
    )
    p.add_argument(
        "--completion-scope",
        choices=("line", "block", "auto"),
        default=_DEFAULTS.completion_scope,
        help="line, block (default) or auto",
    )
    p.add_argument("--defect-log", default=None, help="the defect log (default: the language server's)")
    p.add_argument("--log-all", action="store_true", help="record every verdict, not only suspected defects")


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
