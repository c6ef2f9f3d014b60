"""The run directory of every ``cctest bench`` run, whatever its kind: created or resumed, locked
while the run writes it, finished with its summary and reports.

The completion benchmark (``bench``) and every task suite (``bench_tasks`` and the suites built
on it) run in it, so this module imports none of them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def run_in_dir(
    args: argparse.Namespace,
    config: Any,
    name: str,
    total: int,
    run: Callable[[Path, list[dict[str, Any]]], Coroutine[Any, Any, list[dict[str, Any]]]],
) -> int:
    """A run in its directory (--out, or bench-runs/NAME-TIME) for every kind of run: create it or
    resume it (--resume), run ``run(out, done)``, then write summary.json, report.html and the
    terminal report. The directory is locked for the whole run (one run writes it at a time); a
    write that fails (a full disk) is one sentence, and the records already written stay."""
    from ..bench.report import summarize_run
    from ..bench.runner import CONFIG, RunWriteError, locked_run_dir, prepare_run_dir, run_config

    out = Path(args.out) if args.out else Path("bench-runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        with locked_run_dir(out, create=not args.resume):
            done = prepare_run_dir(out, config, args.resume)
            if done:
                summarize_run(
                    out, run_config(config.to_dict()), done
                )  # records it cannot summarise: refused now
                print(
                    f"cctest: resuming {out}: {len(done)} of {total} prompts already done.", file=sys.stderr
                )
            try:
                records = asyncio.run(run(out, done))
            except KeyboardInterrupt:
                print(
                    f"cctest: interrupted; continue with the same command and --resume --out {out}.",
                    file=sys.stderr,
                )
                raise
            finish(out, run_config(config.to_dict()), records)
    except RunWriteError as exc:
        if not (out / CONFIG).is_file():
            raise
        raise ConfigError(
            f"{exc.path} cannot be written ({exc.reason}); the records already written are kept: "
            f"continue with the same command and --resume --out {out} once it can be written."
        ) from None
    return 0


def finish(out: Path, config: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write the run's summary.json and report.html, and print its terminal report."""
    from ..bench.report import finish_run

    sys.stdout.write(finish_run(out, config, records))
    print(f"cctest: wrote {out / 'summary.json'} and {out / 'report.html'}.", file=sys.stderr)
