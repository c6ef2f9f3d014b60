"""``cctest serve [--model DIR]``: OpenAI-compatible completions and chat over a local model."""

from __future__ import annotations

import argparse

from ._common import add_connection_bounds, add_setting, connection_limits


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_setting(p, "model", help="model directory (default: the bundled model)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port, printed)")
    add_setting(p, "device", help="auto, cpu, cuda or cuda:N")
    add_setting(p, "dtype")
    add_setting(p, "threads", help="CPU threads for torch, at most the CPU cores; 0: torch's default")
    p.add_argument(
        "--max-batch", type=int, default=32, help="most prompts in one batched generate (default 32)"
    )
    p.add_argument(
        "--max-prompts",
        type=int,
        default=None,
        help="most prompts in one request (default 256); a larger request gets a 400",
    )
    add_connection_bounds(p)
    p.add_argument(
        "--batch-wait-ms",
        type=float,
        default=5.0,
        help="how long to wait for more requests to batch (default 5)",
    )


def run(args: argparse.Namespace) -> int:
    from ..backends.hf import HFBackend
    from ..config import Settings
    from ..errors import ConfigError
    from ..model_load import load
    from ..serve import run as serve

    if args.max_batch < 1 or (args.max_prompts is not None and args.max_prompts < 1):
        raise ConfigError("--max-batch and --max-prompts must be at least 1.")
    limits = {} if args.max_prompts is None else {"max_prompts": args.max_prompts}
    connections = connection_limits(args)  # checked before the model loads
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"port {args.port} is out of range; give a number from 0 to 65535.")
    settings = Settings().replace(
        model=args.model, device=args.device, dtype=args.dtype, threads=args.threads
    )
    backend = load(HFBackend.from_settings, settings)  # told on stderr before the address is
    try:
        serve(
            backend,
            args.host,
            args.port,
            max_batch=args.max_batch,
            wait_ms=args.batch_wait_ms,
            limits=connections,
            **limits,
        )
    except OSError as exc:  # the port is taken or the address is not this machine's
        raise ConfigError(f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc}).") from exc
    return 0
