"""``cctest bench tasks``: a natural-language task set against a model, and the options every
task suite shares (rounds, chat or completion, the oracle's settings).

cctest bench tasks --tasks FILE.jsonl [--chat|--completion] [--rounds R] [--inputs N]
                   [--abs-tol E] [--rel-tol E] [--instruction TEXT] [--system TEXT] [--limit N]
                   [--out RUN_DIR] [--resume] [--backend ... --model ...]

A suite's action builds its tasks and calls ``run_task_set`` with its own kind of run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..userfile import MAX_SOURCE_BYTES, read_user_text
from ._common import Options, settings_from_args


def add_arguments(g: Options) -> None:
    """This suite's own option: the task file."""
    g.add_argument("--tasks", metavar="FILE.jsonl", help="the task file (JSON lines, one task a line)")


def add_task_options(p: argparse.ArgumentParser) -> None:
    """The options every task suite shares, in their group: chat or completion, rounds, the oracle."""
    g = p.add_argument_group("tasks and the oracle (every task suite)")
    how = g.add_mutually_exclusive_group()
    how.add_argument(
        "--chat",
        action="store_const",
        const="chat",
        dest="task_mode",
        help="ask as an instruction model (chat messages) instead of completing a function stub "
        "(default: chat when the hf model's tokenizer has a chat template)",
    )
    how.add_argument(
        "--completion",
        action="store_const",
        const="completion",
        dest="task_mode",
        help="complete a function stub even when the model has a chat template",
    )
    g.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="answers per prompt (1 at temperature 0, else 5)",
    )
    g.add_argument("--inputs", type=int, default=None, help="inputs per answer (default 100; a suite's own)")
    g.add_argument("--abs-tol", type=float, default=0.0, help="absolute tolerance for floats (default 0)")
    g.add_argument("--rel-tol", type=float, default=0.0, help="relative tolerance for floats (default 0)")
    g.add_argument(
        "--input-cpu",
        type=float,
        default=1.0,
        metavar="S",
        help="CPU seconds per call on one input (default 1)",
    )
    g.add_argument(
        "--input-timeout",
        type=float,
        default=2.0,
        metavar="S",
        help="wall-clock seconds per call on one input (default 2)",
    )
    g.add_argument(
        "--input-limits",
        choices=("reference", "fixed"),
        default=None,
        metavar="HOW",
        help="reference (turbulence's default) or fixed time limits",
    )
    g.add_argument(
        "--limit-factor",
        type=float,
        default=4.0,
        metavar="F",
        help="reference limits: F × its CPU time (default 4)",
    )
    g.add_argument(
        "--instruction",
        default=None,
        metavar="TEXT",
        help="the chat wording, a template over {description} {name} {signature} {arity}, or @FILE",
    )
    g.add_argument("--system", default=None, help="a system message for chat models")


def _text_or_file(value: str | None) -> str | None:
    if value is None or not value.startswith("@"):
        return value
    return read_user_text(
        Path(value[1:]).expanduser(), limit=MAX_SOURCE_BYTES, what="text file", error=ConfigError
    )


def run(args: argparse.Namespace, rest: Sequence[str]) -> int:
    from ..tasks.model import load_tasks

    if rest:
        raise ConfigError("usage: cctest bench tasks --tasks FILE.jsonl [options].")
    if not args.tasks:
        raise ConfigError("cctest bench tasks needs --tasks FILE.jsonl.")
    tasks = load_tasks(args.tasks)
    return run_task_set(args, tasks, kind="tasks", source=str(Path(args.tasks).resolve()))


def options_given(args: argparse.Namespace, module: str) -> list[str]:
    """The options of ``module`` (a suite's ``add_arguments``) that ``args`` holds at a value other
    than their default, as ``--name``: a task source's options given without choosing it."""
    import importlib

    own = argparse.ArgumentParser(add_help=False)
    importlib.import_module(module).add_arguments(own)
    defaults = vars(own.parse_args([]))
    return [f"--{d.replace('_', '-')}" for d, v in defaults.items() if getattr(args, d, v) != v]


