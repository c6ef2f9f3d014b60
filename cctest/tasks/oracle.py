"""The oracle: is a model's answer to a task correct, and if not, how is it wrong?

An answer is judged in stages, and ends in exactly one of ``CATEGORIES`` (Turbulence's Table II):

1. **Parsing** (``parse.extract_function``): ``no_function``, ``wrong_function_name``,
   ``wrong_arg_count``, ``syntax_error``.
2. **Static check** with pyflakes (in this process; nothing runs): undefined names, a builtin
   used before a local of the same name is assigned (``sum = sum(xs)``), ``return`` outside a
   function, broken ``%``/``.format`` strings and the like (``STATIC_ERRORS``) are ``static_error``.
   Unused imports or variables are not errors.
3. **Execution** in the sandbox (``cctest.bench.sandbox``): ONE process per answer defines the
   answer's code, runs the task's fixed tests, then, for each of ``inputs`` generated inputs
   (input ``i`` drawn from ``random.Random(seed * 1_000_003 + i)``), calls the reference and the
   answer on deep copies of the arguments and compares the results: exactly (``==``, with lists,
   tuples and dicts compared element by element, and NumPy arrays by shape and elements), or for
   floats within ``abs_tol``/``rel_tol`` (``math.isclose``). An input on which the reference
   raises is skipped. The first failure decides: a fixed test's ``AssertionError`` is
   ``assertion_error``, an output that differs from the reference's is ``fuzzing_failure``, an
   exception is ``runtime_error``, and running past the per-input CPU or wall-clock limit (a
   timer in the process interrupts the call) or out of memory is ``resource_exhaustion``; so is
   running past the whole process's limits (``OracleSettings.limits``), which stop what no timer
   can (a long loop inside one C call). Otherwise ``passed``.

``check_reference`` runs a task's reference through the same process and raises ``TaskError``
when the reference fails its own fixed tests or raises on every generated input.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypedDict

from ..bench.sandbox import RESOURCE_ERRNOS, Limits, RunResult, run_many
from ..errors import ConfigError, TaskError
from .model import Task
from .parse import extract_function

CATEGORIES = (
    "no_function",
    "wrong_function_name",
    "wrong_arg_count",
    "syntax_error",
    "static_error",
    "resource_exhaustion",
    "runtime_error",
    "assertion_error",
    "fuzzing_failure",
    "passed",
)

# pyflakes messages that are errors when the code runs (the rest are style: unused names, ...)
STATIC_ERRORS = frozenset(
    {
        "UndefinedName",
        "UndefinedLocal",
        "UndefinedExport",
        "DuplicateArgument",
        "ReturnOutsideFunction",
        "YieldOutsideFunction",
        "ContinueOutsideLoop",
        "BreakOutsideLoop",
        "DefaultExceptNotLast",
        "TwoStarredExpressions",
        "TooManyExpressionsInStarredAssignment",
        "ImportStarNotPermitted",
        "LateFutureImport",
        "FutureFeatureNotDefined",
        "InvalidPrintSyntax",
        "PercentFormatInvalidFormat",
        "PercentFormatMissingArgument",
        "PercentFormatMixedPositionalAndNamed",
        "PercentFormatPositionalCountMismatch",
        "PercentFormatExpectedMapping",
        "PercentFormatExpectedSequence",
        "PercentFormatUnsupportedFormatCharacter",
        "PercentFormatStarRequiresSequence",
        "StringDotFormatInvalidFormat",
        "StringDotFormatMissingArgument",
        "StringDotFormatMixingAutomatic",
    }
)

OUTPUT_BYTES = 64 * 1024
STATIC_CHECKS = ("pyflakes", "pylint")


INPUT_LIMITS = ("fixed", "reference")
# Task.meta key of the reference's measured CPU seconds per call (``reference_times``)
REFERENCE_TIMES = "reference_cpu"
# the most memory (address space, MB) the reference may use while it is measured: EvalPlus's cap
REFERENCE_MEMORY_MB = 4096
# how often an answer over its limit is run again beside the reference, the limit doubling each time
REJUDGE_ROUNDS = 4


@dataclass(frozen=True)
class OracleSettings:
    """How answers are judged. ``limits`` bound the whole process that checks one answer.

    Per-call time limits (a fixed test, or the answer on one generated input): ``fixed``, every
    call gets ``input_cpu_seconds`` and ``input_wall_seconds``; ``reference``, as EvalPlus sets
    them, each call's limit follows the reference's own CPU time on that call, measured once per
    task (``check_and_time``): ``max(input_cpu_seconds, limit_factor * reference's time)`` CPU
    seconds, and wall-clock seconds in the same ratio as the fixed pair. The reference itself may
    take up to ``reference_cpu_seconds`` per call (and ``REFERENCE_MEMORY_MB``) while it is
    measured, so a slow reference is measured instead of dropped."""

    inputs: int = 100  # generated inputs per answer (the papers use 100 to 1000)
    seed: int = 0
    abs_tol: float = 0.0  # float results within abs_tol or rel_tol of the reference's are equal
    rel_tol: float = 0.0
    # "pyflakes" (fast), or "pylint": pyflakes first, then Pylint's error checks (--errors-only),
    # as Turbulence's paper finds static errors
    static_check: str = "pyflakes"
    input_cpu_seconds: float = 1.0  # per call of the answer (or the reference) on one input
    input_wall_seconds: float = 2.0
    limits: Limits = field(default_factory=lambda: Limits(wall_seconds=60.0, cpu_seconds=30))
    input_limits: str = "fixed"  # one of INPUT_LIMITS
    limit_factor: float = 4.0  # EvalPlus's gt_time_limit_factor
    reference_cpu_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.inputs < 0:
            raise ConfigError("the number of generated inputs must be at least 0.")
        if self.abs_tol < 0 or self.rel_tol < 0:
            raise ConfigError("float tolerances must be >= 0.")
        if self.static_check not in STATIC_CHECKS:
            raise ConfigError(f"the static check must be one of {', '.join(STATIC_CHECKS)}.")
        if self.input_cpu_seconds <= 0 or self.input_wall_seconds <= 0:
            raise ConfigError("per-input CPU and wall-clock limits must be positive.")
        if self.input_limits not in INPUT_LIMITS:
            raise ConfigError(f"the input limits must be one of {', '.join(INPUT_LIMITS)}.")
        if not self.limit_factor >= 1 or not self.reference_cpu_seconds > 0:
            raise ConfigError("the limit factor must be at least 1 and the reference's limit positive.")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.input_limits == "fixed":  # as a run recorded before relative limits: it still resumes
            for key in ("input_limits", "limit_factor", "reference_cpu_seconds"):
                del out[key]
        return out

    @property
    def relative(self) -> bool:
        return self.input_limits == "reference"

    def fixed_limit(self) -> list[float]:
        return [self.input_cpu_seconds, self.input_wall_seconds]

    def reference_limit(self) -> list[float]:
        """The per-call limit of the reference's own calls: while it is measured, and beside an
        answer (its expected results) when limits are relative; the fixed limit otherwise."""
        if not self.relative:
            return self.fixed_limit()
        cpu = max(self.reference_cpu_seconds, self.input_cpu_seconds)
        return [cpu, cpu * self.input_wall_seconds / self.input_cpu_seconds]

    def call_limits(self, task: Task) -> tuple[list[list[float]], list[list[float]]]:
        """``[cpu, wall]`` seconds for each fixed test and each generated input of an answer to
        ``task``: the fixed pair, or derived from the reference's measured times (a call it was
        not measured on, e.g. an input on which it raises, gets the fixed pair)."""
        n_inputs = self.inputs if task.generator is not None else 0
        floor = self.fixed_limit()
        times = reference_times(task, self) if self.relative else None
        if times is None:
            return [floor] * len(task.tests), [floor] * n_inputs
        ratio = self.input_wall_seconds / self.input_cpu_seconds

        def one(seconds: float | None) -> list[float]:
            if seconds is None:
                return floor
            cpu = round(max(self.input_cpu_seconds, self.limit_factor * seconds), 3)
            return [cpu, round(cpu * ratio, 3)]

        return [one(t) for t in times["tests"]], [one(t) for t in times["inputs"][:n_inputs]]

    def process_limits(self, tasks: Sequence[Task], *, measure: bool = False) -> Limits:
        """The limits of the process that checks an answer to any of ``tasks`` (``measure``: that
        measures their references): ``limits``, raised so that they never cut short what the
        per-call limits allow: defining the code, every fixed test and, on each input, the
        reference, the answer and a re-run of both, each at its own limit, plus one call run again
        beside the reference with its limit doubling (``REJUDGE_ROUNDS``). A correct answer on a
        loaded machine is then stopped by a per-call limit, which the re-run checks, never by the
        whole process's. Measuring, the memory may reach ``REFERENCE_MEMORY_MB``; judging, twice
        the most a task's reference was measured to use."""
        cpu_total = wall_total = 0.0
        memory = self.limits.memory_mb
        for t in tasks:
            if measure:
                ref = self.reference_limit()
                n = len(t.tests) + (3 * self.inputs if t.generator is not None else 0)
                cpu, wall = (n + 1) * ref[0], (n + 1) * ref[1]
                if self.relative:
                    memory = max(memory, REFERENCE_MEMORY_MB)
            else:
                tests, inputs = self.call_limits(t)
                calls = [*tests, *inputs]
                rejudge = 2 * (2**REJUDGE_ROUNDS - 1)  # the answer and the reference, doubling
                cpu = self.input_cpu_seconds + 3 * sum(c for c, _ in calls)
                cpu += rejudge * max((c for c, _ in calls), default=0.0)
                wall = self.input_wall_seconds + 3 * sum(w for _, w in calls)
                wall += rejudge * max((w for _, w in calls), default=0.0)
                times = reference_times(t, self) if self.relative else None
                if times is not None and times.get("memory_mb"):
                    memory = max(memory, 2 * int(times["memory_mb"]))
            cpu_total, wall_total = max(cpu_total, cpu), max(wall_total, wall)
        return replace(
            self.limits,
            wall_seconds=max(self.limits.wall_seconds, wall_total),
            cpu_seconds=max(self.limits.cpu_seconds, math.ceil(cpu_total)),
            memory_mb=memory,
        )


