"""Start the cctest language server: ``cctest-lsp`` or ``python -m lsp_server``.

stdio by default; ``--tcp HOST:PORT`` listens on a socket instead (port 0: a free one) and
prints the address it listens on. Logs go to stderr or
``--log-file``, never to stdout: over stdio, stdout IS the protocol, so before serving, the real
stdout is kept for pygls alone and file descriptor 1 is pointed at stderr, so a stray ``print``
(or a C library writing to fd 1) cannot corrupt the LSP stream.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from cctest.cli import SentenceParser
from cctest.errors import InputError
from cctest.redact import RedactingFormatter
from cctest.userfile import check_write_target


def _parse_tcp(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f"'{value}' is not HOST:PORT, e.g. 127.0.0.1:2087 (port 0: a free one)"
        )
    return host.strip("[]") or "127.0.0.1", int(port)


def build_parser() -> argparse.ArgumentParser:
    p = SentenceParser(
        prog="cctest-lsp", description="The cctest language server: repaired code completions over LSP."
    )
    p.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    p.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        type=_parse_tcp,
        default=None,
        help="listen on a TCP socket instead of stdio (port 0: a free one); prints the address",
    )
    p.add_argument("--log-file", default=None, help="append logs to this file instead of stderr")
    p.add_argument(
        "--log-level", default="info", choices=("debug", "info", "warning", "error"), help="default: info"
    )
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


def _configure_logging(level: str, log_file: str | None) -> None:
    handler: logging.Handler = (
        logging.FileHandler(log_file, encoding="utf-8") if log_file else logging.StreamHandler(sys.stderr)
    )
    # no URL credentials in the log, even in the messages pygls logs at debug level
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper()))
    # pygls logs every message body at INFO: only with --log-level debug
    if level != "debug":
        logging.getLogger("pygls").setLevel(max(logging.WARNING, root.level))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.version:
        from cctest import __version__

        print(f"cctest-lsp {__version__}")
        return 0
    try:
        if args.log_file:  # appending to a pipe would wait for a reader, to a device lose the log
            check_write_target(args.log_file, what="log file")
        _configure_logging(args.log_level, args.log_file)
    except InputError as exc:
        print(f"cctest-lsp: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"cctest-lsp: cannot write the log file {args.log_file}: {exc.strerror or exc}.", file=sys.stderr
        )
        return 2

    protocol_out = None
    if args.tcp is None:
        # keep the real stdout for the protocol; everything else written to fd 1 goes to stderr
        protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
        sys.stdout = sys.stderr

    from .server import server  # after the redirect: importing torch & co may print

    if args.tcp is None:
        assert protocol_out is not None
        server.start_io(sys.stdin.buffer, protocol_out)
        return 0
    host, port = args.tcp
    try:
        server.start_tcp(host, port, announce=_announce)
    except OSError as exc:
        print(f"cctest-lsp: cannot listen on {host}:{port}: {exc.strerror or exc}.", file=sys.stderr)
        return 2
    return 0


def _announce(address: str) -> None:
    print(f"cctest-lsp: listening on {address}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
