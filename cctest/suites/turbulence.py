"""The Turbulence suite (Honarvar et al.): question templates, their neighbourhoods, and the oracle.

A *question template* is a programming question in words with parameters ``$0``, ``$1``, ...; a
*question instance* fills them with one row of parameter values; the instances of one template
are its *neighbourhood*. Each template comes with an oracle template: a model solution and fixed
tests with the same parameters, a random input generator, and a generator of parameter rows.

Templates are read in the layout of the public Turbulence benchmark (a clone of its repository,
or cctest's own templates in ``turbulence_templates/``)::

    Benchmark/All_questions.json          {"1": "Write a function called 'f' ... $0 ...", ...}
    Benchmark/Q<n>/question.txt.template  the question (else All_questions.json's text)
    Benchmark/Q<n>/solution.py.template   the model solution, over $0 ... $(k-1)
    Benchmark/Q<n>/tests.py.template      fixed tests; $k the instance's folder number, $(k+1) the
                                          function's name, $(k+2) the model, $(k+3) the round
    Benchmark/Q<n>/genparams.py           gen_params(q_no, seed) -> parameter rows; it reads
                                          Q<n>/manually_chosen_params.txt (hand-picked rows)
    Benchmark/Q<n>/gen_function_params.py input_generator(l, seed) -> one input for parameter row l

The loader reads only files inside the benchmark folder (a key of ``All_questions.json`` is a
plain name, no symbolic link may lead out), each within its size bound (``MAX_*_BYTES``). The
benchmark's own code (``genparams.py``) runs in the bench's sandbox, each template's in a process
of its own under ``GENPARAMS_LIMITS`` (with the packages of cctest's environment, NumPy among
them, as every sandboxed program). A template whose generator fails, whose filled texts are over
their bounds, or any of whose instances has a reference failing its own checks, is skipped as a
whole with one sentence (``errors`` here; ``skip_broken=template_of`` in the run).
Each instance becomes one ``cctest.tasks.Task`` (``meta``: ``template``, ``instance``,
``params``), so running, judging (Turbulence's categories, Table II) and resuming are the shared
task run's; the metrics are in ``cctest.suites.turbulence_metrics``.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..bench.kinds import Table, model_label
from ..bench.render import pct
from ..bench.sandbox import Limits
from ..errors import ConfigError
from ..tasks.model import Task
from ..tasks.run import TasksKind, TasksSummary, mode_label
from ..userfile import human_size, read_user_text

BUILTIN = Path(__file__).with_name("turbulence_templates")
FILES = ("solution.py.template", "tests.py.template", "genparams.py", "gen_function_params.py")
# the benchmark's (config.json: "seed": "1", a string: random.seed("1") and random.seed(1) differ)
DEFAULT_PARAM_SEED = "1"
# The benchmark's own wordings of a question instance, verbatim: the question alone, with neither
# the function's signature nor cctest's words around it. RECORDED_INSTRUCTION is the prompt the
# published GPT-4 runs recorded (GPT4_T_0/.../model_specs_prompt.json, "complete_prompt"): the
# question between the two sentences on the task and those on the code; BENCHMARK_INSTRUCTION is
# the repository's current harness (open_ai_api.py), which puts the question at the end.
RECORDED_INSTRUCTION = (
    "Here is a text specification delimited by angle brackets. Create Python code according to the "
    "text specification. <{description}> The Python code should not contain any comments. The Python "
    "code should be delimited only by triple backticks."
)
BENCHMARK_INSTRUCTION = (
    "Here is a text specification delimited by angle brackets. Create Python code according to the "
    "text specification. The Python code should not contain any comments. The Python code should be "
    "delimited only by triple backticks. <{description}>"
)
# --prompt's choices and the wording of each (cctest: its own, with the signature)
PROMPTS = {"recorded": RECORDED_INSTRUCTION, "benchmark": BENCHMARK_INSTRUCTION, "cctest": None}
DEFAULT_PROMPT = "recorded"


@dataclass(frozen=True)
class HarnessRule:
    """How the benchmark's harness (``benchmark_test.py``, ``helper_functions.py``) judges one
    question where it departs from its general rule (see ``HARNESS_RULES``)."""

    compare: str = "ordered"  # a Task rule: ordered, upper, unordered, unordered_arrays
    spread: str = "tuple"  # the generated input: "tuple" spread when a tuple, "single" never, "as_is" always
    arg_counts: str = "reference"  # "reference": as many parameters as the model solution; "q34"
    why: str = ""


# The harness's question-specific rules, keyed by question number; every other question gets
# HarnessRule(): a generated tuple is spread over the arguments, results compared with ==
# (lists element by element), and the answer must declare as many parameters as the model solution.
HARNESS_RULES: dict[str, HarnessRule] = {
    "34": HarnessRule(
        spread="as_is",
        arg_counts="q34",
        why="the input (a list of sets) is spread over the arguments; the answer may declare $0 "
        "parameters or one (*args)",
    ),
    "48": HarnessRule(
        compare="upper",
        spread="single",
        why="hexadecimal letters in either case (the question allows both); the tuple is one argument",
    ),
    "54": HarnessRule(spread="single", why="the tuple is one argument; a list result compared with =="),
    "55": HarnessRule(compare="unordered", why="the list of sublists in any order"),
    "56": HarnessRule(compare="unordered", why="the list in any order"),
    "57": HarnessRule(compare="unordered_arrays", why="the list of submatrices in any order"),
    "59": HarnessRule(spread="single", why="the tuple is one argument; a list result compared with =="),
    "60": HarnessRule(spread="single", why="the tuple is one argument; a list result compared with =="),
}
# Bounds on what the loader reads from a benchmark folder (the public benchmark's largest: a
# 20 KB All_questions.json, a 1 KB question, a 3 KB tests.py.template), so that a hostile folder
# costs neither memory nor a huge results.jsonl.
MAX_INDEX_BYTES = 4 << 20  # All_questions.json
MAX_QUESTION_BYTES = 64 << 10  # one question's text, also once filled with a parameter row
MAX_TEMPLATE_BYTES = 256 << 10  # a solution, tests, generator or hand-picked-rows file, also filled
MAX_ROWS_BYTES = 1 << 20  # one template's parameter rows, as JSON
_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a question key names its folder Q<key>: no path in it
_PARAM = re.compile(r"\$(\d+)")
_CALLED = re.compile(r"function called\s+['‘`\"]([A-Za-z_]\w*)['’`\"]")
_IMPORT = re.compile(r"^\s*from\s+\S*generated_answer\s+import\s+.*$", re.MULTILINE)


@dataclass(frozen=True)
class Template:
    """One question template and its oracle template, as read from a benchmark folder."""

    qid: str  # "7": the key in All_questions.json, the folder Q7
    question: str
    solution: str
    tests: str
    genparams: str
    generator: str  # gen_function_params.py
    manual: str = ""  # manually_chosen_params.txt

    @property
    def template_id(self) -> str:
        return f"Q{self.qid}"

    @property
    def n_params(self) -> int:
        """How many parameters the question and its solution take ($0 ... $(n-1))."""
        found = [int(m) for m in _PARAM.findall(self.question + "\n" + self.solution)]
        return max(found, default=-1) + 1

    @property
    def name(self) -> str:
        """The function the question asks for."""
        m = _CALLED.search(self.question)
        if m:
            return m.group(1)
        m = re.search(r"^def\s+([A-Za-z_]\w*)\s*\(", self.solution, re.MULTILINE)
        if not m:
            raise ConfigError(f"question Q{self.qid} names no function and its solution defines none.")
        return m.group(1)


def fill(text: str, values: Sequence[Any], limit: int | None = None) -> str:
    """Replace ``$i`` by ``values[i]`` (``$10`` is parameter 10, not ``$1`` and ``0``); with
    ``limit``, ``ValueError`` as soon as the filled text would be longer than that many characters.

    >>> fill("from index $0 to index $1, $10 times", list(range(11)))
    'from index 0 to index 1, 10 times'
    >>> fill("$2", [1, 2])
    Traceback (most recent call last):
    ...
    cctest.errors.ConfigError: the template uses $2 but only 2 parameter values were given.
    >>> fill("$0 $0 $0", ["abc"], limit=10)
    Traceback (most recent call last):
    ...
    ValueError: longer than 10 characters
    """
    texts = [str(v) for v in values]
    length = len(text)

    def one(m: re.Match[str]) -> str:
        nonlocal length
        i = int(m.group(1))
        if i >= len(texts):
            raise ConfigError(f"the template uses ${i} but only {len(texts)} parameter values were given.")
        length += len(texts[i]) - len(m.group(0))
        if limit is not None and length > limit:
            raise ValueError(f"longer than {limit} characters")
        return texts[i]

    return _PARAM.sub(one, text)


def benchmark_root(path: str | Path) -> Path:
    """The folder holding ``All_questions.json``: DIR/Benchmark (a clone) or DIR itself."""
    p = Path(path).expanduser()
    for candidate in (p / "Benchmark", p):
        if (candidate / "All_questions.json").is_file():
            return candidate
    raise ConfigError(f"{p} is not a Turbulence benchmark (no Benchmark/All_questions.json in it).")


def _inside(root: Path, path: Path) -> Path:
    """``path`` resolved (symbolic links followed), refused unless it lies inside ``root``."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a loop of symbolic links
        raise ConfigError(f"{path} cannot be resolved (a loop of symbolic links?).") from None
    if not real.is_relative_to(root.resolve()):
        raise ConfigError(
            f"{path} leads outside the benchmark folder {root} (to {real}); "
            "cctest reads a benchmark's files from inside its folder only."
        )
    return real