def reference_times(task: Task, settings: OracleSettings) -> dict[str, Any] | None:
    """The reference's measured CPU seconds per call that ``task`` carries (``meta``, key
    ``REFERENCE_TIMES``: ``tests``, ``inputs`` (None where it raised), ``seed``, ``memory_mb``),
    or None when it carries none for these settings (another seed, fewer inputs)."""
    times = task.meta.get(REFERENCE_TIMES)
    if not isinstance(times, Mapping):
        return None
    tests, inputs = times.get("tests"), times.get("inputs")
    needed = settings.inputs if task.generator is not None else 0
    if (
        times.get("seed") != settings.seed
        or not isinstance(tests, list)
        or not isinstance(inputs, list)
        or len(tests) != len(task.tests)
        or len(inputs) < needed
    ):
        return None
    return dict(times)


def with_reference_times(task: Task, times: Mapping[str, Any]) -> Task:
    """``task`` carrying its reference's measured times (recorded with the task's ``meta``)."""
    return task.replace(meta={**task.meta, REFERENCE_TIMES: dict(times)})


class JudgementFields(TypedDict):
    """A ``Judgement`` as a record holds it (``Judgement.to_dict``)."""

    category: str
    detail: str
    code: str | None
    tests_passed: int
    inputs_passed: int
    inputs_skipped: int
    failing_input: int | None
    seconds: float


