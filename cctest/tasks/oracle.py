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

from ..bench.sandbox import Limits, RunResult, run_many
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


@dataclass(frozen=True)
class OracleSettings:
    """How answers are judged. ``limits`` bound the whole process that checks one answer."""

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

    def __post_init__(self) -> None:
        if self.inputs < 0:
            raise ConfigError("the number of generated inputs must be at least 0.")
        if self.abs_tol < 0 or self.rel_tol < 0:
            raise ConfigError("float tolerances must be >= 0.")
        if self.static_check not in STATIC_CHECKS:
            raise ConfigError(f"the static check must be one of {', '.join(STATIC_CHECKS)}.")
        if self.input_cpu_seconds <= 0 or self.input_wall_seconds <= 0:
            raise ConfigError("per-input CPU and wall-clock limits must be positive.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def process_limits(self, tasks: Sequence[Task]) -> Limits:
        """The limits of the process that checks an answer to any of ``tasks``: ``limits``, raised
        so that they never cut short what the per-input limits allow: every fixed test, and on each
        input the reference, the answer and the reference's re-run, each at its own per-input limit
        (plus one for defining the code). A correct answer on a loaded machine is then stopped by
        a per-input limit, which the reference's re-run checks, never by the whole process's."""
        calls = 1 + max((len(t.tests) + (3 * self.inputs if t.generator else 0) for t in tasks), default=0)
        return replace(
            self.limits,
            wall_seconds=max(self.limits.wall_seconds, calls * self.input_wall_seconds),
            cpu_seconds=max(self.limits.cpu_seconds, math.ceil(calls * self.input_cpu_seconds)),
        )


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
# report's stdout), per-call CPU and wall-clock timers (``timed``), ``classify`` (an exception's
# category and detail; an OSError whose errno is in the driver's RESOURCE_ERRNOS is resource
# exhaustion) and ``finish`` (the driver's ``result`` as the last "@R" line, then exit).
_PRELUDE = r"""
import json, os, signal, sys
CFG = json.loads(%s)

def emit(text):
    os.write(1, (text + "\n").encode())

class _Limit(BaseException):
    pass

def _on_timer(signum, frame):
    raise _Limit("wall-clock" if signum == signal.SIGALRM else "CPU")

signal.signal(signal.SIGALRM, _on_timer)
signal.signal(signal.SIGPROF, _on_timer)

def timed(fn, *args):
    signal.setitimer(signal.ITIMER_REAL, CFG["wall"])
    signal.setitimer(signal.ITIMER_PROF, CFG["cpu"])
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)

RESOURCE_ERRNOS = frozenset()

def classify(exc):
    if isinstance(exc, _Limit):
        limit = CFG["wall"] if str(exc) == "wall-clock" else CFG["cpu"]
        return "resource_exhaustion", "ran past the %%s limit of %%g s per input" %% (exc, limit)
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
    return (_PRELUDE + body) % repr(json.dumps(cfg))


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
    """The category of a driver that reported nothing, from how its process ended."""
    return "resource_exhaustion" if run.outcome in ("timeout", "resource_limit") else "runtime_error"


# The program that checks one answer. It runs in the sandbox as trusted code and reports on
# stdout: "@T<i>" before fixed test i, "@I<i>" before input i (so that a process killed mid-way
# says where), and one JSON line at the end.
_DRIVER = r"""
import copy, errno, math, random
NAME = CFG["name"]
_null = open(os.devnull, "w")
sys.stdout = sys.stderr = _null  # what the code prints is not the oracle's report

RESOURCE_ERRNOS = {errno.EAGAIN, errno.EFBIG, errno.ENOMEM, errno.EMFILE, errno.ENFILE}

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

def define(source, filename):
    ns = {"__name__": "answer", "__builtins__": __builtins__}
    timed(exec, compile(source, filename, "exec"), ns)
    return ns

def ref_also_slow(call):
    # the answer ran past a per-input limit: does the reference, run again at once in the same
    # process and under the same limits, run past it too? Then the limit, not the answer, failed.
    try:
        timed(call)
    except _Limit:
        return True
    except BaseException:
        return False
    return False

result = {"category": "passed", "detail": "", "tests_passed": 0, "inputs_passed": 0,
          "inputs_skipped": 0, "generator_errors": 0, "failing_input": None, "first_skip": ""}

try:
    ns = define(CFG["code"], "answer.py")
except BaseException as exc:
    finish(*classify(exc))
fn = ns.get(NAME)
if not callable(fn):
    finish("runtime_error", "running the answer does not define a function %%s" %% NAME)

ref = gen = None
if CFG["reference"] is not None:
    try:
        ref = define(CFG["reference"], "reference.py")[NAME]
        if CFG["generator"] is not None:
            gen = define(CFG["generator"], "generator.py")["generate"]
    except BaseException as exc:
        finish("task_error", "the task's reference or generator cannot be defined: %%s" %% classify(exc)[1])

for i, test in enumerate(CFG["tests"]):
    emit("@T%%d" %% i)
    try:
        timed(exec, compile(test, "test_%%d.py" %% i, "exec"),
              {"__name__": "test", "__builtins__": __builtins__, NAME: fn})
    except AssertionError as exc:
        finish("assertion_error", ("fixed test %%d failed: %%s %%s" %% (i, test.strip()[:200], exc)).strip())
    except BaseException as exc:
        category, detail = classify(exc)
        if isinstance(exc, _Limit) and ref is not None and ref_also_slow(
                lambda: exec(compile(test, "test_%%d.py" %% i, "exec"),
                             {"__name__": "test", "__builtins__": __builtins__, NAME: ref})):
            result["inputs_skipped"] += 1
            why = "fixed test %%d: the reference too %%s" %% (i, detail)
            result["first_skip"] = result["first_skip"] or why
            continue
        finish(category, "fixed test %%d: %%s" %% (i, detail))
    result["tests_passed"] += 1

if gen is not None:
    for i in range(CFG["inputs"]):
        emit("@I%%d" %% i)
        try:
            args = timed(gen, random.Random(CFG["seed"] * 1000003 + i))
        except BaseException as exc:
            result["generator_errors"] += 1
            result["first_skip"] = result["first_skip"] or "the generator raised " + classify(exc)[1]
            continue
        args = args if isinstance(args, tuple) else (args,)
        try:
            expected = timed(ref, *copy.deepcopy(args))
        except BaseException as exc:
            result["inputs_skipped"] += 1
            if not result["first_skip"]:
                result["first_skip"] = "%%s%%s raised %%s" %% (NAME, short(args), classify(exc)[1])
            continue
        try:
            got = timed(fn, *copy.deepcopy(args))
        except BaseException as exc:
            if isinstance(exc, _Limit) and ref_also_slow(lambda: ref(*copy.deepcopy(args))):
                # the reference runs past the same limit now: the machine is slow, not the answer
                result["inputs_skipped"] += 1
                why = "input %%d: the reference too ran past the limit" %% i
                result["first_skip"] = result["first_skip"] or why
                continue
            result["failing_input"] = i
            category, detail = classify(exc)
            finish(category, "input %%d, %%s%%s: %%s" %% (i, NAME, short(args), detail))
        try:
            agree = timed(agrees, expected, got)
        except BaseException as exc:
            agree = False
        if not agree:
            result["failing_input"] = i
            finish("fuzzing_failure", "input %%d, %%s%%s returned %%s, expected %%s"
                   %% (i, NAME, short(args), short(got), short(expected)))
        result["inputs_passed"] += 1
finish()
"""


def driver_program(task: Task, code: str, settings: OracleSettings) -> str:
    """The sandboxed program that checks ``code`` (an answer's program) against ``task``."""
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
    sandboxed processes at a time. Judgements come back in the order given."""
    settings = settings or OracleSettings()
    static_check = settings.static_check
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
    settings = settings or OracleSettings()
    if task.reference is None:
        raise TaskError(f"task '{task.task_id}' has no reference to check.")
    found = extract_function(task, task.reference)
    if not found.ok or found.code is None:
        raise TaskError(
            f"task '{task.task_id}': the reference is unusable ({found.category}: {found.detail})."
        )
    program = driver_program(task, found.code, settings)
    run = run_many([program], settings.process_limits([task]), workers=1, output_bytes=OUTPUT_BYTES)[0]
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
    return judgement