def _read(root: Path, path: Path, limit: int, what: str) -> str:
    """A file of the benchmark folder ``root``: inside it, a regular file of at most ``limit`` bytes."""
    return read_user_text(_inside(root, path), limit=limit, what=what, error=ConfigError)


def load_benchmark(
    path: str | Path, only: Sequence[str] | None = None, *, missing: dict[str, str] | None = None
) -> list[Template]:
    """The templates of a benchmark folder, in question order (``only``: ids like ``"7"`` or ``"Q7"``).

    Every file is read from inside the folder (no key of ``All_questions.json`` holds a path, no
    symbolic link leads out) and within its size bound (``MAX_*_BYTES``); ``ConfigError`` otherwise.
    A question folder that lacks one of ``FILES`` is a ``ConfigError`` naming the file, or, given a
    ``missing`` dict, that sentence under the template's id there and the template left out.
    """
    root = benchmark_root(path)
    index = root / "All_questions.json"
    try:
        questions = json.loads(_read(root, index, MAX_INDEX_BYTES, "question index (All_questions.json)"))
    except ValueError:
        raise ConfigError(f"{index} is not valid JSON.") from None
    if not isinstance(questions, dict) or not all(isinstance(v, str) for v in questions.values()):
        raise ConfigError(f"{index} must map question numbers to question texts.")
    for k, text in questions.items():
        if not _KEY.fullmatch(k):
            raise ConfigError(
                f"{index} has the question key {k[:80]!r}, which is not a plain name: a key names its "
                "folder Q<key> and may hold only letters, digits, '_' and '-' (at most 64)."
            )
        if len(text.encode("utf-8", "surrogatepass")) > MAX_QUESTION_BYTES:
            raise ConfigError(
                f"question {k} of {index} is larger than {human_size(MAX_QUESTION_BYTES)}, "
                "the limit for a question."
            )
    keys = sorted(questions, key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0, k))
    if only is not None:
        wanted = [w.removeprefix("Q") for w in only]
        unknown = [w for w in wanted if w not in questions]
        if unknown:
            raise ConfigError(f"no question {unknown[0]} in {index}.")
        keys = [k for k in keys if k in wanted]
    templates = []
    for k in keys:
        folder = root / f"Q{k}"
        lacking = [f for f in FILES if not os.path.lexists(folder / f)]
        if lacking:
            why = f"question {k} of {root} has no {', '.join(str(folder / f) for f in lacking)}."
            if missing is None:
                raise ConfigError(why)
            missing[f"Q{k}"] = why
            continue
        code = {f: _read(root, folder / f, MAX_TEMPLATE_BYTES, f"template file ({f})") for f in FILES}
        qfile, manual = folder / "question.txt.template", folder / "manually_chosen_params.txt"
        templates.append(
            Template(
                qid=k,
                question=(
                    _read(root, qfile, MAX_QUESTION_BYTES, "question (question.txt.template)")
                    if os.path.lexists(qfile)
                    else questions[k]
                ).strip(),
                solution=code["solution.py.template"],
                tests=code["tests.py.template"],
                genparams=code["genparams.py"],
                generator=code["gen_function_params.py"],
                manual=(
                    _read(
                        root, manual, MAX_TEMPLATE_BYTES, "hand-picked rows file (manually_chosen_params.txt)"
                    )
                    if os.path.lexists(manual)
                    else ""
                ),
            )
        )
    return templates