@dataclass(frozen=True)
class Judgement:
    """How one answer fared: its category and what led there."""

    category: str  # one of CATEGORIES
    detail: str = ""  # one line: the error, the failing test or input
    code: str | None = None  # the program that was judged (None when no code was found)
    tests_passed: int = 0  # fixed tests the answer passed
    inputs_passed: int = 0  # generated inputs on which the answer agreed with the reference
    inputs_skipped: int = 0  # inputs on which the reference (or the generator) raised
    failing_input: int | None = None  # index of the generated input that failed
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.category == "passed"

    def to_dict(self) -> JudgementFields:
        return {
            "category": self.category,
            "detail": self.detail,
            "code": self.code,
            "tests_passed": self.tests_passed,
            "inputs_passed": self.inputs_passed,
            "inputs_skipped": self.inputs_skipped,
            "failing_input": self.failing_input,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Judgement:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def static_errors(code: str) -> list[str]:
    """pyflakes' error findings on ``code`` (``STATIC_ERRORS``), as ``line N: message``."""
    from pyflakes.checker import Checker

    tree = ast.parse(code)
    found = []
    for m in Checker(tree, filename="answer.py").messages:
        if type(m).__name__ in STATIC_ERRORS:
            found.append(f"line {m.lineno}: {m.message % m.message_args}")
    return found


_PYLINT_LOCK = threading.Lock()  # Pylint keeps global state: one check at a time


@functools.lru_cache(maxsize=4096)
def pylint_errors(code: str) -> tuple[str, ...]:
    """Pylint's error checks (``--errors-only``: its E and F messages) on ``code``, as
    ``line N: symbol: message``; in this process, nothing runs."""
    import io
    import tempfile

    from pylint.lint import Run
    from pylint.reporters.text import TextReporter

    out = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="cctest-pylint-") as tmp, _PYLINT_LOCK:
        path = os.path.join(tmp, "answer.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
        Run(
            [
                path,
                "--errors-only",
                "--persistent=n",
                "--score=n",
                "--jobs=1",
                "--msg-template=@{line}:{symbol}: {msg}",
            ],
            reporter=TextReporter(out),
            exit=False,
        )
    found = []
    for line in out.getvalue().splitlines():
        if line.startswith("@"):
            number, _, rest = line[1:].partition(":")
            found.append(f"line {number}: {rest}")
    return tuple(found)


# The start every sandboxed driver shares (``driver_source``): CFG, ``emit`` (a line on the
# report's stdout), per-call CPU and wall-clock timers (``timed``; ``limit`` a [cpu, wall] pair, by
# default CFG's "cpu" and "wall"), ``classify`` (an exception's category and detail; an OSError
# whose errno is in the driver's RESOURCE_ERRNOS is resource exhaustion) and ``finish`` (the
# driver's ``result`` as the last "@R" line, then exit). A timer's signal raises only while its
# call runs: one still pending when the call has ended (both timers ran out together, or a signal
# came late) is dropped, so that no limit is raised outside the handler of the call it limited.
_PRELUDE = r"""
import errno, json, os, signal, sys, time
CFG = json.loads(%s)

def emit(text):
    os.write(1, (text + "\n").encode())

class _Limit(BaseException):
    pass

_ARMED = [None]  # the [cpu, wall] limit of the call under way; None between calls

def _on_timer(signum, frame):
    limit = _ARMED[0]
    if limit is None:
        return
    _ARMED[0] = None
    if signum == signal.SIGALRM:
        raise _Limit("wall-clock", limit[1])
    raise _Limit("CPU", limit[0])

signal.signal(signal.SIGALRM, _on_timer)
signal.signal(signal.SIGPROF, _on_timer)

def timed(fn, *args, limit=None):
    cpu, wall = limit if limit is not None else (CFG["cpu"], CFG["wall"])
    _ARMED[0] = [cpu, wall]
    signal.setitimer(signal.ITIMER_REAL, wall)
    signal.setitimer(signal.ITIMER_PROF, cpu)
    try:
        return fn(*args)
    finally:
        _ARMED[0] = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)

RESOURCE_ERRNOS = frozenset(getattr(errno, n) for n in CFG["resource_errnos"] if hasattr(errno, n))

def classify(exc):
    if isinstance(exc, _Limit):
        kind, limit = exc.args
        return "resource_exhaustion", "ran past the %%s limit of %%g s per input" %% (kind, limit)
    if isinstance(exc, MemoryError):
        return "resource_exhaustion", "MemoryError: the memory limit was reached"
    if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
        return "resource_exhaustion", "%%s: %%s" %% (type(exc).__name__, exc)
    return "runtime_error", ("%%s: %%s" %% (type(exc).__name__, exc)).strip()

def finish(category=None, detail=""):
    if category is not None:
        result["category"], result["detail"] = category, detail[:500]
    emit("@R" + json.dumps(result))
    sys.stdout.flush()
    os._exit(0)
"""


def driver_source(body: str, cfg: dict[str, Any]) -> str:
    """A sandboxed driver program: the shared start (CFG read from ``cfg``, ``emit``, ``timed``,
    ``classify``, ``finish``; see ``_PRELUDE``), then ``body``. Both are %-templates, so a literal
    ``%`` in ``body`` is written ``%%``."""
    return (_PRELUDE + body) % repr(json.dumps({**cfg, "resource_errnos": list(RESOURCE_ERRNOS)}))


def driver_report(output: str, marks: tuple[str, ...] = ("@T", "@I")) -> tuple[dict[str, Any] | None, str]:
    """What a driver's stdout says: its report (the last "@R" line's JSON; None where there is
    none or it is cut short) and the last progress line starting with one of ``marks``, without
    its "@" ("T3", "I7"; "" where none)."""
    report: dict[str, Any] | None = None
    last = ""
    for line in output.splitlines():
        if line.startswith("@R"):
            try:
                report = json.loads(line[2:])
            except ValueError:
                report = None
        elif line.startswith(marks):
            last = line[1:]
    return report, last


def process_category(run: RunResult) -> str:
    """The category of a driver that reported nothing, from how its process ended (a per-call
    limit's own exception, should one ever escape the driver, is resource exhaustion too)."""
    if run.outcome in ("timeout", "resource_limit") or run.detail.startswith("_Limit"):
        return "resource_exhaustion"
    return "runtime_error"


# The program that checks one answer. It runs in the sandbox as trusted code and reports on
# stdout: "@T<i>" before fixed test i, "@I<i>" before input i (so that a process killed mid-way
# says where), and one JSON line at the end. Each call has its own [cpu, wall] limit (CFG's
# "test_limits", "input_limits"; the reference's own calls "ref_limit"). An answer over its limit
# is run again beside the reference (``rejudge``). Measuring (CFG "measure": the answer is the
# reference), no call is run again and the CPU seconds of each are reported ("times").
_DRIVER = r"""
import copy, errno, math, random
NAME = CFG["name"]
MEASURE = CFG["measure"]
_null = open(os.devnull, "w")
sys.stdout = sys.stderr = _null  # what the code prints is not the oracle's report


def short(value, n=120):
    try:
        text = repr(value)
    except BaseException:
        text = "<unprintable %%s>" %% type(value).__name__
    return text if len(text) <= n else text[: n - 3] + "..."

def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if a == b or (math.isnan(a) and math.isnan(b)):
                return True
            return math.isclose(a, b, rel_tol=CFG["rel_tol"], abs_tol=CFG["abs_tol"])
        return False
    if (type(a) is list and type(b) is list) or (type(a) is tuple and type(b) is tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if all(hasattr(x, "shape") and hasattr(x, "tolist") for x in (a, b)):
        # NumPy arrays and matrices: == is element-wise, so compare the shapes and the elements
        return a.shape == b.shape and same(a.tolist(), b.tolist())
    return bool(a == b)

def _multiset_equal(a, b):
    # the benchmark harness's order-free list equality: same length, each element as often in both
    return len(a) == len(b) and all(a.count(x) == b.count(x) for x in a)

def _plain(items):
    return [x.tolist() if hasattr(x, "tolist") and not isinstance(x, list) else x for x in items]

def agrees(expected, got):
    rule = CFG["compare"]
    if rule == "upper" and isinstance(expected, str) and isinstance(got, str):
        return got.upper() == expected.upper()
    if rule == "unordered" and type(expected) is list and type(got) is list:
        return _multiset_equal(got, expected)
    if rule == "unordered_arrays" and type(expected) is list and type(got) is list:
        return _multiset_equal(_plain(got), _plain(expected))
    return same(expected, got)

def define(source, filename, limit=None):
    ns = {"__name__": "answer", "__builtins__": __builtins__}
    timed(exec, compile(source, filename, "exec"), ns, limit=limit)
    return ns

def over(call, limit):
    # does call run past limit? (how else it ends does not matter here)
    try:
        timed(call, limit=limit)
    except _Limit:
        return True
    except BaseException:
        return False
    return False

def rejudge(answer, reference, limit):
    # The answer ran past limit: run the reference, then the answer, again, back to back under
    # the same limit. The answer within it now: the first run was slowed, ("ran", its value).
    # The answer over it and the reference not: the answer is slow, ("slow", the limit), when
    # it ran past the CPU limit (CPU time hardly depends on the machine's load) or the rounds are
    # up; past the wall clock alone, the machine may be what is slow. Otherwise the machine is
    # slow: again with twice the limit the answer ran past; ("skip", None) when the reference too
    # runs past the last one. An exception of the answer's other than the limit propagates, as
    # on its first run.
    rounds = CFG["rejudge"]
    for k in range(rounds):
        reference_over = over(reference, limit)
        try:
            return "ran", timed(answer, limit=limit)
        except _Limit as exc:
            if not reference_over and (exc.args[0] == "CPU" or k == rounds - 1):
                return "slow", exc
            cpu_hit = exc.args[0] == "CPU"
        limit = [limit[0] * (2 if cpu_hit else 1), limit[1] * (1 if cpu_hit else 2)]
    return "skip", None

def measured(call, limit):
    # call's value and the CPU seconds it took, for a call of the reference's (or the
    # generator's): when it runs past
    # the wall clock the machine is slow, so it runs again with twice the wall-clock limit (the
    # rounds of rejudge); past the CPU limit, or past the last limit, it raises the limit
    rounds = CFG["rejudge"]
    for k in range(rounds):
        start = time.process_time()
        try:
            value = timed(call, limit=limit)
        except _Limit as exc:
            if exc.args[0] == "CPU" or k == rounds - 1:
                raise
            limit = [limit[0], 2 * limit[1]]
            continue
        return value, time.process_time() - start

def peak_memory_mb():
    # the most address space this process has had (what the sandbox's memory limit bounds)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) // 1024 + 1
    except (OSError, ValueError):
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 + 1

result = {"category": "passed", "detail": "", "tests_passed": 0, "inputs_passed": 0,
          "inputs_skipped": 0, "generator_errors": 0, "failing_input": None, "first_skip": ""}
TIMES = {"tests": [], "inputs": [], "seed": CFG["seed"]}
WHERE = [""]

def skip(why):
    result["inputs_skipped"] += 1
    result["first_skip"] = result["first_skip"] or why

def run_test(i, test, fn, ref):
    def call(f):
        return lambda: exec(compile(test, "test_%%d.py" %% i, "exec"),
                            {"__name__": "test", "__builtins__": __builtins__, NAME: f})
    limit = CFG["test_limits"][i]
    try:
        if MEASURE:
            TIMES["tests"].append(round(measured(call(fn), limit)[1], 4))
            return True
        try:
            timed(call(fn), limit=limit)
        except _Limit:
            if ref is None:
                raise
            verdict, value = rejudge(call(fn), call(ref), limit)
            if verdict == "slow":
                raise value
            if verdict == "skip":
                skip("fixed test %%d: the reference too ran past the limit" %% i)
                return False
    except AssertionError as exc:
        finish("assertion_error", ("fixed test %%d failed: %%s %%s" %% (i, test.strip()[:200], exc)).strip())
    except BaseException as exc:
        finish(classify(exc)[0], "fixed test %%d: %%s" %% (i, classify(exc)[1]))
    return True

def run_input(i, fn, ref, gen):
    try:
        args = measured(lambda: gen(random.Random(CFG["seed"] * 1000003 + i)), CFG["ref_limit"])[0]
    except BaseException as exc:
        result["generator_errors"] += 1
        result["first_skip"] = result["first_skip"] or "the generator raised " + classify(exc)[1]
        TIMES["inputs"].append(None)
        return
    args = args if isinstance(args, tuple) else (args,)
    try:
        expected, ref_seconds = measured(lambda: ref(*copy.deepcopy(args)), CFG["ref_limit"])
    except BaseException as exc:
        if MEASURE and isinstance(exc, _Limit):  # the reference is too slow for its limit
            result["failing_input"] = i
            finish(classify(exc)[0], "input %%d, %%s%%s: %%s" %% (i, NAME, short(args), classify(exc)[1]))
        TIMES["inputs"].append(None)
        skip("%%s%%s raised %%s" %% (NAME, short(args), classify(exc)[1]))
        return
    limit = CFG["input_limits"][i] if i < len(CFG["input_limits"]) else CFG["ref_limit"]
    answer = lambda: fn(*copy.deepcopy(args))
    try:
        try:
            if MEASURE:
                got, seconds = measured(answer, limit)
                TIMES["inputs"].append(round(min(seconds, ref_seconds), 4))
            else:
                got = timed(answer, limit=limit)
        except _Limit:
            if MEASURE:
                raise
            verdict, got = rejudge(answer, lambda: ref(*copy.deepcopy(args)), limit)
            if verdict == "slow":
                raise got
            if verdict == "skip":
                skip("input %%d: the reference too ran past the limit" %% i)
                return
    except BaseException as exc:
        result["failing_input"] = i
        category, detail = classify(exc)
        finish(category, "input %%d, %%s%%s: %%s" %% (i, NAME, short(args), detail))
    try:
        agree = timed(agrees, expected, got, limit=CFG["ref_limit"])
    except BaseException:
        agree = False
    if not agree:
        result["failing_input"] = i
        finish("fuzzing_failure", "input %%d, %%s%%s returned %%s, expected %%s"
               %% (i, NAME, short(args), short(got), short(expected)))
    result["inputs_passed"] += 1

def main():
    try:
        ns = define(CFG["code"], "answer.py", CFG["ref_limit"] if MEASURE else None)
    except BaseException as exc:
        finish(*classify(exc))
    fn = ns.get(NAME)
    if not callable(fn):
        finish("runtime_error", "running the answer does not define a function %%s" %% NAME)
    ref = gen = None
    if CFG["reference"] is not None:
        try:
            ref = define(CFG["reference"], "reference.py", CFG["ref_limit"])[NAME]
            if CFG["generator"] is not None:
                gen = define(CFG["generator"], "generator.py", CFG["ref_limit"])["generate"]
        except BaseException as exc:
            why = "the task's reference or generator cannot be defined: " + classify(exc)[1]
            finish("task_error", why)
    for i, test in enumerate(CFG["tests"]):
        WHERE[0] = "fixed test %%d" %% i
        emit("@T%%d" %% i)
        if run_test(i, test, fn, ref):
            result["tests_passed"] += 1
    if gen is not None:
        for i in range(CFG["inputs"]):
            WHERE[0] = "input %%d" %% i
            emit("@I%%d" %% i)
            run_input(i, fn, ref, gen)

try:
    main()
    if MEASURE:
        TIMES["memory_mb"] = peak_memory_mb()
        result["times"] = TIMES
except BaseException as exc:  # nothing a stage lets through ends the process unreported
    category, detail = classify(exc)
    finish(category, "%%s: %%s" %% (WHERE[0], detail) if WHERE[0] else detail)
finish()
"""


def driver_program(task: Task, code: str, settings: OracleSettings, *, measure: bool = False) -> str:
    """The sandboxed program that checks ``code`` (an answer's program) against ``task``;
    ``measure``: ``code`` is the reference, whose CPU seconds per call it reports."""
    tests, inputs = settings.call_limits(task)
    reference = settings.reference_limit()
    if measure:
        tests, inputs = [reference] * len(tests), [reference] * len(inputs)
    cfg = {
        "name": task.name,
        "code": code,
        "reference": task.reference,
        "generator": task.generator,
        "tests": list(task.tests),
        "inputs": settings.inputs if task.generator is not None else 0,
        "seed": settings.seed,
        "abs_tol": task.abs_tol if task.abs_tol is not None else settings.abs_tol,
        "rel_tol": task.rel_tol if task.rel_tol is not None else settings.rel_tol,
        "compare": task.rules.get("compare", "ordered"),
        "cpu": settings.input_cpu_seconds,
        "wall": settings.input_wall_seconds,
        "test_limits": tests,
        "input_limits": inputs,
        "ref_limit": reference,
        "rejudge": REJUDGE_ROUNDS,
        "measure": measure,
    }
    return driver_source(_DRIVER, cfg)


def interpret(run: RunResult, code: str) -> tuple[Judgement, dict[str, Any]]:
    """A judgement from the driver's output; the process's own outcome where it reported nothing."""
    report, last = driver_report(run.output)
    if report is not None:
        return (
            Judgement(
                category=report["category"],
                detail=report["detail"],
                code=code,
                tests_passed=report["tests_passed"],
                inputs_passed=report["inputs_passed"],
                inputs_skipped=report["inputs_skipped"] + report["generator_errors"],
                failing_input=report["failing_input"],
                seconds=run.seconds,
            ),
            report,
        )
    where = ""
    failing = None
    if last.startswith("T"):
        where = f" during fixed test {last[1:]}"
    elif last.startswith("I"):
        where = f" on input {last[1:]}"
        failing = int(last[1:])
    return Judgement(
        process_category(run), f"{run.detail}{where}", code, failing_input=failing, seconds=run.seconds
    ), {}


def prejudge(task: Task, answer: str, prompt: str | None, static_check: str = "pyflakes") -> Judgement | str:
    """The category decided without running anything, or the program to run."""
    found = extract_function(task, answer, prompt)
    if not found.ok or found.code is None:
        return Judgement(found.category or "no_function", found.detail, found.code)
    errors = static_errors(found.code)
    if not errors and static_check == "pylint":
        errors = list(pylint_errors(found.code))
    if errors:
        return Judgement("static_error", "; ".join(errors[:3]), found.code)
    return found.code


def run_judged(
    items: Sequence[tuple[Task, str, str | None]],
    settings: OracleSettings,
    *,
    prepare: Callable[[Task, str, str | None], Judgement | str],
    driver: Callable[[Task, str, OracleSettings], str],
    read: Callable[[RunResult, str], Judgement],
    workers: int = 2,
    on_done: Callable[[int, Judgement], None] | None = None,
) -> list[Judgement]:
    """Judge ``(task, answer, prompt)`` triples in the sandbox, in the order given: ``prepare``
    decides an answer without running it (a Judgement) or gives the code to run; ``driver`` makes
    the program that checks that code; ``read`` judges from how the program ran. Identical
    programs run once; at most ``workers`` processes at a time; ``on_done`` hears each judgement."""
    out: list[Judgement | None] = [None] * len(items)
    programs: dict[str, list[int]] = {}
    codes: dict[str, str] = {}
    for i, (task, answer, prompt) in enumerate(items):
        pre = prepare(task, answer, prompt)
        if isinstance(pre, Judgement):
            out[i] = pre
            if on_done is not None:
                on_done(i, pre)
            continue
        program = driver(task, pre, settings)
        programs.setdefault(program, []).append(i)
        codes[program] = pre
    distinct = list(programs)

    def done(k: int, run: RunResult) -> None:
        program = distinct[k]
        judgement = read(run, codes[program])
        for i in programs[program]:
            out[i] = judgement
            if on_done is not None:
                on_done(i, judgement)

    limits = settings.process_limits([items[programs[p][0]][0] for p in distinct])
    run_many(distinct, limits, workers=workers, on_done=done, output_bytes=OUTPUT_BYTES)
    return [j for j in out if j is not None]


def judge_many(
    items: Sequence[tuple[Task, str, str | None]],
    settings: OracleSettings | None = None,
    *,
    workers: int = 2,
    on_done: Callable[[int, Judgement], None] | None = None,
) -> list[Judgement]:
    """Judge ``(task, answer, prompt)`` triples; ``prompt`` is the stub a completion continued
    (None for a chat answer). Identical programs for the same task run once; at most ``workers``
    sandboxed processes at a time. Judgements come back in the order given. With relative limits
    (``input_limits="reference"``), a task that carries no measured times of its reference is
    measured first (``check_and_time``)."""
    settings = settings or OracleSettings()
    static_check = settings.static_check
    if settings.relative:
        items = timed_items(items, settings, workers)
    out = run_judged(
        items,
        settings,
        prepare=lambda task, answer, prompt: prejudge(task, answer, prompt, static_check),
        driver=driver_program,
        read=lambda run, code: interpret(run, code)[0],
        workers=workers,
        on_done=on_done,
    )
    broken = [j for j in out if j.category == "task_error"]
    if broken:
        raise TaskError(f"{broken[0].detail}; check the task with check_reference.")
    return out


def timed_items(
    items: Sequence[tuple[Task, str, str | None]], settings: OracleSettings, workers: int = 2
) -> list[tuple[Task, str, str | None]]:
    """``items`` with every task carrying its reference's measured times (``with_reference_times``),
    each task lacking them measured once; ``TaskError`` for a reference that cannot be measured."""
    from concurrent.futures import ThreadPoolExecutor

    lacking: dict[str, Task] = {}
    for task, _, _ in items:
        if task.reference is not None and reference_times(task, settings) is None:
            lacking.setdefault(task.task_id, task)
    if not lacking:
        return list(items)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        found = pool.map(lambda t: check_and_time(t, settings)[1], lacking.values())
        times = {tid: t for tid, t in zip(lacking, found, strict=True) if t is not None}
    return [
        (with_reference_times(task, times[task.task_id]) if task.task_id in times else task, answer, prompt)
        for task, answer, prompt in items
    ]


def judge(
    task: Task, answer: str, prompt: str | None = None, settings: OracleSettings | None = None
) -> Judgement:
    """Judge one answer (see ``judge_many``)."""
    return judge_many([(task, answer, prompt)], settings, workers=1)[0]


def check_reference(task: Task, settings: OracleSettings | None = None) -> Judgement:
    """Run the task's reference as an answer; ``TaskError`` if it cannot judge anything.

    The reference must define the function, pass the task's fixed tests and return on at least
    one generated input (inputs on which it raises are skipped when answers are judged).
    """
    return check_and_time(task, settings)[0]


def check_and_time(
    task: Task, settings: OracleSettings | None = None
) -> tuple[Judgement, dict[str, Any] | None]:
    """``check_reference``, and with relative limits the reference's CPU seconds on each fixed
    test and generated input (``None`` where it raised), its peak memory and the seed, measured
    in the same run, to be carried by the task (``with_reference_times``); ``None`` for fixed
    limits. The reference runs under its own limit (``OracleSettings.reference_limit``), and is
    not run again when it runs past it: it is too slow for the limits (``TaskError``)."""
    settings = settings or OracleSettings()
    if task.reference is None:
        raise TaskError(f"task '{task.task_id}' has no reference to check.")
    found = extract_function(task, task.reference)
    if not found.ok or found.code is None:
        raise TaskError(
            f"task '{task.task_id}': the reference is unusable ({found.category}: {found.detail})."
        )
    program = driver_program(task, found.code, settings, measure=True)
    limits = settings.process_limits([task], measure=True)
    run = run_many([program], limits, workers=1, output_bytes=OUTPUT_BYTES)[0]
    judgement, report = interpret(run, found.code)
    if judgement.category != "passed":
        raise TaskError(
            f"task '{task.task_id}': the reference fails its own checks "
            f"({judgement.category}: {judgement.detail})."
        )
    if task.generator is not None and settings.inputs > 0 and judgement.inputs_passed == 0:
        raise TaskError(
            f"task '{task.task_id}': the reference raises on every one of its {settings.inputs} generated "
            f"inputs ({report.get('first_skip', '')})."
        )
    times = report.get("times") if settings.relative else None
    return judgement, (dict(times) if isinstance(times, dict) else None)
