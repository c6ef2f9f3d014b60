"""HumanEval+ (EvalPlus, Liu et al., NeurIPS 2023) from a local file in EvalPlus's own format.

``HumanEvalPlus.jsonl`` or ``.jsonl.gz``, as EvalPlus releases it (cctest never downloads it):
one task a line with ``task_id``, ``prompt``, ``entry_point``, ``canonical_solution`` (the
reference's body), ``contract`` (assertions on the inputs, empty when there are none),
``base_input`` (HumanEval's own inputs, a list of argument lists), ``plus_input`` (EvalPlus's
extra ones) and ``atol`` (the float tolerance).

A sample is judged by differential testing against the reference, in ONE sandboxed process
(``cctest.bench.sandbox``): for each base input, then each plus input, the reference (``prompt +
contract + canonical_solution``) is called on a copy of the arguments and its CPU time measured;
an input the contract refuses (the reference raises ``AssertionError``) is skipped and counted.
The sample is then called on another copy under a CPU-time limit of ``max(min_time_limit,
time_limit_factor × the reference's CPU time)`` (EvalPlus's rule, counted in CPU time here, not
wall-clock time, so a loaded machine does not turn a correct answer into a timeout), and its
output compared as EvalPlus compares: equal, or, with a tolerance (``atol``, or 1e-6 where the
expected output is floats), of the same type and length and within ``atol + 1e-7 × |expected|``
element by element; ``find_zero``'s answer is checked as EvalPlus checks it, by ``|poly(xs, x)| ≤
atol``. The first failing input ends a set. ``base`` passes when every base input agrees;
``plus`` when ``base`` does and every plus input agrees (EvalPlus's ``base + extra``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ..userfile import MAX_DATA_BYTES, load_json, read_user_lines
from .sandbox import RESOURCE_ERRNOS, RunResult

PREFIX = "humaneval-plus:"
FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "base_input", "plus_input")
TIME_LIMIT_FACTOR = 4.0  # EvalPlus's default --gt-time-limit-factor
MIN_TIME_LIMIT = 1.0  # CPU seconds (EvalPlus's minimum is in wall-clock seconds)
REFERENCE_CPU = 20.0  # CPU seconds the reference may take on one input


@dataclass(frozen=True)
class PlusTask:
    """One HumanEval+ task as EvalPlus's file gives it."""

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    base_input: tuple[Any, ...]
    plus_input: tuple[Any, ...]
    atol: float = 0.0
    contract: str = ""

    @property
    def reference(self) -> str:
        """The reference program with its input contract."""
        return self.prompt + self.contract + self.canonical_solution