# -- parameter rows: the templates' own genparams.py, in the sandbox -----------------------------

# One template's generator, alone in its own sandboxed program: one that hangs, exits or crashes
# costs only its own template. Its last output line is "@ROWS [q, rows]" or "@FAIL [q, why]".
_ROWS_PROGRAM = """
import json, os
Q, GENPARAMS, MANUAL = json.loads(%r)
SEED = json.loads(%r)
SHUFFLE, SPREAD_LISTS = json.loads(%r)
LIMIT = %d
os.makedirs("Q" + Q, exist_ok=True)
with open(os.path.join("Q" + Q, "manually_chosen_params.txt"), "w") as f:
    f.write(MANUAL)
try:
    ns = {"__name__": "genparams"}
    exec(compile(GENPARAMS, "Q%%s/genparams.py" %% Q, "exec"), ns)
    rows = list(ns["gen_params"](int(Q) if Q.isdigit() else Q, SEED))
    if SHUFFLE:  # as the benchmark's send_recieve.py: random.seed(seed) then random.shuffle
        import random
        if SEED != "default":
            random.seed(SEED)
        random.shuffle(rows)
    # a tuple is a row of values; anything else (a list too) is one value, as the benchmark reads it
    rows = [list(r) if isinstance(r, tuple) or (SPREAD_LISTS and isinstance(r, list)) else [r] for r in rows]
    line = "@ROWS " + json.dumps([Q, rows])
    if len(line) > LIMIT:
        line = "@FAIL " + json.dumps([Q, "its parameter rows take more than %%d bytes as JSON" %% LIMIT])
except BaseException as exc:  # SystemExit too: the generator's own failure, said as such
    line = "@FAIL " + json.dumps([Q, ("%%s: %%s" %% (type(exc).__name__, exc))[:300]])
print("\\n" + line, flush=True)
"""