def task_settings(args: argparse.Namespace, default_inputs: int = 100) -> tuple[Any, Any, str | None]:
    """The shared options every task suite checks and reads: (OracleSettings, ChatStyle, the chat
    instruction or None); ``ConfigError`` for a bad value."""
    from ..bench.sandbox import Limits
    from ..tasks.oracle import OracleSettings
    from ..tasks.render import ChatStyle

    if args.resume and not args.out:
        raise ConfigError("--resume needs --out RUN_DIR, the run to continue.")
    for name in ("limit", "rounds"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ConfigError(f"--{name} must be at least 1.")
    if args.inputs is None:
        args.inputs = default_inputs
    if args.inputs < 0:
        raise ConfigError("--inputs must be at least 0.")
    if args.workers < 1 or args.batch_prompts < 1:
        raise ConfigError("--workers and --batch-prompts must be at least 1.")
    oracle = OracleSettings(
        inputs=args.inputs,
        seed=args.seed,
        abs_tol=args.abs_tol,
        rel_tol=args.rel_tol,
        static_check=getattr(args, "static_check", "pyflakes"),  # a suite may ask for Pylint's
        input_cpu_seconds=args.input_cpu,
        input_wall_seconds=args.input_timeout,
        input_limits=getattr(args, "input_limits", None) or "fixed",  # a suite may default to reference
        limit_factor=getattr(args, "limit_factor", 4.0),
        limits=Limits(
            wall_seconds=args.test_timeout, cpu_seconds=args.test_cpu, memory_mb=args.test_memory_mb
        ),
    )
    instruction = _text_or_file(args.instruction)
    style = ChatStyle(**({"instruction": instruction} if instruction else {}), system=args.system)
    return oracle, style, instruction


def task_run_config(
    args: argparse.Namespace,
    settings: Any,
    oracle: Any,
    instruction: str | None,
    *,
    kind: str,
    source: str,
    tasks: int,
    rounds: int,
    suite: dict[str, Any] | None,
) -> Any:
    """The run's ``config.json`` as every task suite records it: the model, the wording, the
    oracle, and the suite's own settings (``suite``)."""
    from ..tasks.run import TaskRunConfig

    return TaskRunConfig(
        kind=kind,
        source=source,
        tasks=tasks,
        mode=args.task_mode or "auto",
        rounds=rounds,
        settings=settings,
        limit=args.limit,
        instruction=instruction,
        system=args.system,
        oracle=oracle.to_dict(),
        suite=suite or {},
    )


def run_task_set(
    args: argparse.Namespace,
    tasks: Sequence[Any],
    *,
    kind: str,
    source: str,
    suite: dict[str, Any] | None = None,
    default_inputs: int = 100,
    skip_broken: Callable[[Any], str] | None = None,
    judge: Callable[..., Any] | None = None,
) -> int:
    """Run ``tasks`` (after --shuffle/--limit) in the run directory --out, with resume and reports;
    ``kind`` names the RunKind that summarises the records (``cctest.bench.kinds``);
    ``skip_broken`` (a task's group) skips a group whose reference is broken instead of stopping
    (``cctest.tasks.run.check_tasks``); ``judge`` judges the answers instead of the oracle's
    ``judge_many`` (the syntactic suite's paper prompt)."""
    from ..bench.runner import select
    from ..tasks.run import default_rounds, run_tasks
    from .bench_dir import run_in_dir

    oracle, style, instruction = task_settings(args, default_inputs)
    settings = settings_from_args(args, seed=args.seed)
    tasks = select(tasks, args.limit, args.seed, args.shuffle)
    rounds = args.rounds if args.rounds is not None else default_rounds(settings.temperature)
    config = task_run_config(
        args,
        settings,
        oracle,
        instruction,
        kind=kind,
        source=source,
        tasks=len(tasks),
        rounds=rounds,
        suite=suite,
    )
    return run_in_dir(
        args,
        config,
        f"{kind}-{settings.backend}",
        len(tasks),
        lambda store, done: run_tasks(
            tasks,
            settings,
            config,
            store,
            done=done,
            oracle=oracle,
            style=style,
            workers=args.workers,
            batch_prompts=args.batch_prompts,
            progress=not args.no_progress,
            skip_broken=skip_broken,
            judge=judge,
        ),
    )
