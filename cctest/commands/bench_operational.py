"""``cctest bench operational``: the operational-robustness suite (Ghosh Paul et al.) against a model.

cctest bench operational [--tasks FILE.jsonl | --dataset humaneval] [--vectors glove.txt]
                         [--budget 20] [--n 5] [--k 5] [--widen-n 1] [--widen-k 1]
                         [--metric lev_word] [--reference original|tests] [--cross-encoder DIR]
                         [--answers-cache FILE] [--backend ... --model ...] --out RUN_DIR

The options of ``cctest bench tasks`` (chat or completion, the oracle's limits, --limit, resume)
apply as well; one answer per query (temperature 0 by default).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cctest bench operational")
    g.add_argument(
        "--vectors", default=None, help="neighbours from a GloVe-format vectors file (default WordNet)"
    )
    g.add_argument(
        "--budget", type=int, default=20, help="model queries per task, the original's included (default 20)"
    )
    g.add_argument("--n", dest="op_n", type=int, default=5, help="nearest neighbours per word (default 5)")
    g.add_argument("--k", dest="op_k", type=int, default=5, help="highest paraphrase order (default 5)")
    g.add_argument(
        "--widen-n", type=int, default=1, help="c_n: n's step when every paraphrase passed (default 1)"
    )
    g.add_argument(
        "--widen-k", type=int, default=1, help="c_k: k's step when every paraphrase passed (default 1)"
    )
    g.add_argument(
        "--metric", default="lev_word", help="the distance that orders the queries (default lev_word)"
    )
    g.add_argument(
        "--reference",
        choices=("original", "tests"),
        default="original",
        help="equivalent to the original's code (the paper's reading, default) or passing the task's tests",
    )
    g.add_argument(
        "--per-order", type=int, default=50, help="paraphrases drawn per order above 1 (default 50)"
    )
    g.add_argument(
        "--cross-encoder", default=None, help="a local cross-encoder model directory (stsb-roberta-base)"
    )
    g.add_argument(
        "--answers-cache",
        default=None,
        help="the answer cache (default: cctest's data directory/answers.sqlite); 'none' for no cache",
    )


def run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from ..bench.runner import select
    from ..paraphrase import Distances, neighbour_source
    from ..paraphrase.neighbours import data_dir
    from ..suites.operational import AnswerCache, SearchSettings, humaneval_tasks, run_operational
    from ..tasks.model import load_tasks
    from ..tasks.run import TaskRunConfig
    from ._common import recorded_model, settings_from_args
    from .bench import run_in_dir
    from .bench_tasks import task_settings

    if rest:
        raise ConfigError(
            "usage: cctest bench operational [--tasks FILE.jsonl | --dataset humaneval] [options]."
        )
    if args.tasks and args.dataset:
        raise ConfigError("give --tasks FILE.jsonl or --dataset humaneval, not both.")
    if args.dataset and args.dataset.lower() != "humaneval":
        raise ConfigError(
            "cctest bench operational reads --dataset humaneval or a task file (--tasks FILE.jsonl)."
        )
    oracle, style, instruction = task_settings(args)
    search = SearchSettings(
        n=args.op_n,
        k=args.op_k,
        c_n=args.widen_n,
        c_k=args.widen_k,
        budget=args.budget,
        metric=args.metric,
        reference=args.reference,
        per_order=args.per_order,
        seed=args.seed,
    )
    if args.tasks:
        tasks = load_tasks(args.tasks)
        source_name = str(Path(args.tasks).resolve())
    else:
        tasks = humaneval_tasks()
        source_name = "humaneval"
    tasks = select(tasks, args.limit, args.seed, args.shuffle)
    neighbours = neighbour_source(args.vectors)
    distances = Distances(vectors=neighbours, cross_encoder=args.cross_encoder)
    distances.check(search.metric)
    settings = settings_from_args(args, seed=args.seed)
    cache_path = None
    if (args.answers_cache or "").lower() != "none":
        cache_path = (
            Path(args.answers_cache).expanduser() if args.answers_cache else data_dir() / "answers.sqlite"
        )
    config = TaskRunConfig(
        kind="operational",
        source=source_name,
        tasks=len(tasks),
        backend=settings.backend,
        model=recorded_model(settings),
        mode=args.task_mode or "auto",
        rounds=1,
        temperature=settings.temperature,
        max_new_tokens=settings.max_new_tokens,
        seed=args.seed,
        limit=args.limit,
        instruction=instruction,
        system=args.system,
        oracle=oracle.to_dict(),
        suite={
            "search": search.to_dict(),
            "neighbours": getattr(neighbours, "name", "?"),
            "vectors": args.vectors,
            "cross_encoder": args.cross_encoder,
            "metrics": list(distances.metrics),
        },
    )
    cache = AnswerCache(cache_path)
    try:
        return run_in_dir(
            args,
            config,
            f"operational-{settings.backend}",
            len(tasks),
            lambda out, done: run_operational(
                tasks,
                settings,
                config,
                out,
                search,
                neighbours,
                distances,
                done=done,
                oracle=oracle,
                style=style,
                cache=cache,
                workers=args.workers,
                batch_prompts=args.batch_prompts,
                progress=not args.no_progress,
            ),
        )
    finally:
        cache.close()
