"""``cctest bench syntactic``: the syntactic-robustness suite (Sarker et al.) against a model.

cctest bench syntactic [--equations linear,quadratic,...] [--distances 1-5] [--variants 20]
                       [--reduce] [--epsilon 0.02] [--inputs N] [--rounds R] [--chat]
                       [--backend ... --model ...] --out RUN_DIR

The options of ``cctest bench tasks`` (rounds, chat, the oracle's limits, resume) apply as well;
``--epsilon`` is the oracle's absolute tolerance and ``--inputs`` defaults to 1,000 (the paper's).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._common import Options

if TYPE_CHECKING:
    from ..tasks.model import TaskSet

DEFAULT_INPUTS = 1000


def add_arguments(g: Options) -> None:
    """This suite's own options (a task source of cctest bench operational as well)."""
    g.add_argument(
        "--equations",
        default=None,
        help="comma-separated equation kinds (default all: linear,quadratic,sin,cos,tan,log,ln)",
    )
    g.add_argument("--distances", default="1-5", help="syntactic distances, like 1-5 or 1,3 (default 1-5)")
    g.add_argument("--variants", type=int, default=20, help="variants per distance and equation (default 20)")
    g.add_argument("--reduce", action="store_true", help="also send every variant after pre-processing")
    g.add_argument(
        "--epsilon", type=float, default=0.02, help="tolerance for the 2-digit solutions (default 0.02)"
    )


def task_set(args: argparse.Namespace) -> TaskSet:
    """The formula tasks the options name (--equations, --distances, --variants, --reduce,
    --epsilon, --seed): this suite's tasks, and a task source of ``cctest bench operational``."""
    from ..suites.syntactic import EQUATION_KINDS, build_tasks, parse_distances
    from ..tasks.model import TaskSet

    if args.variants < 1:
        raise ConfigError("--variants must be at least 1.")
    if args.epsilon < 0:
        raise ConfigError("--epsilon must be at least 0.")
    kinds = list(EQUATION_KINDS)
    if args.equations:
        kinds = [k.strip() for k in args.equations.split(",") if k.strip()]
    distances = parse_distances(args.distances)
    tasks = build_tasks(
        kinds, distances, args.variants, seed=args.seed, reduced=args.reduce, epsilon=args.epsilon
    )
    settings = {
        "equations": kinds,
        "distances": distances,
        "variants": args.variants,
        "reduce": args.reduce,
        "epsilon": args.epsilon,
    }
    return TaskSet(tasks, "syntactic", settings)


def run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from .bench_tasks import run_task_set

    if rest:
        raise ConfigError("usage: cctest bench syntactic [--equations ...] [--distances 1-5] [options].")
    tasks = task_set(args)
    return run_task_set(
        args,
        tasks.tasks,
        kind="syntactic",
        source=tasks.source,
        suite=dict(tasks.settings),
        default_inputs=DEFAULT_INPUTS,
    )
