"""``cctest bench syntactic``: the syntactic-robustness suite (Sarker et al.) against a model.

cctest bench syntactic [--equations linear,quadratic,...] [--distances 1-5] [--variants 20]
                       [--reduce] [--epsilon 0.02] [--paper-prompt] [--inputs N]
                       [--rounds R] [--chat] [--backend ... --model ...] --out RUN_DIR

The options of ``cctest bench tasks`` (rounds, chat, the oracle's limits, resume) apply as well;
``--epsilon`` is the oracle's absolute tolerance and ``--inputs`` defaults to 1,000 (the paper's);
``--rounds`` defaults to 5 where the temperature is above 0 (the paper's five queries per
variant), 1 at temperature 0. ``--paper-prompt`` asks in the paper's words for a program printing
the solutions, sent as a chat message, and judges it by what it prints
(``cctest.suites.syntactic_program``).
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
    g.add_argument(
        "--paper-prompt",
        action="store_true",
        help="ask in the paper's words for a program printing the solutions (2 digits; 6 for "
        "sin/cos/tan with ε = --epsilon / 10^4), judged by running it; default cctest's Python "
        "function solve(a, b) returning them",
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
        kinds,
        distances,
        args.variants,
        seed=args.seed,
        reduced=args.reduce,
        epsilon=args.epsilon,
        prompt="paper" if args.paper_prompt else "function",
    )
    settings = {
        "equations": kinds,
        "distances": distances,
        "variants": args.variants,
        "reduce": args.reduce,
        "epsilon": args.epsilon,
        "prompt": "paper" if args.paper_prompt else "function",
    }
    return TaskSet(tasks, "syntactic", settings)


def run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from .bench_tasks import run_task_set

    if rest:
        raise ConfigError("usage: cctest bench syntactic [--equations ...] [--distances 1-5] [options].")
    tasks = task_set(args)
    judge = None
    if args.paper_prompt:
        from ..suites.syntactic_program import judge_programs

        if args.task_mode == "completion":
            raise ConfigError("--paper-prompt asks for a program in a chat message; drop --completion.")
        args.task_mode = "chat"  # the paper's prompt is the whole message
        if args.instruction is None:
            args.instruction = "{description}"
        judge = judge_programs
    return run_task_set(
        args,
        tasks.tasks,
        kind="syntactic",
        source=tasks.source,
        suite=dict(tasks.settings),
        default_inputs=DEFAULT_INPUTS,
        judge=judge,
    )