def load_humaneval_plus(path: str | Path) -> list[PlusTask]:
    """The tasks of an EvalPlus ``HumanEvalPlus.jsonl`` (or ``.jsonl.gz``), in file order; a line
    that is not such a task is an error naming the line."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DatasetError(
            f"{path} is not a file; humaneval-plus:PATH needs EvalPlus's HumanEvalPlus.jsonl(.gz), "
            "downloaded from EvalPlus's releases (cctest downloads nothing)."
        )
    tasks: list[PlusTask] = []
    seen: set[str] = set()
    # (``.gz``: unpacked a line at a time, within the same bounds as a plain file)
    lines = read_user_lines(
        p, limit=MAX_DATA_BYTES, what="HumanEval+ file", error=DatasetError, skip_blank=True
    )
    for number, line in lines:
        tasks.append(_task(p, number, line, seen))
    if not tasks:
        raise DatasetError(f"{p} holds no tasks.")
    return tasks


def _task(path: Path, number: int, line: str, seen: set[str]) -> PlusTask:
    try:
        obj = load_json(line)
    except ValueError as exc:
        raise DatasetError(f"{path} line {number} is not valid JSON ({exc}).") from None
    if not isinstance(obj, dict):
        raise DatasetError(f"{path} line {number} is not a JSON object.")
    missing = [k for k in FIELDS if k not in obj]
    if missing:
        raise DatasetError(f"{path} line {number} lacks {', '.join(missing)} (EvalPlus's HumanEval+ fields).")
    for key in ("task_id", "prompt", "entry_point", "canonical_solution"):
        if not isinstance(obj[key], str):
            raise DatasetError(f"{path} line {number}: '{key}' must be a string.")
    for key in ("base_input", "plus_input"):
        if not isinstance(obj[key], list) or not all(isinstance(x, list) for x in obj[key]):
            raise DatasetError(f"{path} line {number}: '{key}' must be a list of argument lists.")
    atol = obj.get("atol") or 0.0
    if not isinstance(atol, (int, float)) or atol < 0:
        raise DatasetError(f"{path} line {number}: 'atol' must be a number >= 0.")
    if obj["task_id"] in seen:
        raise DatasetError(f"{path} line {number} repeats task_id '{obj['task_id']}'.")
    seen.add(obj["task_id"])
    return PlusTask(
        task_id=obj["task_id"],
        prompt=obj["prompt"],
        entry_point=obj["entry_point"],
        canonical_solution=obj["canonical_solution"],
        base_input=tuple(obj["base_input"]),
        plus_input=tuple(obj["plus_input"]),
        atol=float(atol),
        contract=obj.get("contract") or "",
    )


# The checking program: trusted code in the sandbox. It reports on stdout "@B<i>" / "@P<i>" before
# base / plus input i (so a process killed mid-way says where) and one "@R" JSON line at the end.
_DRIVER = r"""
import copy, errno, json, math, os, signal, sys, time
CFG = json.loads(%s)
RESOURCE_ERRNOS = frozenset(getattr(errno, n) for n in CFG["resource_errnos"] if hasattr(errno, n))
NAME = CFG["name"]

def emit(text):
    os.write(1, (text + "\n").encode())

class _Limit(BaseException):
    pass

def _on_cpu(signum, frame):
    raise _Limit()

signal.signal(signal.SIGPROF, _on_cpu)
_null = open(os.devnull, "w")
sys.stdout = sys.stderr = _null

def cpu_limited(limit, fn, *args):
    signal.setitimer(signal.ITIMER_PROF, limit)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)

def define(source, filename):
    ns = {"__name__": filename[:-3], "__builtins__": __builtins__}
    cpu_limited(CFG["define_cpu"], exec, compile(source, filename, "exec"), ns)
    return ns

def is_floats(x):
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)) and x:
        return all(isinstance(i, float) for i in x)
    return False

def close(out, exp, atol):
    if isinstance(exp, (list, tuple)):
        return isinstance(out, (list, tuple)) and len(out) == len(exp) and all(
            close(o, e, atol) for o, e in zip(out, exp))
    try:
        return abs(out - exp) <= atol + 1e-7 * abs(exp)
    except Exception:
        return False

def agrees(out, exp, args, atol, ref_ns):
    if NAME == "find_zero" and "poly" in ref_ns:
        return abs(ref_ns["poly"](*args, out)) <= max(atol, 1e-6)
    try:
        exact = bool(out == exp)
    except Exception:
        exact = False
    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if not exact and atol != 0:
        if type(out) != type(exp):
            return False
        if isinstance(exp, (list, tuple)) and len(out) != len(exp):
            return False
        return close(out, exp, atol)
    return exact

def call_text(args):
    return "%%s(%%s)" %% (NAME, ", ".join(short(a, 60) for a in args))

def short(value, n=120):
    try:
        text = repr(value)
    except BaseException:
        text = "<unprintable>"
    return text if len(text) <= n else text[: n - 3] + "..."

def what(exc):
    if isinstance(exc, _Limit):
        return "timeout"
    if isinstance(exc, MemoryError):
        return "resource_limit"
    if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
        return "resource_limit"
    return "runtime_error"

result = {"base": None, "plus": None, "detail": "", "outcome": "passed", "skipped": {"base": 0, "plus": 0},
          "checked": {"base": 0, "plus": 0}, "reference_cpu": 0.0}

def finish():
    emit("@R" + json.dumps(result))
    os._exit(0)

try:
    ref_ns = define(CFG["reference"], "reference.py")
    ref = ref_ns[NAME]
except BaseException as exc:
    result["outcome"], result["detail"] = "task_error", "the reference cannot be defined: %%r" %% (exc,)
    finish()
