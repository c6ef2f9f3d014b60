"""Running a task set against a model: render, sample R rounds, judge, one record per task.

A run uses the bench's run directory (``cctest.bench.store.RunStore``: ``config.json``,
``results.jsonl`` appended and fsync'd per task, ``--resume``) and its reports (``cctest.bench.report``:
``summary.json``, ``report.html``, ``cctest bench compare``). ``TasksKind`` summarises the records;
a suite subclasses it to add its own metrics over the same records (the tasks' ``meta`` says
which question and variant each one is) and registers it in ``cctest.bench.kinds.SUITES``.

Each task is rendered once (``completion_prompt`` or ``chat_messages``; in ``auto`` mode as a chat
when the backend ``prefers_chat``, i.e. a local model whose tokenizer has a chat template) and sent ``rounds``
times; the rendered prompts of ``batch_prompts`` tasks (times ``rounds``) go to the backend in
ONE call. Each round has a seed of its own, ``round_seed(Settings.seed, task_id, round)``, and a
backend that ``SeedsEachRequest`` (``cctest.backends.base``: the http and hf backends) samples
each round by its seed alone: the http backend asks it as a request of its own carrying the seed
at every temperature, so that no answer cache or server-side batching can merge two rounds; the
hf backend samples each round alone from a generator seeded with it (greedy rounds in one batch),
so a round's answer does not depend on the batch it came in. A re-run asks the same. The
answers of a batch are judged (``judge_many``, in the sandbox) while the model works on the next
batch. Before any model call, every task's reference is checked (``check_reference``), so a
broken task stops the run with one sentence instead of blaming every answer; or, for a suite that
passes ``skip_broken`` (a task's group: its template, its question), the whole group of a broken
task is left out with one logged sentence and recorded as skipped (a record with ``skipped`` and
no rounds, which every summary leaves out and lists under ``skipped``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ..backends.base import ChatModel, InstructionModel, Message, Outcome, SeedsEachRequest, cannot_chat
from ..bench.kinds import RunKind, Table, flat_config, model_label
from ..bench.render import pct
from ..bench.runner import RecordWriter, batches_by_length, in_task_order, progress_bar, recorded_settings
from ..bench.store import RunStore
from ..config import Settings
from ..errors import BackendError, ConfigError, ModelLoadError, TaskError
from .model import Task
from .oracle import CATEGORIES, Judgement, OracleSettings, check_and_time, judge_many, with_reference_times
from .render import ChatStyle, chat_messages, completion_prompt

log = logging.getLogger(__name__)


# -- the records (results.jsonl), one per task, and the summary ------------------------------------


class _Seed(TypedDict, total=False):
    seed: int


class RoundRecord(TypedDict):
    """One round of a task: the answer and how it fared (``Judgement``'s fields), or the backend's
    error (``answer`` and ``category`` None, no judgement)."""

    round: int
    seed: NotRequired[int]  # the round's own request carried it (``SeedsEachRequest``)
    answer: str | None
    error: str | None
    category: str | None
    detail: NotRequired[str]
    code: NotRequired[str | None]
    tests_passed: NotRequired[int]
    inputs_passed: NotRequired[int]
    inputs_skipped: NotRequired[int]
    failing_input: NotRequired[int | None]
    seconds: NotRequired[float]


class TaskRecord(TypedDict):
    """One task of a task run (``skipped``: left out with its group, a reference being broken)."""

    task_id: str
    index: int
    name: str
    description: str
    meta: dict[str, Any]
    mode: str | None  # what the run's mode became (None: skipped)
    prompt: str | list[Message] | None
    error: str | None
    rounds: list[RoundRecord]
    skipped: NotRequired[str]
    skip_group: NotRequired[str]


class TaskCounts(TypedDict):
    tasks: int
    answers: int
    backend_errors: int
    rounds: int


class TaskTally(TypedDict):
    task_id: str
    rounds: int  # judged
    passed: int


class SkippedGroup(TypedDict):
    reason: str
    tasks: int


class TasksSummary(TypedDict):
    """``summary.json`` of a task run; a suite's adds its own fields to it."""

    counts: TaskCounts
    categories: dict[str, int]
    category_share: dict[str, float | None]
    pass_rate: float | None
    tasks_all_rounds_passed: int
    tasks_any_round_passed: int
    per_task: list[TaskTally]
    skipped: dict[str, SkippedGroup]
    modes: list[str]


PROMPT_MODES = ("auto", "completion", "chat")  # auto: chat when the backend prefers it (a chat template)


def round_seed(seed: int, task_id: str, round_index: int) -> int:
    """The seed a task's round is asked with: from the run's seed, the task and the round alone, so
    rounds differ from each other and from other tasks', and a re-run (or ``--resume``) asks the
    same; 31 bits, which every server's seed field takes.

    >>> a = round_seed(0, "Q1/0", 0)
    >>> a == round_seed(0, "Q1/0", 0), a == round_seed(0, "Q1/0", 1), a == round_seed(0, "Q1/1", 0)
    (True, False, False)
    >>> 0 <= round_seed(7, "add", 4) < 2**31
    True
    """
    digest = hashlib.sha256(json.dumps([seed, task_id, round_index]).encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def default_rounds(temperature: float) -> int:
    """Rounds per prompt when none is given: 1 for greedy decoding (it would repeat), else 5."""
    return 1 if temperature == 0 else 5


@dataclass(frozen=True)
class TaskRunConfig:
    """What a task run is; two runs with equal configs produce comparable records.

    ``config.json`` holds the run's own fields and, under ``"settings"``, the engine's settings as
    ``Settings`` writes them (``recorded_settings``: the backend, model, temperature, seed, ...
    are not copied); ``task_config`` reads either shape."""

    kind: str  # the RunKind that summarises it: "tasks", or a suite's
    source: str  # the task file (resolved), or the suite and its data
    tasks: int
    mode: str  # auto | completion | chat (the records say which auto became)
    rounds: int
    # the engine's settings (its seed is the run's: the rounds' seeds derive from it)
    settings: Settings
    limit: int | None = None
    instruction: str | None = None  # the chat wording (None: DEFAULT_INSTRUCTION)
    system: str | None = None
    oracle: dict[str, Any] = field(default_factory=dict)
    suite: dict[str, Any] = field(default_factory=dict)  # a suite's own settings

    def __post_init__(self) -> None:
        if self.mode not in PROMPT_MODES:
            raise ConfigError(f"mode must be one of {', '.join(PROMPT_MODES)} (got '{self.mode}').")
        if self.rounds < 1:
            raise ConfigError("--rounds must be at least 1.")

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "settings"}
        return {**json.loads(json.dumps(out)), "settings": recorded_settings(self.settings)}


# config.json's fields of the engine's settings before a task run embedded them (``"settings"``),
# as its readers still see them (``task_config``): field -> setting
TASK_FLAT_SETTINGS = {
    "backend": "backend",
    "model": "model",
    "temperature": "temperature",
    "max_new_tokens": "max_new_tokens",
    "seed": "seed",
}
# the fields in their order (the report lists them so)
TASK_ORDER = (
    "kind", "source", "tasks", "backend", "model", "mode", "rounds", "temperature", "max_new_tokens",
    "seed", "limit", "instruction", "system", "oracle", "suite",
)  # fmt: skip


def task_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A task run's ``config.json`` as every reader sees it (a resume's check, the headline, the
    report, the comparison), whatever its shape: the run's fields with the engine's backend,
    model, temperature, max_new_tokens and seed among them, flat, as a run wrote them before
    ``"settings"`` was embedded (which is already that shape)."""
    return flat_config(config, TASK_FLAT_SETTINGS, TASK_ORDER)


def render(task: Task, mode: str, style: ChatStyle | None = None) -> str | list[Message]:
    """The prompt for ``task``: Python to continue (completion) or messages (chat)."""
    return chat_messages(task, style) if mode == "chat" else completion_prompt(task)


def check_tasks(
    tasks: Sequence[Task],
    oracle: OracleSettings,
    workers: int = 2,
    *,
    skip_broken: Callable[[Task], str] | None = None,
    measured: dict[str, dict[str, Any]] | None = None,
) -> dict[str, str]:
    """``check_reference`` on every task with a reference, ``workers`` at a time. Tasks that
    differ only in their wording (a suite's variants) share one check: the reference, inputs and
    tests are what is run. With relative limits (``OracleSettings.input_limits``) the same run
    measures the reference's time on each call (``check_and_time``): given a ``measured`` dict,
    each sound task's id maps there to its reference's times (``with_reference_times``).

    Without ``skip_broken`` the first broken task raises its ``TaskError``. With it (a task's
    group, e.g. its template), nothing raises: the result maps each group holding a broken task to
    that task's sentence, so the caller can leave the whole group out; ``{}`` when all are sound.
    """
    distinct: dict[tuple[Any, ...], Task] = {}
    groups: dict[tuple[Any, ...], list[str]] = {}
    task_ids: dict[tuple[Any, ...], list[str]] = {}
    for t in tasks:
        if t.reference is not None:
            rules = json.dumps(dict(t.rules), sort_keys=True)
            key = (t.name, t.args, t.arity, t.reference, t.generator, t.tests, t.abs_tol, t.rel_tol, rules)
            distinct.setdefault(key, t)
            task_ids.setdefault(key, []).append(t.task_id)
            if skip_broken is not None:
                groups.setdefault(key, []).append(skip_broken(t))

    times: dict[tuple[Any, ...], dict[str, Any]] = {}

    def one(key: tuple[Any, ...], t: Task) -> str | None:
        try:
            found = check_and_time(t, oracle)[1]
        except TaskError as exc:
            if skip_broken is None:
                raise
            why = " ".join(str(exc).split())  # one line: the message quotes the failing test
            return why if len(why) <= 400 else why[:397] + "..."
        if found is not None:
            times[key] = found
        return None

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        found = list(pool.map(one, distinct, distinct.values()))
    broken: dict[str, str] = {}
    for key, reason in zip(distinct, found, strict=True):
        if reason:
            for group in groups[key]:
                broken.setdefault(group, reason)
    if measured is not None:
        for key, ids in task_ids.items():
            if key in times:
                measured.update(dict.fromkeys(ids, times[key]))
    return broken


def skipped_record(task: Task, index: int, group: str, reason: str) -> TaskRecord:
    """The record of a task left out because a task of its group has a broken reference."""
    return {**_record(task, index, None, None, [], {}), "skipped": reason, "skip_group": group}


def skipped_groups(records: Sequence[Mapping[str, Any]]) -> dict[str, SkippedGroup]:
    """Group -> why it was skipped and how many of its tasks, from the records of a run."""
    out: dict[str, SkippedGroup] = {}
    for r in records:
        if r.get("skipped"):
            entry = out.setdefault(
                str(r.get("skip_group") or r["task_id"]), {"reason": r["skipped"], "tasks": 0}
            )
            entry["tasks"] += 1
    return out


def _record(
    task: Task,
    index: int,
    mode: str | None,
    prompt: str | list[Message] | None,
    answers: Sequence[str | BackendError],
    judgements: Mapping[int, Judgement],
    seeds: Sequence[int | None] = (),
) -> TaskRecord:
    rounds: list[RoundRecord] = []
    for r, answer in enumerate(answers):
        seed: _Seed = {}
        if r < len(seeds) and (s := seeds[r]) is not None:
            seed["seed"] = s  # the round's own request carried it
        if isinstance(answer, BackendError):
            rounds.append({"round": r, **seed, "answer": None, "error": str(answer), "category": None})
        else:
            rounds.append({"round": r, **seed, "answer": answer, "error": None, **judgements[r].to_dict()})
    return {
        "task_id": task.task_id,
        "index": index,
        "name": task.name,
        "description": task.description,
        "meta": dict(task.meta),
        "mode": mode,
        "prompt": prompt,
        "error": None,
        "rounds": rounds,
    }


async def run_tasks(
    tasks: Sequence[Task],
    settings: Settings,
    config: TaskRunConfig,
    store: RunStore[TaskRecord],
    *,
    done: Sequence[TaskRecord] = (),
    oracle: OracleSettings | None = None,
    style: ChatStyle | None = None,
    workers: int = 2,
    batch_prompts: int = 8,
    backend_factory: Callable[[Settings], Any] | None = None,
    progress: bool = True,
    check: bool = True,
    skip_broken: Callable[[Task], str] | None = None,
    judge: Callable[..., list[Judgement]] | None = None,
) -> list[TaskRecord]:
    """Run every task not already in ``done``; returns all records (old and new), in task order.

    ``judge``: what judges the answers, with ``judge_many``'s signature (the default); the
    syntactic suite's paper prompt judges programs by their output instead.

    ``skip_broken``: a task's group (see ``check_tasks``); a group with a broken reference is
    skipped (one logged sentence, one ``skipped`` record per task) instead of stopping the run."""
    from ..backends import create_backend
    from ..model_load import load_in_thread

    oracle = oracle or OracleSettings()
    finished = {r["task_id"] for r in done}
    todo = [(i, t) for i, t in enumerate(tasks) if t.task_id not in finished]
    records = list(done)
    if not todo:
        return in_task_order(records, tasks)
    if check:
        measured: dict[str, dict[str, Any]] = {}
        broken = await asyncio.to_thread(
            check_tasks, [t for _, t in todo], oracle, workers, skip_broken=skip_broken, measured=measured
        )
        # relative limits: each task carries its reference's times, recorded with its meta
        todo = [
            (i, with_reference_times(t, measured[t.task_id]) if t.task_id in measured else t) for i, t in todo
        ]
        for name, reason in broken.items():
            log.warning("cctest bench %s: skipping %s; %s", config.kind, name, reason)
        if broken and skip_broken is not None:
            for i, t in todo:
                if skip_broken(t) in broken:
                    record = skipped_record(t, i, skip_broken(t), broken[skip_broken(t)])
                    store.append(record)
                    records.append(record)
            todo = [(i, t) for i, t in todo if skip_broken(t) not in broken]
            if not todo:
                return in_task_order(records, tasks)
    factory = backend_factory or partial(create_backend, steady=True)
    # told on stderr, before the bar starts: not in its rate
    backend = await load_in_thread(factory, settings)
    bar = progress_bar(len(tasks), len(tasks) - len(todo), f"cctest bench {config.kind}", progress)
    mode = config.mode
    prompts: dict[str, str | list[Message]] = {}

    def judge_batch(
        group: list[tuple[int, Task]],
        answers: list[list[str | BackendError]],
        seeds: list[list[int | None]],
    ) -> list[TaskRecord]:
        items: list[tuple[Task, str, str | None]] = []
        where: list[tuple[int, int]] = []
        for g, ((_, task), task_answers) in enumerate(zip(group, answers, strict=True)):
            stub = prompts[task.task_id] if mode == "completion" else None
            for r, answer in enumerate(task_answers):
                if not isinstance(answer, BackendError):
                    items.append((task, answer, stub if isinstance(stub, str) else None))
                    where.append((g, r))
        judged = (judge or judge_many)(items, oracle, workers=workers)
        per_task: list[dict[int, Judgement]] = [{} for _ in group]
        for (g, r), j in zip(where, judged, strict=True):
            per_task[g][r] = j
        return [
            _record(task, index, mode, prompts[task.task_id], task_answers, per_task[g], seeds[g])
            for g, ((index, task), task_answers) in enumerate(zip(group, answers, strict=True))
        ]

    pending = RecordWriter(store, records, bar)
    try:
        async with backend:
            if mode == "auto":
                instruct = isinstance(backend, InstructionModel) and backend.prefers_chat
                mode = "chat" if instruct else "completion"
            prompts.update({t.task_id: render(t, mode, style) for _, t in todo})
            # each round its own request with its own seed, where the backend can (SeedsEachRequest)
            seeded = isinstance(backend, SeedsEachRequest)
            for group in batches_by_length(todo, batch_prompts, lambda t: len(str(prompts[t.task_id]))):
                n = config.rounds
                flat = [prompts[t.task_id] for _, t in group for _ in range(n)]
                seeds = [round_seed(config.settings.seed, t.task_id, r) for _, t in group for r in range(n)]
                outcomes = await _ask(backend, mode, flat, seeds if seeded else None)
                for o in outcomes:
                    if isinstance(o, ModelLoadError):
                        raise o
                answers = [list(outcomes[g * n : (g + 1) * n]) for g in range(len(group))]
                sent: list[list[int | None]] = [
                    list(seeds[g * n : (g + 1) * n]) if seeded else [None] * n for g in range(len(group))
                ]
                # the model works on the next batch while this one is judged
                pending.add(asyncio.to_thread(judge_batch, group, answers, sent))
            await pending.drain()
    finally:
        pending.cancel()
        bar.close()
    return in_task_order(records, tasks)


async def _ask(
    backend: Any, mode: str, prompts: Sequence[str | list[Message]], seeds: Sequence[int] | None
) -> list[Outcome]:
    """The backend's answers to ``prompts`` (chat messages or text to complete); with ``seeds``,
    each prompt asked as a request of its own with its seed (``SeedsEachRequest``)."""
    if mode == "chat":
        chats = [p for p in prompts if not isinstance(p, str)]
        if seeds is not None:
            return list(await backend.chat_seeded(chats, seeds))
        if not isinstance(backend, ChatModel):
            return [cannot_chat(backend)] * len(chats)
        return list(await backend.chat(chats))
    texts = [p for p in prompts if isinstance(p, str)]
    if seeds is not None:
        return list(await backend.complete_seeded(texts, seeds))
    return list(await backend.complete(texts))


# -- the summary ---------------------------------------------------------------------------


def summarize_tasks(records: Sequence[Mapping[str, Any]]) -> TasksSummary:
    """Categories of all answers, the pass rate, and per task how many rounds passed; tasks
    skipped for a broken reference are left out of all of it and listed under ``skipped``.
    ``records``: a task run's (``TaskRecord``), or any kind's whose records hold ``rounds`` of the
    same shape (the operational suite's)."""
    skipped = skipped_groups(records)
    records = [r for r in records if not r.get("skipped")]
    categories = dict.fromkeys(CATEGORIES, 0)
    errors = 0
    per_task: list[TaskTally] = []
    for r in records:
        rounds = r.get("rounds") or []
        passed = 0
        for a in rounds:
            if a.get("category") is None:
                errors += 1
                continue
            categories[a["category"]] = categories.get(a["category"], 0) + 1
            passed += a["category"] == "passed"
        judged = sum(a.get("category") is not None for a in rounds)
        per_task.append({"task_id": r["task_id"], "rounds": judged, "passed": passed})
    answers = sum(categories.values())
    judged_tasks = [t for t in per_task if t["rounds"]]
    return {
        "counts": {
            "tasks": len(records),
            "answers": answers,
            "backend_errors": errors,
            "rounds": max((len(r.get("rounds") or []) for r in records), default=0),
        },
        "categories": categories,
        "category_share": {c: (n / answers if answers else None) for c, n in categories.items()},
        "pass_rate": categories["passed"] / answers if answers else None,
        "tasks_all_rounds_passed": sum(t["passed"] == t["rounds"] for t in judged_tasks),
        "tasks_any_round_passed": sum(t["passed"] > 0 for t in judged_tasks),
        "per_task": per_task,
        "skipped": skipped,
        # what the run's mode became (``auto``: chat or completion, as the backend preferred)
        "modes": sorted({str(r["mode"]) for r in records if r.get("mode")}),
    }


def mode_label(config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    """The run's mode, with what ``auto`` resolved to: ``auto (chat)``."""
    mode = str(config.get("mode"))
    modes = summary.get("modes") or []
    return f"{mode} ({', '.join(modes)})" if mode == "auto" and modes else mode


class TasksKind(RunKind):
    """A task set run against a model: answers by category and the pass rate."""

    name = "tasks"
    title = "cctest bench tasks"
    docs = "docs/tasks.md"
    # config.json's engine settings, read as a task run wrote them before embedding them
    flat_settings = TASK_FLAT_SETTINGS
    flat_order = TASK_ORDER
    recorded_since: Mapping[str, Any] = {}

    def summarize(self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        return summarize_tasks(records)

    def headline(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        c = summary["counts"]
        return (
            f"{self.title} · {Path(str(config.get('source'))).name} · {config.get('backend')} "
            f"{model_label(config)} · {mode_label(config, summary)} · "
            f"{c['tasks']} tasks × {config.get('rounds')} rounds"
        )

    def settings(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
        return {**config, "mode": mode_label(config, summary)}

    def tables(self, summary: Mapping[str, Any]) -> dict[str, Table]:
        c = summary["counts"]
        tables: dict[str, Table] = {
            "Answers": (
                ["", "value"],
                [
                    ["tasks", str(c["tasks"])],
                    ["answers judged", str(c["answers"])],
                    ["backend errors", str(c["backend_errors"])],
                    ["pass rate", pct(summary["pass_rate"])],
                    ["tasks passed in every round", str(summary["tasks_all_rounds_passed"])],
                    ["tasks passed in some round", str(summary["tasks_any_round_passed"])],
                ],
            ),
            "Answers by category": (
                ["category", "answers", "share"],
                [[k, str(n), pct(summary["category_share"][k])] for k, n in summary["categories"].items()],
            ),
        }
        skipped = summary.get("skipped") or {}
        if skipped:
            tables["Skipped, and why"] = (
                ["skipped", "tasks", "why"],
                [[g, str(v["tasks"]), str(v["reason"])] for g, v in skipped.items()],
            )
        return tables

    def examples(
        self, config: Mapping[str, Any], summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
    ) -> str:
        import html

        shown: dict[str, str] = {}  # one example per failing category
        for r in records:
            for a in r.get("rounds") or []:
                cat = a.get("category")
                if cat in (None, "passed") or cat in shown:
                    continue
                shown[cat] = (
                    f"<h3>{html.escape(cat)} · {html.escape(r['task_id'])} round {a['round']}</h3>"
                    f"<p class='note'>{html.escape(a.get('detail') or '')}</p>"
                    f"<pre>{html.escape((a.get('answer') or '')[:1500])}</pre>"
                )
        if not shown:
            return ""
        return "<h2>Examples: one failing answer per category</h2>" + "".join(
            shown[c] for c in CATEGORIES if c in shown
        )

    def compare_settings(self, ca: Mapping[str, Any], cb: Mapping[str, Any]) -> list[list[str]]:
        return [
            *super().compare_settings(ca, cb),
            ["tasks", str(ca.get("source")), str(cb.get("source"))],
            [
                "mode / rounds",
                f"{ca.get('mode')} / {ca.get('rounds')}",
                f"{cb.get('mode')} / {cb.get('rounds')}",
            ],
        ]

    def compare_rows(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
        rows = [
            ["answers judged", str(a["counts"]["answers"]), str(b["counts"]["answers"])],
            ["pass rate", pct(a["pass_rate"]), pct(b["pass_rate"])],
        ]
        rows += [
            [c, pct(a["category_share"].get(c)), pct(b["category_share"].get(c))]
            for c in CATEGORIES
            if c != "passed"
        ]
        return rows