# what one template's generator may use: each runs on its own under these limits
GENPARAMS_LIMITS = Limits(wall_seconds=60, cpu_seconds=30)


def _last_report(output: str) -> tuple[str, Any] | None:
    """The program's last "@ROWS"/"@FAIL" line, as (kind, value), or None."""
    for line in reversed(output.splitlines()):
        if line.startswith(("@ROWS ", "@FAIL ")):
            try:
                _, value = json.loads(line[6:])
            except ValueError:
                return None
            return line[1:5], value
    return None


def parameter_rows(
    templates: Sequence[Template],
    seed: int | str = DEFAULT_PARAM_SEED,
    *,
    errors: dict[str, str] | None = None,
    shuffle: bool = True,
    spread_lists: bool = False,
) -> dict[str, list[list[Any]]]:
    """Each template's parameter rows from its ``genparams.py`` (``gen_params(q_no, seed)``), each
    run in a sandboxed process of its own under ``GENPARAMS_LIMITS``; ``ConfigError`` naming the
    template when one fails, or, given an ``errors`` dict, that sentence under the template's id
    there and the template left out (the others are judged on their own generators).

    As the benchmark makes them: ``shuffle`` shuffles the rows with ``random.seed(seed)`` and
    ``random.shuffle``, and a row that is a tuple holds the values, anything else is the one value
    (``spread_lists``: a list holds the values too, cctest's own templates' reading)."""
    from ..bench.sandbox import run_many

    sources = [
        _ROWS_PROGRAM
        % (
            json.dumps([t.qid, t.genparams, t.manual]),
            json.dumps(seed),
            json.dumps([shuffle, spread_lists]),
            MAX_ROWS_BYTES,
        )
        for t in templates
    ]
    runs = run_many(sources, GENPARAMS_LIMITS, workers=2, output_bytes=MAX_ROWS_BYTES + 4096)
    rows: dict[str, list[list[Any]]] = {}
    for t, run in zip(templates, runs, strict=True):
        problem = None
        said = _last_report(run.output)
        if said is None or said[0] != "ROWS":
            why = (
                said[1] if said is not None else f"it ended without giving rows ({run.detail or run.outcome})"
            )
            problem = f"the parameter generator of question {t.qid} (genparams.py) failed: {why}."
        elif not said[1] or any(len(r) < t.n_params for r in said[1]):
            problem = (
                f"the parameter generator of question {t.qid} gave rows with fewer than {t.n_params} values."
            )
        if problem is None:
            rows[t.qid] = said[1]  # type: ignore[index]
        elif errors is None:
            raise ConfigError(problem)
        else:
            errors[t.template_id] = problem
    return rows


# -- instances ---------------------------------------------------------------------------------------

_GENERATE = """

_CCTEST_PARAMS = {params!r}


def generate(rng):
    value = input_generator(list(_CCTEST_PARAMS), rng.randrange(2 ** 31))
    if {as_is}:
        return tuple(value)
    return value if {spread} and isinstance(value, tuple) else (value,)
"""


def _signature(source: str, name: str) -> tuple[str, ...] | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            a = node.args
            if a.vararg or a.kwonlyargs or a.posonlyargs:
                return None
            return tuple(x.arg for x in a.args)
    return None


