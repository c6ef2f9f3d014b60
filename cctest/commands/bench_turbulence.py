"""``cctest bench turbulence``: question neighbourhoods (Turbulence, Honarvar et al.) against a model.

cctest bench turbulence [--benchmark DIR] [--templates 1,3,7] [--instances 100] [--param-seed 1]
                        [--rounds 5] [--inputs 100] [--chat] [--backend ... --model ...] --out RUN_DIR

Without ``--benchmark``, cctest's own question templates run; with it, a clone of the Turbulence
benchmark repository (its ``Benchmark/`` folder). The options of ``cctest bench tasks`` (chat or
completion, the oracle's limits, resume) apply as well; ``--rounds`` defaults to 5 (the paper's N).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._common import Options

if TYPE_CHECKING:
    from ..tasks.model import TaskSet

log = logging.getLogger(__name__)

DEFAULT_ROUNDS = 5


def add_arguments(g: Options) -> None:
    """This suite's own options (a task source of cctest bench operational as well)."""
    g.add_argument(
        "--benchmark",
        metavar="DIR",
        default=None,
        help="a clone of the Turbulence benchmark (default: cctest's own question templates)",
    )
    g.add_argument("--templates", default=None, help="comma-separated question numbers (default all)")
    g.add_argument(
        "--instances", type=int, default=100, help="question instances per template, M (default 100)"
    )
    g.add_argument(
        "--param-seed",
        default="1",
        help="the seed of the templates' parameter generators (default 1, the benchmark's)",
    )


def task_set(args: argparse.Namespace) -> TaskSet:
    """The question instances the options name (--benchmark, --templates, --instances,
    --param-seed): this suite's tasks, and a task source of ``cctest bench operational``."""
    from ..suites.turbulence import BUILTIN, benchmark_root, build_tasks, load_benchmark
    from ..tasks.model import TaskSet

    if args.instances < 1:
        raise ConfigError("--instances must be at least 1.")
    seed: int | str = int(args.param_seed) if args.param_seed.lstrip("-").isdigit() else args.param_seed
    only = [x.strip() for x in args.templates.split(",") if x.strip()] if args.templates else None
    root = benchmark_root(args.benchmark) if args.benchmark else BUILTIN
    templates = load_benchmark(root, only)
    skipped: dict[str, str] = {}  # a template whose parameter generator fails is left out, not the run
    tasks = build_tasks(templates, args.instances, seed=seed, errors=skipped)
    for t, why in skipped.items():
        log.warning("cctest bench turbulence: skipping %s; %s", t, why)
    if not tasks:
        raise ConfigError("no question template could generate its parameters; nothing to run.")
    settings = {
        "benchmark": str(root.resolve()) if args.benchmark else "built-in templates",
        "templates": [t.template_id for t in templates],
        "instances": args.instances,
        "param_seed": seed,
        **({"skipped": skipped} if skipped else {}),  # templates left out: their generator failed
    }
    source = settings["benchmark"] if args.benchmark else "turbulence"
    return TaskSet(tasks, str(source), settings)


def run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from ..suites.turbulence import template_of
    from .bench_tasks import run_task_set

    if rest:
        raise ConfigError("usage: cctest bench turbulence [--benchmark DIR] [--instances M] [options].")
    tasks = task_set(args)
    if args.rounds is None:
        args.rounds = DEFAULT_ROUNDS
    # a template whose model solution fails its own tests is left out (one sentence), not the run
    return run_task_set(
        args,
        tasks.tasks,
        kind="turbulence",
        source=tasks.source,
        suite=dict(tasks.settings),
        skip_broken=template_of,
    )
