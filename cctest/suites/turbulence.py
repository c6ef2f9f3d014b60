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

The benchmark's own code (``genparams.py``) runs in the bench's sandbox, once for all templates.
Each instance becomes one ``cctest.tasks.Task`` (``meta``: ``template``, ``instance``,
``params``), so running, judging (Turbulence's categories, Table II) and resuming are the shared
task run's; the metrics are in ``cctest.suites.turbulence_metrics``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..tasks.model import Task

BUILTIN = Path(__file__).with_name("turbulence_templates")
FILES = ("solution.py.template", "tests.py.template", "genparams.py", "gen_function_params.py")
DEFAULT_PARAM_SEED = 1  # the benchmark's: the same parameter rows for every model
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


def fill(text: str, values: Sequence[Any]) -> str:
    """Replace ``$i`` by ``values[i]`` (``$10`` is parameter 10, not ``$1`` and ``0``).

    >>> fill("from index $0 to index $1, $10 times", list(range(11)))
    'from index 0 to index 1, 10 times'
    >>> fill("$2", [1, 2])
    Traceback (most recent call last):
    ...
    cctest.errors.ConfigError: the template uses $2 but only 2 parameter values were given.
    """

    def one(m: re.Match[str]) -> str:
        i = int(m.group(1))
        if i >= len(values):
            raise ConfigError(f"the template uses ${i} but only {len(values)} parameter values were given.")
        return str(values[i])

    return _PARAM.sub(one, text)


def benchmark_root(path: str | Path) -> Path:
    """The folder holding ``All_questions.json``: DIR/Benchmark (a clone) or DIR itself."""
    p = Path(path).expanduser()
    for candidate in (p / "Benchmark", p):
        if (candidate / "All_questions.json").is_file():
            return candidate
    raise ConfigError(f"{p} is not a Turbulence benchmark (no Benchmark/All_questions.json in it).")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc.strerror or exc.__class__.__name__}).") from None


def load_benchmark(path: str | Path, only: Sequence[str] | None = None) -> list[Template]:
    """The templates of a benchmark folder, in question order (``only``: ids like ``"7"`` or ``"Q7"``)."""
    root = benchmark_root(path)
    index = root / "All_questions.json"
    try:
        questions = json.loads(_read(index))
    except ValueError:
        raise ConfigError(f"{index} is not valid JSON.") from None
    if not isinstance(questions, dict) or not all(isinstance(v, str) for v in questions.values()):
        raise ConfigError(f"{index} must map question numbers to question texts.")
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
        missing = [f for f in FILES if not (folder / f).is_file()]
        if missing:
            raise ConfigError(f"question {k} of {root} has no {folder / missing[0]}.")
        qfile, manual = folder / "question.txt.template", folder / "manually_chosen_params.txt"
        templates.append(
            Template(
                qid=k,
                question=(_read(qfile) if qfile.is_file() else questions[k]).strip(),
                solution=_read(folder / "solution.py.template"),
                tests=_read(folder / "tests.py.template"),
                genparams=_read(folder / "genparams.py"),
                generator=_read(folder / "gen_function_params.py"),
                manual=_read(manual) if manual.is_file() else "",
            )
        )
    return templates


# -- parameter rows: the templates' own genparams.py, in the sandbox -----------------------------

_ROWS_PROGRAM = """
import json, os
JOBS = json.loads(%r)
SEED = json.loads(%r)
for q, (genparams, manual) in JOBS.items():
    os.makedirs("Q" + q, exist_ok=True)
    with open(os.path.join("Q" + q, "manually_chosen_params.txt"), "w") as f:
        f.write(manual)
    ns = {"__name__": "genparams"}
    exec(compile(genparams, "Q%%s/genparams.py" %% q, "exec"), ns)
    rows = ns["gen_params"](int(q) if q.isdigit() else q, SEED)
    rows = [list(r) if isinstance(r, (list, tuple)) else [r] for r in rows]
    print("@ROWS " + json.dumps([q, rows]), flush=True)
"""


def parameter_rows(
    templates: Sequence[Template], seed: int | str = DEFAULT_PARAM_SEED
) -> dict[str, list[list[Any]]]:
    """Each template's parameter rows from its ``genparams.py`` (``gen_params(q_no, seed)``), run
    in one sandboxed process; ``ConfigError`` naming the template when one fails."""
    from ..bench.sandbox import Limits, run_program

    jobs = {t.qid: (t.genparams, t.manual) for t in templates}
    source = _ROWS_PROGRAM % (json.dumps(jobs), json.dumps(seed))
    run = run_program(source, Limits(wall_seconds=120, cpu_seconds=60), output_bytes=16 << 20)
    rows: dict[str, list[list[Any]]] = {}
    for line in run.output.splitlines():
        if line.startswith("@ROWS "):
            q, r = json.loads(line[6:])
            rows[q] = r
    for t in templates:
        if t.qid not in rows:
            raise ConfigError(
                f"the parameter generator of question {t.qid} (genparams.py) failed: "
                f"{run.detail or run.outcome}."
            )
        if not rows[t.qid] or any(len(r) < t.n_params for r in rows[t.qid]):
            raise ConfigError(
                f"the parameter generator of question {t.qid} gave rows with fewer than {t.n_params} values."
            )
    return rows


# -- instances ---------------------------------------------------------------------------------------

_GENERATE = """

_CCTEST_PARAMS = {params!r}


def generate(rng):
    value = input_generator(list(_CCTEST_PARAMS), rng.randrange(2 ** 31))
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


def instance_task(template: Template, index: int, params: Sequence[Any], model: str = "cctest") -> Task:
    """Question instance ``index`` of ``template`` with parameter row ``params``, as a task."""
    name = template.name
    values = list(params)
    reference = fill(template.solution, values)
    args = _signature(reference, name)
    extra = [index + 1, name, model, 1]  # the benchmark's folder number, function, model, round
    tests = fixed_tests(fill(template.tests, values[: template.n_params] + extra))
    spread = "False" if args is not None and len(args) == 1 else "True"
    return Task(
        task_id=f"{template.template_id}/{index}",
        description=fill(template.question, values),
        name=name,
        args=args,
        reference=reference,
        generator=template.generator + _GENERATE.format(params=values, spread=spread),
        tests=tests,
        meta={"template": template.template_id, "instance": index, "params": values},
    )


def build_tasks(
    templates: Sequence[Template], instances: int = 100, *, seed: int | str = DEFAULT_PARAM_SEED
) -> list[Task]:
    """The neighbourhoods: the first ``instances`` parameter rows of every template, as tasks."""
    if instances < 1:
        raise ConfigError("--instances must be at least 1.")
    rows = parameter_rows(templates, seed)
    return [instance_task(t, i, row) for t in templates for i, row in enumerate(rows[t.qid][:instances])]


def template_texts(records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Template id -> the description of its first instance (for reports)."""
    out: dict[str, str] = {}
    for r in records:
        out.setdefault(str((r.get("meta") or {}).get("template")), str(r.get("description", "")))
    return out