def fixed_tests(text: str) -> tuple[str, ...]:
    """A filled ``tests.py`` as the oracle's fixed tests: without its import of the answer, one
    snippet per ``test_*`` function (the module, then the call), so each test counts on its own.

    >>> head = "from Q1.m_results_1.Folder_3.generated_answer import f\\n"
    >>> fixed_tests(head + "def test_a():\\n    assert f(1) == 1\\n")
    ('\\ndef test_a():\\n    assert f(1) == 1\\n\\ntest_a()\\n',)
    """
    module = _IMPORT.sub("", text)
    try:
        tree = ast.parse(module)
    except SyntaxError:
        return (module,)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    if not names:
        return (module,) if module.strip() else ()
    return tuple(f"{module}\n{n}()\n" for n in names)


def _declared(source: str, name: str) -> int | None:
    """How many parameters ``name`` declares in ``source`` (every kind, as ``inspect.signature``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            a = node.args
            return (
                len(a.posonlyargs)
                + len(a.args)
                + len(a.kwonlyargs)
                + (a.vararg is not None)
                + (a.kwarg is not None)
            )
    return None


def instance_task(
    template: Template,
    index: int,
    params: Sequence[Any],
    model: str = "cctest",
    *,
    harness: bool = True,
) -> Task:
    """Question instance ``index`` of ``template`` with parameter row ``params``, as a task.

    ``harness``: judged by the benchmark harness's rules (``HARNESS_RULES``: how a generated input
    is passed, how results are compared, how the arguments are counted); else by cctest's own
    (a tuple is spread over a function of several arguments; callable with as many arguments)."""
    name = template.name
    values = list(params)

    def filled(text: str, values: list[Any], limit: int, what: str) -> str:
        try:
            return fill(text, values, limit)
        except ValueError:
            raise ConfigError(
                f"question {template.qid}'s {what} filled with parameter row {index} is longer than "
                f"{human_size(limit)} (in characters), its limit."
            ) from None

    reference = filled(template.solution, values, MAX_TEMPLATE_BYTES, "solution")
    args = _signature(reference, name)
    extra = [index + 1, name, model, 1]  # the benchmark's folder number, function, model, round
    tests = fixed_tests(
        filled(template.tests, values[: template.n_params] + extra, MAX_TEMPLATE_BYTES, "tests")
    )
    rules: dict[str, Any] = {}
    if harness:
        rule = HARNESS_RULES.get(template.qid, HarnessRule())
        spread, as_is = str(rule.spread != "single"), str(rule.spread == "as_is")
        declared = _declared(reference, name)
        if rule.arg_counts == "q34":
            try:
                rules["arg_counts"] = sorted({int(values[0]), 1})
            except (TypeError, ValueError):
                rules["arg_counts"] = [1]
        elif declared is not None:
            rules["arg_counts"] = [declared]
        if rule.compare != "ordered":
            rules["compare"] = rule.compare
    else:
        spread, as_is = ("False" if args is not None and len(args) == 1 else "True"), "False"
    return Task(
        task_id=f"{template.template_id}/{index}",
        description=filled(template.question, values, MAX_QUESTION_BYTES, "question"),
        name=name,
        args=args,
        reference=reference,
        generator=template.generator + _GENERATE.format(params=values, spread=spread, as_is=as_is),
        tests=tests,
        meta={"template": template.template_id, "instance": index, "params": values},
        rules=rules,
    )


def instance_of(task: Task) -> str:
    """An instance's own group: a run skips a broken instance alone, not its template."""
    return task.task_id


def template_of(task: Task) -> str:
    """The template an instance's task belongs to (a run skips a template as a whole)."""
    return str(task.meta.get("template", task.task_id))


def build_tasks(
    templates: Sequence[Template],
    instances: int = 100,
    *,
    seed: int | str = DEFAULT_PARAM_SEED,
    errors: dict[str, str] | None = None,
    shuffle: bool = True,
    harness: bool = True,
) -> list[Task]:
    """The neighbourhoods: the first ``instances`` parameter rows of every template, as tasks
    (``errors``: see ``parameter_rows``; a template whose generator fails then has no tasks).

    By default as the benchmark makes and judges them (rows shuffled with the seed, a tuple row
    holds the values, ``HARNESS_RULES``); ``harness=False`` is cctest's reading for its own
    templates (a list row holds the values too, cctest's argument rules)."""
    if instances < 1:
        raise ConfigError("--instances must be at least 1.")
    rows = parameter_rows(templates, seed, errors=errors, shuffle=shuffle, spread_lists=not harness)
    tasks: list[Task] = []
    for t in templates:
        try:  # a template whose filled texts are over their bounds is left out as a whole
            tasks += [
                instance_task(t, i, row, harness=harness)
                for i, row in enumerate(rows.get(t.qid, [])[:instances])
            ]
        except ConfigError as exc:
            if errors is None:
                raise
            errors[t.template_id] = str(exc)
    return tasks


