"""A benchmark's text in the tables a run prints: escaped on a terminal, exact to a pipe.

A Turbulence template whose generator fails is skipped, and its reason (the generator's own
exception text) is listed in the "Skipped, and why" table of ``bench turbulence`` and ``bench
report``. A hostile benchmark can put a screen clear (``ESC[2J``) or a window-title change (an OSC
sequence) there: on a terminal it is shown as ``\\x1b`` escapes, as the log lines on stderr are;
through a pipe the report is exact. The terminal is a real pseudo-terminal.
"""

from __future__ import annotations

import errno
import os
import pty
import subprocess
import sys
from pathlib import Path

from test_turbulence import write_fixture

CCTEST = Path(sys.executable).parent / "cctest"
HOSTILE = "\x1b[2J\x1b]0;owned\x07"


def _on_a_terminal(*args: str) -> tuple[int, str]:
    """``cctest ARGS`` with its stdout and stderr a pseudo-terminal: (exit status, what it showed)."""
    main, child = pty.openpty()
    proc = subprocess.Popen([str(CCTEST), *args], stdin=subprocess.DEVNULL, stdout=child, stderr=child)
    os.close(child)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError as exc:  # EIO: the terminal's other side is closed (the process ended)
            if exc.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return proc.wait(timeout=120), shown.decode("utf-8", "replace")


def test_a_skipped_template_s_reason_is_escaped_on_a_terminal(tmp_path: Path) -> None:
    clone = write_fixture(tmp_path / "clone")
    (clone / "Benchmark" / "Q2" / "genparams.py").write_text(
        f"def gen_params(q_no, seed):\n    raise ValueError({HOSTILE!r})\n"
    )
    run = tmp_path / "run"
    status, shown = _on_a_terminal(
        "bench", "turbulence", "--benchmark", str(clone), "--instances", "1", "--rounds", "1",
        "--inputs", "5", "--backend", "rules", "--no-progress", "--out", str(run),
    )  # fmt: skip
    assert status == 0, shown
    assert "Skipped, and why" in shown and "Q2" in shown
    assert "\x1b" not in shown and "\x07" not in shown, shown
    assert "\\x1b[2J\\x1b]0;owned\\x07" in shown

    status, shown = _on_a_terminal("bench", "report", str(run))
    assert status == 0, shown
    assert "Skipped, and why" in shown and "\\x1b[2J\\x1b]0;owned\\x07" in shown
    assert "\x1b" not in shown and "\x07" not in shown, shown

    # to a pipe, exact
    piped = subprocess.run(
        [str(CCTEST), "bench", "report", str(run)], capture_output=True, text=True, timeout=120
    )
    assert piped.returncode == 0 and HOSTILE in piped.stdout
