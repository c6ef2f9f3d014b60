"""``cctest bench operational``: the operational-robustness suite (Ghosh Paul et al.) against a model.

cctest bench operational [--tasks FILE.jsonl | --dataset humaneval|turbulence|syntactic]
                         [--vectors glove.txt]
                         [--budget N] [--n 5] [--order 5] [--widen-n 1] [--widen-order 1]
                         [--per-order N] [--protect-stop-words] [--neighbours-by euclidean|cosine]
                         [--metric lev_word] [--reference original|tests] [--cross-encoder DIR]
                         [--answers-cache FILE] [--backend ... --model ...] --out RUN_DIR

The tasks (``task_set``): a task file, HumanEval's docstrings (the default), or another suite's
tasks built by that suite's own options: ``--dataset turbulence`` with ``--benchmark DIR``
(``--benchmark`` alone implies it), ``--templates``, ``--instances``, ``--param-seed``;
``--dataset syntactic`` with ``--equations``, ``--distances``, ``--variants``, ``--reduce``,
``--epsilon``. The options of ``cctest bench tasks`` (chat or completion, the oracle's limits,
--limit, resume) apply as well; one answer per query (temperature 0 by default).

The search is the paper's Algorithm 2 by default: every k-th order mutant (sampled only past 1,000
paraphrases per task), any word replaced, widening until a first failure or nothing new is left.
cctest's earlier defaults stay as options: ``--budget 20 --per-order 50 --protect-stop-words``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._common import Options, add_deprecated_alias

if TYPE_CHECKING:
    from ..suites.operational import SearchSettings
    from ..tasks.model import TaskSet

# --dataset NAME -> the command module whose task_set(args) builds that suite's tasks
SUITE_SOURCES = {
    "turbulence": "cctest.commands.bench_turbulence",
    "syntactic": "cctest.commands.bench_syntactic",
}
DATASETS = ("humaneval", *SUITE_SOURCES)
# the task sources' own options, each in its group of this suite's --help
TASK_SOURCES = {module: f"with --dataset {name}" for name, module in SUITE_SOURCES.items()}


def add_arguments(g: Options) -> None:
    """This suite's own options (the task sources' are their suites' own, ``TASK_SOURCES``)."""
    g.add_argument("--tasks", metavar="FILE.jsonl", help="a task file (default: --dataset humaneval)")
    g.add_argument(
        "--dataset",
        default=argparse.SUPPRESS,  # cctest bench --dataset's, read before 'operational' as well
        help=f"the tasks: {', '.join(DATASETS)} (default humaneval; --benchmark DIR alone: turbulence)",
    )
    g.add_argument(
        "--vectors", default=None, help="neighbours from a GloVe-format vectors file (default WordNet)"
    )
    g.add_argument(
        "--neighbours-by",
        choices=("euclidean", "cosine"),
        default="euclidean",
        help="with --vectors: a word's n nearest words by Euclidean distance (the paper's, default) "
        "or by cosine similarity (cctest's earlier choice)",
    )
    g.add_argument(
        "--budget",
        type=int,
        default=None,
        help="at most N model queries per task, the original's included (default: none, the paper's: "
        "widen until the first failure or until no new paraphrase is left, at most 1,000 per task)",
    )
    g.add_argument(
        "--n", dest="op_n", type=int, default=5, metavar="N", help="nearest neighbours per word (default 5)"
    )
    g.add_argument(
        "--order",
        type=int,
        default=5,
        metavar="K",
        help="k: the highest paraphrase order, words replaced (default 5)",
    )
    add_deprecated_alias(g, "--k", "--order", dest="order", type=int)
    g.add_argument(
        "--widen-n", type=int, default=1, help="c_n: n's step when every paraphrase passed (default 1)"
    )
    g.add_argument(
        "--widen-order",
        type=int,
        default=1,
        help="c_k: the order's step when every paraphrase passed (default 1)",
    )
    add_deprecated_alias(g, "--widen-k", "--widen-order", dest="widen_order", type=int)
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
        "--per-order",
        type=int,
        default=None,
        metavar="N",
        help="draw N paraphrases per order above 1 (cctest's earlier default: 50); "
        "default every k-th order mutant, as the paper",
    )
    g.add_argument(
        "--protect-stop-words",
        action="store_true",
        help="never replace function words (a, to, with) or words under 3 letters "
        "(cctest's earlier default); default any word, as the paper's Table 2",
    )
    g.add_argument(
        "--cross-encoder", default=None, help="a local cross-encoder model directory (stsb-roberta-base)"
    )
    g.add_argument(
        "--answers-cache",
        default=None,
        help="the answer cache (default: cctest's data directory/answers.sqlite); 'none' for no cache",
    )


