"""The real ``cctest serve`` command as a subprocess, for the benchmarks that measure it."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


@contextmanager
def serve_command(args: Sequence[str]) -> Iterator[str]:
    """Start ``python -m cctest serve --port 0 ARGS``; yields its base URL once it listens (the
    line it prints is echoed), and stops it on exit."""
    cmd = [sys.executable, "-m", "cctest", "serve", "--port", "0", *args]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.search(r"(http://\S+?)/v1/completions", line)
        if not match:
            raise SystemExit(f"the server did not start: {line!r}")
        print(line.strip())
        yield match.group(1)
    finally:
        server.terminate()
        server.wait(timeout=60)
