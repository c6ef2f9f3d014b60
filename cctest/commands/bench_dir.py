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
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..bench.store import REPORT, R, RunStore, StoredConfig
from ..errors import ConfigError
from ..safe_text import for_stream


def run_in_dir(
    args: argparse.Namespace,
    config: StoredConfig,
    name: str,
    total: int,
    run: Callable[[RunStore[R], list[R]], Coroutine[Any, Any, list[R]]],
) -> int:
    """A run in its directory (--out, or bench-runs/NAME-TIME) for every kind of run: its store
    created or resumed (--resume), ``run(store, done)``, then summary.json, report.html and the
    terminal report. The directory is locked for the whole run (one run writes it at a time); a
    write that fails (a full disk) is one sentence, and the records already written stay."""
    from ..bench.report import summarize_run
    from ..bench.store import RunWriteError, config_view

    out = Path(args.out) if args.out else Path("bench-runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    store: RunStore[R] = RunStore(out)
    view = config_view(config.to_dict())
    try:
        with store.locked(create=not args.resume):
            done = store.prepare(config, args.resume)
            if done:
                summarize_run(out, view, done)  # records it cannot summarise: refused now
                print(
                    f"cctest: resuming {out}: {len(done)} of {total} prompts already done.", file=sys.stderr
                )
            try:
                records = asyncio.run(_interruptible(run(store, done)))
            except KeyboardInterrupt:
                print(
                    f"cctest: interrupted; continue with the same command and --resume --out {out}.",
                    file=sys.stderr,
                )
                raise
            finish(store, view, records)
    except RunWriteError as exc:
        if not store.config_path.is_file():
            raise
        raise ConfigError(
            f"{exc.path} cannot be written ({exc.reason}); the records already written are kept: "
            f"continue with the same command and --resume --out {out} once it can be written."
        ) from None
    return 0


async def _interruptible(run: Coroutine[Any, Any, list[R]]) -> list[R]:
    """``run`` awaited so that Ctrl-C ends it at once, whatever kind of run it is
    (``cctest.bench.runner.stop_on_interrupt``): the records already written stay whole."""
    from ..bench.runner import stop_on_interrupt

    async with stop_on_interrupt():
        return await run


def finish(store: RunStore[R], config: Mapping[str, Any], records: Sequence[R]) -> None:
    """Write the run's summary.json and report.html, and print its terminal report."""
    from ..bench.report import finish_run

    # a task id or a skipped template's reason (a benchmark's text) may hold a screen clear or a
    # title change: escaped on a terminal, as the log lines are; exact to a pipe or a file
    sys.stdout.write(for_stream(finish_run(store, config, records), sys.stdout))
    print(f"cctest: wrote {store.summary_path} and {store.path / REPORT}.", file=sys.stderr)