def task_set(args: argparse.Namespace) -> TaskSet:
    """The tasks to search: --tasks FILE.jsonl, or --dataset humaneval (the default), turbulence
    or syntactic (--benchmark DIR alone: turbulence), each suite's tasks built by its own options;
    a suite's options without its --dataset are a ``ConfigError``."""
    import importlib

    from ..tasks.model import TaskSet, load_tasks
    from .bench_tasks import options_given

    dataset = args.dataset.lower() if args.dataset else None
    if dataset is None and args.benchmark:
        dataset = args.dataset = "turbulence"
    if args.tasks and dataset:
        raise ConfigError("give --tasks FILE.jsonl or --dataset NAME, not both.")
    if dataset is not None and dataset not in DATASETS:
        raise ConfigError(
            f"cctest bench operational reads --dataset {', '.join(DATASETS[:-1])} or {DATASETS[-1]}, "
            f"or a task file with --tasks FILE.jsonl (got '{args.dataset}')."
        )
    for name, module in SUITE_SOURCES.items():
        stray = options_given(args, module) if name != dataset else []
        if stray:
            raise ConfigError(
                f"{stray[0]} is an option of --dataset {name}; add --dataset {name} or drop it."
            )
    if args.tasks:
        return TaskSet(load_tasks(args.tasks), str(Path(args.tasks).resolve()))
    if dataset in SUITE_SOURCES:
        chosen: TaskSet = importlib.import_module(SUITE_SOURCES[dataset]).task_set(args)
        if chosen.settings.get("prompt", "function") != "function":
            raise ConfigError(
                "cctest bench operational judges functions; --paper-prompt (a program judged by "
                "its output) is for cctest bench syntactic alone."
            )
        return chosen
    from ..suites.operational import humaneval_tasks

    return TaskSet(humaneval_tasks(), "humaneval")


def search_settings(args: argparse.Namespace) -> SearchSettings:
    """Algorithm 2's settings from the command line (the paper's by default)."""
    from ..suites.operational import SearchSettings

    return SearchSettings(
        n=args.op_n,
        k=args.order,
        c_n=args.widen_n,
        c_k=args.widen_order,
        budget=args.budget,
        metric=args.metric,
        reference=args.reference,
        per_order=args.per_order,
        seed=args.seed,
        protect_stop_words=args.protect_stop_words,
    )


def run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from ..bench.runner import select
    from ..paraphrase import Distances, neighbour_source
    from ..paraphrase.neighbours import data_dir
    from ..suites.operational import AnswerCache, check_descriptions, run_operational
    from ._common import settings_from_args
    from .bench_dir import run_in_dir
    from .bench_tasks import task_run_config, task_settings

    if rest:
        raise ConfigError("usage: cctest bench operational [--tasks FILE.jsonl | --dataset NAME] [options].")
    oracle, style, instruction = task_settings(args)
    # the options named as the command line names them (SearchSettings checks the rest: n, budget)
    if args.order < 1:
        raise ConfigError("--order must be at least 1.")
    if args.widen_n < 0 or args.widen_order < 0 or args.widen_n + args.widen_order == 0:
        raise ConfigError("--widen-n and --widen-order must be at least 0, and not both 0.")
    search = search_settings(args)
    chosen = task_set(args)
    tasks, source_name = chosen.tasks, chosen.source
    tasks = select(tasks, args.limit, args.seed, args.shuffle)
    check_descriptions(tasks)
    neighbours = neighbour_source(args.vectors, args.neighbours_by)
    distances = Distances(vectors=neighbours, cross_encoder=args.cross_encoder)
    distances.check(search.metric)
    settings = settings_from_args(args, seed=args.seed)
    cache_path = None
    if (args.answers_cache or "").lower() != "none":
        cache_path = (
            Path(args.answers_cache).expanduser() if args.answers_cache else data_dir() / "answers.sqlite"
        )
    config = task_run_config(
        args,
        settings,
        oracle,
        instruction,
        kind="operational",
        source=source_name,
        tasks=len(tasks),
        rounds=1,
        suite={
            "tasks": {"dataset": args.dataset or "tasks", **chosen.settings},
            "search": search.to_dict(),
            "neighbours": getattr(neighbours, "name", "?"),
            "vectors": args.vectors,
            "neighbours_by": args.neighbours_by if args.vectors else None,
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
            lambda store, done: run_operational(
                tasks,
                settings,
                config,
                store,
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
