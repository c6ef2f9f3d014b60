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
        help="the seed of the templates' parameter generators, a string as the benchmark passes it "
        "(default 1, the benchmark's)",
    )
    g.add_argument(
        "--param-order",
        choices=("shuffled", "generated"),
        default=None,
        help="shuffled: the rows shuffled with the seed, as the benchmark does (default with "
        "--benchmark); generated: in the generator's order, hand-picked rows first (default for "
        "cctest's own templates, whose first rows are their edge cases)",
    )
    g.add_argument(
        "--prompt",
        choices=("recorded", "benchmark", "cctest"),
        default="recorded",
        help="recorded: the prompt the benchmark's published runs recorded, the question between "
        "its sentences (default); benchmark: the benchmark repository's current harness, the "
        "question at the end; cctest: cctest's, which adds the function's signature "
        "(--instruction overrides all three)",
    )


def task_set(args: argparse.Namespace) -> TaskSet:
    """The question instances the options name (--benchmark, --templates, --instances,
    --param-seed): this suite's tasks, and a task source of ``cctest bench operational``."""
    from ..suites.turbulence import BUILTIN, benchmark_root, build_tasks, load_benchmark
    from ..tasks.model import TaskSet

    if args.instances < 1:
        raise ConfigError("--instances must be at least 1.")
    seed = str(args.param_seed)  # the benchmark seeds with the string "1", not the integer 1
    only = [x.strip() for x in args.templates.split(",") if x.strip()] if args.templates else None
    root = benchmark_root(args.benchmark) if args.benchmark else BUILTIN
    skipped: dict[str, str] = {}  # a template lacking a file or whose generator fails is left out
    templates = load_benchmark(root, only, missing=skipped)
    order = getattr(args, "param_order", None) or ("shuffled" if args.benchmark else "generated")
    shuffle = order == "shuffled"
    tasks = build_tasks(
        templates,
        args.instances,
        seed=seed,
        errors=skipped,
        shuffle=shuffle,
        harness=bool(args.benchmark),  # the harness's per-question rules are the public benchmark's
    )
    for t, why in skipped.items():
        log.warning("cctest bench turbulence: skipping %s; %s", t, why)
    if not tasks:
        raise ConfigError("no question template could generate its parameters; nothing to run.")
    settings = {
        "benchmark": str(root.resolve()) if args.benchmark else "built-in templates",
        "templates": [t.template_id for t in templates],
        "instances": args.instances,
        "param_seed": seed,
        "param_order": "shuffled" if shuffle else "generated",
        "rules": "harness" if args.benchmark else "cctest",
        **({"skipped": skipped} if skipped else {}),  # templates left out: their generator failed
    }
    source = settings["benchmark"] if args.benchmark else "turbulence"
    return TaskSet(tasks, str(source), settings)


def run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from ..suites.turbulence import DEFAULT_PROMPT, PROMPTS, instance_of
    from .bench_tasks import run_task_set

    if rest:
        raise ConfigError("usage: cctest bench turbulence [--benchmark DIR] [--instances M] [options].")
    tasks = task_set(args)
    if args.rounds is None:
        args.rounds = DEFAULT_ROUNDS
    prompt = getattr(args, "prompt", DEFAULT_PROMPT)
    if args.instruction is None:
        args.instruction = PROMPTS[prompt]
    args.static_check = "pylint"  # the paper's static errors: Pylint's error checks
    if getattr(args, "input_limits", None) is None:
        # the harness has no time limit: each call's follows the model solution's own time on it
        args.input_limits = "reference"
    # an instance whose model solution fails its own tests is left out (one sentence), not the
    # template nor the run
    return run_task_set(
        args,
        tasks.tasks,
        kind="turbulence",
        source=tasks.source,
        suite={**tasks.settings, "prompt": prompt},
        skip_broken=instance_of,
    )