try:
    ns = define(CFG["code"], "sample.py")
except BaseException as exc:
    result["base"] = result["plus"] = False
    result["outcome"] = what(exc)
    result["detail"] = "defining the sample: %%s: %%s" %% (type(exc).__name__, exc)
    finish()
fn = ns.get(NAME)
if not callable(fn):
    result["base"] = result["plus"] = False
    result["outcome"], result["detail"] = "runtime_error", "the sample does not define %%s" %% NAME
    finish()

def run_set(label, inputs):
    for i, args in enumerate(inputs):
        emit("@%%s%%d" %% (label[0].upper(), i))
        start = time.process_time()
        try:
            expected = cpu_limited(CFG["reference_cpu"], ref, *copy.deepcopy(args))
        except BaseException:
            result["skipped"][label] += 1  # the contract (or the reference) refuses this input
            continue
        spent = time.process_time() - start
        result["reference_cpu"] += spent
        limit = max(CFG["min_time_limit"], CFG["factor"] * spent)
        try:
            got = cpu_limited(limit, fn, *copy.deepcopy(args))
        except BaseException as exc:
            result["outcome"] = what(exc)
            why = "ran past its CPU-time limit of %%.3g s" %% limit if isinstance(exc, _Limit) else (
                "%%s: %%s" %% (type(exc).__name__, exc))
            where = "%%s input %%d, %%s" %% (label, i, call_text(args))
            result["detail"] = (where + ": " + why)[:500]
            return False
        try:
            ok = cpu_limited(CFG["define_cpu"], agrees, got, expected, args, CFG["atol"], ref_ns)
        except BaseException:
            ok = False
        if not ok:
            result["outcome"] = "assertion_failure"
            result["detail"] = ("%%s input %%d, %%s returned %%s, expected %%s" %% (
                label, i, call_text(args), short(got), short(expected)))[:500]
            return False
        result["checked"][label] += 1
    return True

result["base"] = run_set("base", CFG["base_input"])
result["plus"] = result["base"] and run_set("plus", CFG["plus_input"])
finish()
"""


def driver_program(
    task: PlusTask,
    code: str,
    *,
    factor: float = TIME_LIMIT_FACTOR,
    min_time_limit: float = MIN_TIME_LIMIT,
) -> str:
    """The sandboxed program that judges ``code`` (a whole program) on ``task``'s base and plus
    inputs against its reference."""
    cfg = {
        "name": task.entry_point,
        "code": code,
        "reference": task.reference,
        "base_input": list(task.base_input),
        "plus_input": list(task.plus_input),
        "atol": task.atol,
        "factor": factor,
        "min_time_limit": min_time_limit,
        "reference_cpu": REFERENCE_CPU,
        "define_cpu": max(min_time_limit, 5.0),
        "resource_errnos": list(RESOURCE_ERRNOS),
    }
    return _DRIVER % repr(json.dumps(cfg))


def interpret(run: RunResult) -> dict[str, Any]:
    """The verdict of one sample from its process: ``base`` and ``plus`` (passed or not), the
    outcome and a detail. A process stopped by its whole-run limits failed the set it was in."""
    report: Mapping[str, Any] | None = None
    last = ""
    for line in run.output.splitlines():
        if line.startswith("@R"):
            try:
                report = load_json(line[2:])
            except ValueError:
                report = None
        elif line.startswith(("@B", "@P")):
            last = line[1:]
    if report is not None:
        return {
            "base": bool(report["base"]),
            "plus": bool(report["plus"]),
            "outcome": report["outcome"],
            "detail": report["detail"],
            "skipped": report["skipped"],
            "reference_cpu": round(float(report["reference_cpu"]), 6),
        }
    where = {"B": " on base input ", "P": " on plus input "}.get(last[:1], "")
    return {
        "base": last.startswith("P"),  # killed during the plus inputs: every base input agreed
        "plus": False,
        "outcome": run.outcome if run.outcome != "passed" else "runtime_error",
        "detail": f"{run.detail}{where}{last[1:]}".strip(),
        "skipped": {"base": 0, "plus": 0},
        "reference_cpu": None,
    }
