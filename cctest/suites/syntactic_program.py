"""The syntactic suite's paper prompt (``--prompt paper``): a program that prints the solutions.

Sarker et al. (§5, Prompts 1-5) ask for a program that reads the coefficients and prints the
solutions for 'x': 2 digits after the decimal point, 6 for the trigonometric equations (only one of
their solutions), the quadratic's roots comma-separated or 'No real roots'. They judge a program by
running it on 1,000 generated inputs and comparing what it prints with their reference solution,
within ε: 0.02 for 2 digits, 0.000002 for 6 (§7, "Code equivalence"), after taking the numbers out
of the output ("solution is", "x=" around them).

cctest asks for a Python program (its sandbox runs Python; the paper's are C) in the paper's
words, and judges it here (``judge_programs``), one sandboxed process per answer
(``cctest.bench.sandbox.run_many``), where a driver runs the program once per generated input
with the coefficients both on standard input (one a line; if the program fails on that, all on
one line) and as its command-line arguments, reads the numbers it printed and compares them with
the equation's exact solutions:

* linear, log, ln: at least one number printed, every one within ε of the solution;
* quadratic: the printed numbers and the real roots within ε of each other both ways (a double
  root printed once or twice); with no real root, no number and 'no real roots' printed;
* sin, cos, tan: at least one number printed, every one a solution: within ε of one of the
  equation's solutions modulo the period (2π; π for tan), so ``asin``'s -0.5 counts as 2π - 0.5.

ε is ``--epsilon`` (default 0.02) for the 2-digit kinds and ``--epsilon`` / 10⁴ (0.000002) for the
6-digit ones; besides ε, a relative 1e-9 (log's solutions can be huge). An answer ends in one of
the oracle's categories: no code is ``no_function``, a program that does not parse
``syntax_error``, pyflakes' errors ``static_error``, an exception or an exit status other than 0
``runtime_error``, a per-input limit ``resource_exhaustion``, wrong output ``fuzzing_failure``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..bench.sandbox import RunResult
from ..tasks.model import Task
from ..tasks.oracle import (
    Judgement,
    OracleSettings,
    driver_report,
    driver_source,
    process_category,
    run_judged,
    static_errors,
)

PROMPTS = ("function", "paper")  # cctest's Python function (default), the paper's program
TRIG = ("sin", "cos", "tan")

_INPUTS = {
    2: "'a' and 'b' are inputs to the program. Assume that none of 'a' or 'b' are 0.",
    3: "'a', 'b' and 'c' are inputs to the program. Assume that none of 'a', 'b', or 'c' are 0.",
}
_TWO = "Print only the solution for 'x' up to 2 digit precision after decimal (do not print anything else)."
_WORDING = {
    "linear": "{start}, where {inputs} " + _TWO,
    "quadratic": "{start}, where {inputs} Print only the solution for 'x' up to 2 digit precision after "
    "decimal (do not print anything else). Print the solutions in comma separated form. If there are "
    "no real solutions then print 'No real roots'.",
    "trig": "{start}, where {inputs} Print only one of the solutions for 'x' in radian format up to 6 "
    "digit precision after decimal (do not print anything else).",
    "log": "{start}, in base 10 (not base e), where {inputs} " + _TWO,
    "ln": "{start}, in base e (not base 10), where {inputs} " + _TWO,
}


def paper_description(kind: str, formula: str) -> str:
    """The paper's prompt (§5, Prompts 1-5) for ``kind`` with ``formula``, asking for Python."""
    start = f"Implement a Python program that finds the solutions for 'x' in {formula}"
    inputs = _INPUTS[3 if kind == "quadratic" else 2]
    return _WORDING["trig" if kind in TRIG else kind].format(start=start, inputs=inputs)


def paper_epsilon(kind: str, epsilon: float) -> float:
    """ε for ``kind``: ``epsilon`` for 2 digits, ``epsilon`` / 10⁴ for the trigonometric 6 digits
    (the paper: 0.02 and 0.000002)."""
    return epsilon / 10_000 if kind in TRIG else epsilon


_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.S)


def extract_program(answer: str) -> str | None:
    """The program in an answer: its longest fenced block (a Python one first), else the whole
    answer; None when there is no code."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(answer)]
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    chosen = max(python or [body for _, body in blocks] or [answer], key=len)
    return chosen if chosen.strip() else None


# Runs in the sandbox: the answer's program on each generated input, its output read and compared.
_DRIVER = r"""
import io, math, random, re
KIND, EPS, REL = CFG["kind"], CFG["eps"], CFG["rel"]
TAU = 2 * math.pi

result = {"category": "passed", "detail": "", "inputs_passed": 0, "inputs_skipped": 0,
          "failing_input": None}

def solutions(a, b, c=None):
    if KIND == "linear":
        return [-b / a]
    if KIND == "quadratic":
        d = b * b - 4 * a * c
        if d < 0:
            return []
        r = math.sqrt(d)
        return sorted({(-b - r) / (2 * a), (-b + r) / (2 * a)})
    if KIND in ("sin", "cos"):
        r = b / a
        if r < -1 or r > 1:
            return []
        x = math.asin(r) if KIND == "sin" else math.acos(r)
        return [x %% TAU, ((math.pi - x) if KIND == "sin" else (TAU - x)) %% TAU]
    if KIND == "tan":
        return [math.atan(b / a) %% math.pi]
    if KIND == "log":
        return [10 ** (b / a)]
    return [math.exp(b / a)]

NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![A-Za-z_\d])")

def near(p, s):
    if KIND in ("sin", "cos", "tan"):
        period = math.pi if KIND == "tan" else TAU
        d = (p - s) %% period
        return min(d, period - d) <= EPS
    return abs(p - s) <= EPS or abs(p - s) <= REL * abs(s)

def judge_output(text, sols):
    printed = [float(m) for m in NUMBER.findall(text)]
    if not sols:
        if printed or "no real" not in text.lower():
            return "printed %%r where there is no real solution ('No real roots' asked)" %% text[:120]
        return None
    if not printed:
        return "printed no number (%%r)" %% text[:120]
    if not all(any(near(p, s) for s in sols) for p in printed):
        return "printed %%r" %% text[:120]
    if KIND == "quadratic" and not all(any(near(p, s) for p in printed) for s in sols):
        return "printed %%r, not every root" %% text[:120]
    return None

try:
    program = compile(CFG["code"], "program.py", "exec")
    gen_ns = {"__name__": "generator"}
    exec(compile(CFG["generator"], "generator.py", "exec"), gen_ns)
    generate = gen_ns["generate"]
except BaseException as exc:
    finish(*classify(exc))

def run(args, stdin):
    sys.stdin = io.StringIO(stdin)
    sys.argv = ["program.py", *map(str, args)]
    out = io.StringIO()
    sys.stdout = sys.stderr = out
    try:
        # exit() and quit() come from the site module, which the sandbox does not import
        timed(exec, program, {"__name__": "__main__", "__builtins__": __builtins__,
                              "exit": sys.exit, "quit": sys.exit})
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return None, ("runtime_error", "exited with status %%s" %% (exc.code,))
    except BaseException as exc:
        return None, classify(exc)
    finally:
        sys.stdout, sys.stderr, sys.stdin = sys.__stdout__, sys.__stderr__, sys.__stdin__
    return out.getvalue(), None

for i in range(CFG["inputs"]):
    emit("@I%%d" %% i)
    try:
        args = tuple(timed(generate, random.Random(CFG["seed"] * 1000003 + i)))
        sols = solutions(*args)
    except BaseException as exc:
        result["inputs_skipped"] += 1
        continue
    output, error = run(args, "".join("%%s\n" %% a for a in args))
    if error is not None and error[0] != "resource_exhaustion":
        output, second = run(args, " ".join(map(str, args)) + "\n")
        error = None if output is not None else error
    if error is not None:
        result["failing_input"] = i
        finish(error[0], "input %%d, %%s: %%s" %% (i, args, error[1]))
    wrong = judge_output(output, sols)
    if wrong is not None:
        result["failing_input"] = i
        finish("fuzzing_failure", "input %%d, %%s: %%s; the solutions are %%s"
               %% (i, args, wrong, [round(s, 6) for s in sols]))
    result["inputs_passed"] += 1
finish()
"""


def driver_program(task: Task, code: str, settings: OracleSettings) -> str:
    """The sandboxed program that runs ``code`` (the answer's program) on ``task``'s inputs."""
    cfg = {
        "kind": task.meta["equation"],
        "code": code,
        "generator": task.generator,
        "inputs": settings.inputs,
        "seed": settings.seed,
        "eps": task.abs_tol if task.abs_tol is not None else settings.abs_tol,
        "rel": task.rel_tol if task.rel_tol is not None else settings.rel_tol,
        "cpu": settings.input_cpu_seconds,
        "wall": settings.input_wall_seconds,
    }
    return driver_source(_DRIVER, cfg)


def _interpret(run: RunResult, code: str) -> Judgement:
    """A judgement from the driver's report, or from how its process ended."""
    report, mark = driver_report(run.output, ("@I",))
    last = int(mark[1:]) if mark else None
    if report is not None:
        return Judgement(
            category=report["category"],
            detail=report["detail"],
            code=code,
            inputs_passed=report["inputs_passed"],
            inputs_skipped=report["inputs_skipped"],
            failing_input=report["failing_input"],
            seconds=run.seconds,
        )
    where = "" if last is None else f" on input {last}"
    return Judgement(
        process_category(run), f"{run.detail}{where}", code, failing_input=last, seconds=run.seconds
    )


def _prepare(answer: str) -> Judgement | str:
    """The category decided without running anything, or the program to run."""
    code = extract_program(answer)
    if code is None:
        return Judgement("no_function", "the answer holds no program")
    try:
        errors = static_errors(code)
    except SyntaxError as exc:
        return Judgement("syntax_error", f"line {exc.lineno}: {exc.msg}", code)
    if errors:
        return Judgement("static_error", "; ".join(errors[:3]), code)
    return code


def judge_programs(
    items: Sequence[tuple[Task, str, str | None]],
    settings: OracleSettings | None = None,
    *,
    workers: int = 2,
    on_done: Callable[[int, Judgement], None] | None = None,
) -> list[Judgement]:
    """Judge ``(task, answer, prompt)`` triples whose answers are programs printing the solutions
    (the module says how); the same signature as ``cctest.tasks.oracle.judge_many``."""
    return run_judged(
        items,
        settings or OracleSettings(),
        prepare=lambda task, answer, prompt: _prepare(answer),
        driver=driver_program,
        read=_interpret,
        workers=workers,
        on_done=on_done,
    )