def template_texts(records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Template id -> the description of its first instance (for reports)."""
    out: dict[str, str] = {}
    for r in records:
        out.setdefault(str((r.get("meta") or {}).get("template")), str(r.get("description", "")))
    return out


# -- the summary, the report ------------------------------------------------------------------------


def _outcomes(
    records: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, dict[int, list[bool]]], dict[str, dict[int, list[Any]]]]:
    from .turbulence_metrics import verdicts

    outcomes: dict[str, dict[int, list[bool]]] = {}
    params: dict[str, dict[int, list[Any]]] = {}
    for r in records:
        meta = r.get("meta") or {}
        t, i = str(meta.get("template")), int(meta.get("instance", r.get("index", 0)))
        # every round asked counts, a backend error as a wrong answer (CorrSc over M × N)
        outcomes.setdefault(t, {})[i] = verdicts(r.get("rounds") or [])
        params.setdefault(t, {})[i] = list(meta.get("params") or [])
    return outcomes, params


def _backend_errors(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Template -> its rounds that got a backend error instead of an answer."""
    out: dict[str, int] = {}
    for r in records:
        n = sum(a.get("category") is None for a in r.get("rounds") or [])
        if n:
            t = str((r.get("meta") or {}).get("template"))
            out[t] = out.get(t, 0) + n
    return out


def backend_errors_summary(errors: Mapping[str, int]) -> dict[str, Any]:
    """The backend errors CorrSc counts as wrong answers: their ``total``, ``per_template`` (only
    templates with some) and a ``note`` for the report (``None`` when there are none).

    >>> print(backend_errors_summary({"Q1": 2, "Q7": 1})["note"])
    CorrSc counts 3 backend errors as wrong answers (over M × N, every round asked): Q1 2, Q7 1.
    """
    total = sum(errors.values())
    note = None
    if total:
        each = ", ".join(f"{t} {n}" for t, n in errors.items())
        what = "backend error" if total == 1 else "backend errors"
        note = f"CorrSc counts {total} {what} as wrong answers (over M × N, every round asked): {each}."
    return {"total": total, "per_template": dict(errors), "note": note}


class TurbulenceSummary(TasksSummary):
    """``summary.json`` of a Turbulence run: the task run's, then the paper's metrics and cctest's
    outlier check per template."""

    corrsc: dict[str, float | None]
    corrsc_mean: float | None
    classes: dict[str, Any]
    histogram: dict[str, Any]
    failure_categories: dict[str, Any]
    params_of_failures: dict[str, Any]
    neighbourhoods: dict[str, dict[str, int]]
    corrsc_backend_errors: dict[str, Any]
    outliers: dict[str, Any]


def summarize_turbulence(records: Sequence[Mapping[str, Any]]) -> TurbulenceSummary:
    """The task run's summary plus Turbulence's metrics and the outlier check per template."""
    from ..tasks.oracle import CATEGORIES
    from ..tasks.run import summarize_tasks
    from . import turbulence_metrics as tm

    # the task run's summary, then the suite's own fields, each set below
    summary = cast(TurbulenceSummary, {**summarize_tasks(records)})
    records = [r for r in records if not r.get("skipped")]  # listed in summary["skipped"]
    outcomes, params = _outcomes(records)
    scores = {t: tm.corrsc(inst) for t, inst in outcomes.items()}
    summary["corrsc"] = scores
    known = [s for s in scores.values() if s is not None]
    summary["corrsc_mean"] = sum(known) / len(known) if known else None
    summary["classes"] = tm.classes(outcomes)
    summary["histogram"] = tm.histogram(scores)
    failures = {c: n for c, n in summary["categories"].items() if c != "passed"}
    total = sum(failures.values())
    summary["failure_categories"] = {
        "counts": failures,
        "share_of_failures": {c: (n / total if total else None) for c, n in failures.items()},
        "order": [c for c in CATEGORIES if c != "passed"],
    }
    summary["params_of_failures"] = {
        t: tm.failing_params(inst, params[t])
        for t, inst in outcomes.items()
        if any(False in v for v in inst.values())
    }
    errors = _backend_errors(records)
    summary["neighbourhoods"] = {
        t: {
            "instances": len(inst),
            "rounds": max((len(v) for v in inst.values()), default=0),
            "answers": sum(len(v) for v in inst.values()) - errors.get(t, 0),
            "backend_errors": errors.get(t, 0),
        }
        for t, inst in outcomes.items()
    }
    summary["corrsc_backend_errors"] = backend_errors_summary(errors)
    # beyond the paper: Algorithm 1 across each neighbourhood, round by round
    by_round: dict[tuple[str, int], list[tuple[str | None, bool]]] = {}
    for r in records:
        meta = r.get("meta") or {}
        t, p = str(meta.get("template")), list(meta.get("params") or [])
        for a in r.get("rounds") or []:
            if a.get("category") is None:
                continue
            code = a.get("code") or a.get("answer") or ""
            by_round.setdefault((t, int(a.get("round", 0))), []).append(
                (tm.normalise(code, p) if code else None, a["category"] != "passed")
            )
    flags: dict[str, list[bool]] = {}
    failed: dict[str, list[bool]] = {}
    for (t, _), answers in sorted(by_round.items()):
        flags.setdefault(t, []).extend(tm.outlier_scores(answers))
        failed.setdefault(t, []).extend(f for _, f in answers)
    summary["outliers"] = {
        "relative_threshold": tm.DEFAULT_RELATIVE_THRESHOLD,
        "per_template": {t: tm.precision_recall(flags[t], failed[t]) for t in flags},
        "overall": tm.precision_recall(
            [f for t in flags for f in flags[t]], [f for t in failed for f in failed[t]]
        ),
    }
    return summary


class TurbulenceKind(TasksKind):
    """A ``cctest bench turbulence`` run: CorrSc per template, the four classes, Table II."""

    name = "turbulence"
    title = "cctest bench turbulence"
    docs = "docs/turbulence.md"
    figures_after = {"Templates by class": ("CorrSc histogram (Figure 3)", "Templates by class (Figure 5)")}

    def summarize(self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> TurbulenceSummary:
        summary = summarize_turbulence(records)
        # templates whose parameter generator failed have no tasks: the run's config names them
        for t, why in ((config.get("suite") or {}).get("skipped") or {}).items():
            summary["skipped"].setdefault(t, {"reason": why, "tasks": 0})
        return summary

    def headline(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        suite = config.get("suite") or {}
        return (
            f"{self.title} · {suite.get('benchmark', 'built-in templates')} · {config.get('backend')} "
            f"{model_label(config)} · {mode_label(config, summary)} · {len(summary['corrsc'])} templates × "
            f"{suite.get('instances')} instances × {config.get('rounds')} rounds"
        )

    def notes(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
        """The backend errors CorrSc counted as wrong answers, in one sentence, when there were some."""
        note = (summary.get("corrsc_backend_errors") or {}).get("note")
        return [*super().notes(config, summary), *([str(note)] if note else [])]

    def tables(self, summary: Mapping[str, Any]) -> dict[str, Table]:
        cls = summary["classes"]
        fc = summary["failure_categories"]
        out = summary["outliers"]
        which = {t: c for c, ts in cls["templates"].items() for t in ts}
        hoods = summary.get("neighbourhoods") or {}
        rows = []
        for t, s in summary["corrsc"].items():
            pof = summary["params_of_failures"].get(t)
            fails = pof["failing"] if pof else []
            shown = ", ".join(str(f["params"]) for f in fails[:4]) + (" …" if len(fails) > 4 else "")
            pr = out["per_template"].get(t, {})
            hood = hoods.get(t) or {}
            rows.append(
                [
                    t,
                    pct(s),
                    f"{hood['instances']} × {hood['rounds']}" if hood else "—",
                    str(hood.get("backend_errors", "—")),
                    str(which.get(t, "—")).replace("_", " "),
                    str(len(fails)),
                    shown or "—",
                    pct(pr.get("precision")),
                    pct(pr.get("recall")),
                ]
            )
        patterns: dict[str, list[int]] = {}
        for pof in summary["params_of_failures"].values():
            for pat, v in pof["patterns"].items():
                patterns.setdefault(pat, [0, 0])
                patterns[pat][0] += v["failing"]
                patterns[pat][1] += len(pof["failing"])
        tables: dict[str, Table] = {
            "Templates by class": (
                ["class", "templates", "which"],
                [
                    [c.replace("_", " "), str(n), ", ".join(cls["templates"][c]) or "—"]
                    for c, n in cls["counts"].items()
                ]
                + [["mean CorrSc", pct(summary["corrsc_mean"]), ""]],
            ),
            "CorrSc histogram (Figure 3)": (
                ["CorrSc", "templates"],
                [[b, str(n)] for b, n in summary["histogram"].items()],
            ),
            "Failures by category (Table II)": (
                ["category", "answers", "share of failures"],
                [[c, str(fc["counts"].get(c, 0)), pct(fc["share_of_failures"].get(c))] for c in fc["order"]],
            ),
            "Per template: CorrSc, backend errors, failing parameters, outliers": (
                [
                    "template",
                    "CorrSc",
                    "M × N",
                    "backend errors",
                    "class",
                    "failing instances",
                    "their parameters",
                    "outlier precision",
                    "outlier recall",
                ],
                rows,
            ),
            "Range patterns among failing instances": (
                ["pattern", "failing instances with it", "of failing instances"],
                [[p.replace("_", " "), str(a), str(b)] for p, (a, b) in patterns.items()],
            ),
            "Outliers (Algorithm 1 across a neighbourhood) against the oracle": (
                ["", "value"],
                [
                    ["answers flagged", str(out["overall"]["flagged"])],
                    ["answers failing the oracle", str(out["overall"]["failed"])],
                    ["precision", pct(out["overall"]["precision"])],
                    ["recall", pct(out["overall"]["recall"])],
                ],
            ),
        }
        return {**tables, **super().tables(summary)}

    def figures(self, runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
        from ..bench.render import pyplot, svg_of
        from .turbulence_metrics import BINS, CLASSES

        plt = pyplot()
        out = {}
        for title, keys, get, xlabel in (
            (
                "CorrSc histogram (Figure 3)",
                BINS,
                lambda s: s["histogram"],
                "CorrSc (share of correct answers)",
            ),
            ("Templates by class (Figure 5)", CLASSES, lambda s: s["classes"]["counts"], "class"),
        ):
            fig, ax = plt.subplots(figsize=(max(7.5, 0.8 * len(keys) * len(runs)), 3.8))
            width = 0.8 / len(runs)
            for k, (label, summary) in enumerate(runs):
                values = get(summary)
                ax.bar(
                    [i + k * width for i in range(len(keys))],
                    [values.get(b, 0) for b in keys],
                    width,
                    color=f"C{k}",
                    edgecolor=f"C{k}",  # a bar of 0 is a line, not nothing
                    linewidth=1.5,
                    label=label,
                )
            ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))])
            # bins as "[0.1, 0.2)" on two lines, so neighbouring labels keep apart
            ax.set_xticklabels(
                [b.replace("_", "\n").replace(", ", ",\n") for b in keys], fontsize=7, rotation=0
            )
            ax.set_xlabel(xlabel)
            ax.set_ylabel("templates")
            ax.set_title(title)
            ax.yaxis.get_major_locator().set_params(integer=True)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
            out[title] = svg_of(fig)
        return out

    def examples(
        self, config: Mapping[str, Any], summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
    ) -> str:
        import html

        parts = []
        for t in summary["classes"]["templates"]["consistent_failure"]:
            mine = [r for r in records if (r.get("meta") or {}).get("template") == t]
            ok = next((r for r in mine if any(a.get("category") == "passed" for a in r["rounds"])), None)
            bad = next(
                (
                    r
                    for r in mine
                    if r["rounds"] and all(a.get("category") not in (None, "passed") for a in r["rounds"])
                ),
                None,
            )
            if ok is None or bad is None:
                continue

            def cell(r: Mapping[str, Any], passed: bool) -> str:
                a = next(a for a in r["rounds"] if (a.get("category") == "passed") == passed)
                params, category = html.escape(str(r["meta"]["params"])), html.escape(str(a.get("category")))
                return (
                    f"<td style='vertical-align:top;width:50%'><b>params {params} · {category}</b>"
                    f"<p class='note'>{html.escape(r['description'])}</p>"
                    f"<p class='note'>{html.escape(a.get('detail') or '')}</p>"
                    f"<pre>{html.escape((a.get('code') or a.get('answer') or '')[:1500])}</pre></td>"
                )

            parts.append(
                f"<h3>{html.escape(t)}</h3><table><tr>{cell(ok, True)}{cell(bad, False)}</tr></table>"
            )
        head = "<h2>Consistent failures: a passing and a failing instance side by side</h2>"
        return (head + "".join(parts) if parts else "") + super().examples(config, summary, records)

    def compare_rows(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
        rows = [["mean CorrSc", pct(a["corrsc_mean"]), pct(b["corrsc_mean"])]]
        rows += [
            [c.replace("_", " "), str(a["classes"]["counts"][c]), str(b["classes"]["counts"][c])]
            for c in a["classes"]["counts"]
        ]
        rows += [
            [
                "outlier precision",
                pct(a["outliers"]["overall"]["precision"]),
                pct(b["outliers"]["overall"]["precision"]),
            ],
            [
                "outlier recall",
                pct(a["outliers"]["overall"]["recall"]),
                pct(b["outliers"]["overall"]["recall"]),
            ],
        ]
        return rows + super().compare_rows(a, b)
