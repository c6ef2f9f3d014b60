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

The benchmark's own code (``genparams.py``) runs in the bench's sandbox, once for all templates
(with the packages of cctest's environment, NumPy among them, as every sandboxed program). A
template whose generator fails, or any of whose instances has a reference failing its own checks,
is skipped as a whole with one sentence (``errors`` here; ``skip_broken=template_of`` in the run).
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

from ..bench.kinds import Table, model_label
from ..errors import ConfigError
from ..tasks.model import Task
from ..tasks.run import TasksKind, _pct

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
    try:
        ns = {"__name__": "genparams"}
        exec(compile(genparams, "Q%%s/genparams.py" %% q, "exec"), ns)
        rows = ns["gen_params"](int(q) if q.isdigit() else q, SEED)
        rows = [list(r) if isinstance(r, (list, tuple)) else [r] for r in rows]
        line = "@ROWS " + json.dumps([q, rows])
    except Exception as exc:  # this template's generator only: the others still run
        line = "@FAIL " + json.dumps([q, ("%%s: %%s" %% (type(exc).__name__, exc))[:300]])
    print(line, flush=True)
"""


def parameter_rows(
    templates: Sequence[Template],
    seed: int | str = DEFAULT_PARAM_SEED,
    *,
    errors: dict[str, str] | None = None,
) -> dict[str, list[list[Any]]]:
    """Each template's parameter rows from its ``genparams.py`` (``gen_params(q_no, seed)``), run
    in one sandboxed process; ``ConfigError`` naming the template when one fails, or, given an
    ``errors`` dict, that sentence under the template's id there and the template left out."""
    from ..bench.sandbox import Limits, run_program

    jobs = {t.qid: (t.genparams, t.manual) for t in templates}
    source = _ROWS_PROGRAM % (json.dumps(jobs), json.dumps(seed))
    run = run_program(source, Limits(wall_seconds=120, cpu_seconds=60), output_bytes=16 << 20)
    rows: dict[str, list[list[Any]]] = {}
    failed: dict[str, str] = {}
    for line in run.output.splitlines():
        if line.startswith("@ROWS "):
            q, r = json.loads(line[6:])
            rows[q] = r
        elif line.startswith("@FAIL "):
            q, why = json.loads(line[6:])
            failed[q] = why
    for t in templates:
        problem = None
        if t.qid not in rows:
            why = failed.get(t.qid) or run.detail or run.outcome
            problem = f"the parameter generator of question {t.qid} (genparams.py) failed: {why}."
        elif not rows[t.qid] or any(len(r) < t.n_params for r in rows[t.qid]):
            problem = (
                f"the parameter generator of question {t.qid} gave rows with fewer than {t.n_params} values."
            )
        if problem is not None:
            if errors is None:
                raise ConfigError(problem)
            errors[t.template_id] = problem
            rows.pop(t.qid, None)
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


def template_of(task: Task) -> str:
    """The template an instance's task belongs to (a run skips a template as a whole)."""
    return str(task.meta.get("template", task.task_id))


def build_tasks(
    templates: Sequence[Template],
    instances: int = 100,
    *,
    seed: int | str = DEFAULT_PARAM_SEED,
    errors: dict[str, str] | None = None,
) -> list[Task]:
    """The neighbourhoods: the first ``instances`` parameter rows of every template, as tasks
    (``errors``: see ``parameter_rows``; a template whose generator fails then has no tasks)."""
    if instances < 1:
        raise ConfigError("--instances must be at least 1.")
    rows = parameter_rows(templates, seed, errors=errors)
    return [
        instance_task(t, i, row)
        for t in templates
        if t.qid in rows
        for i, row in enumerate(rows[t.qid][:instances])
    ]


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
    outcomes: dict[str, dict[int, list[bool]]] = {}
    params: dict[str, dict[int, list[Any]]] = {}
    for r in records:
        meta = r.get("meta") or {}
        t, i = str(meta.get("template")), int(meta.get("instance", r.get("index", 0)))
        outcomes.setdefault(t, {})[i] = [
            a["category"] == "passed" for a in r.get("rounds") or [] if a.get("category") is not None
        ]
        params.setdefault(t, {})[i] = list(meta.get("params") or [])
    return outcomes, params


def summarize_turbulence(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The task run's summary plus Turbulence's metrics and the outlier check per template."""
    from ..tasks.oracle import CATEGORIES
    from ..tasks.run import summarize_tasks
    from . import turbulence_metrics as tm

    summary = summarize_tasks(records)
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
    summary["neighbourhoods"] = {
        t: {"instances": len(inst), "answers": sum(len(v) for v in inst.values())}
        for t, inst in outcomes.items()
    }
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

    def summarize(self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        summary = summarize_turbulence(records)
        # templates whose parameter generator failed have no tasks: the run's config names them
        for t, why in ((config.get("suite") or {}).get("skipped") or {}).items():
            summary["skipped"].setdefault(t, {"reason": why, "tasks": 0})
        return summary

    def headline(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        suite = config.get("suite") or {}
        return (
            f"{self.title} · {suite.get('benchmark', 'built-in templates')} · {config.get('backend')} "
            f"{model_label(config)} · {config.get('mode')} · {len(summary['corrsc'])} templates × "
            f"{suite.get('instances')} instances × {config.get('rounds')} rounds"
        )

    def tables(self, summary: Mapping[str, Any]) -> dict[str, Table]:
        cls = summary["classes"]
        fc = summary["failure_categories"]
        out = summary["outliers"]
        which = {t: c for c, ts in cls["templates"].items() for t in ts}
        rows = []
        for t, s in summary["corrsc"].items():
            pof = summary["params_of_failures"].get(t)
            fails = pof["failing"] if pof else []
            shown = ", ".join(str(f["params"]) for f in fails[:4]) + (" …" if len(fails) > 4 else "")
            pr = out["per_template"].get(t, {})
            rows.append(
                [
                    t,
                    _pct(s),
                    str(which.get(t, "—")).replace("_", " "),
                    str(len(fails)),
                    shown or "—",
                    _pct(pr.get("precision")),
                    _pct(pr.get("recall")),
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
                + [["mean CorrSc", _pct(summary["corrsc_mean"]), ""]],
            ),
            "CorrSc histogram (Figure 3)": (
                ["CorrSc", "templates"],
                [[b, str(n)] for b, n in summary["histogram"].items()],
            ),
            "Failures by category (Table II)": (
                ["category", "answers", "share of failures"],
                [[c, str(fc["counts"].get(c, 0)), _pct(fc["share_of_failures"].get(c))] for c in fc["order"]],
            ),
            "Per template: CorrSc, failing parameters, outliers": (
                [
                    "template",
                    "CorrSc",
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
                    ["precision", _pct(out["overall"]["precision"])],
                    ["recall", _pct(out["overall"]["recall"])],
                ],
            ),
        }
        return {**tables, **super().tables(summary)}

    def figures(self, runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
        from ..bench.report import _plt, _png
        from .turbulence_metrics import BINS, CLASSES

        plt = _plt()
        out = {}
        for title, keys, get in (
            ("CorrSc histogram (Figure 3)", BINS, lambda s: s["histogram"]),
            ("Templates by class (Figure 5)", CLASSES, lambda s: s["classes"]["counts"]),
        ):
            fig, ax = plt.subplots(figsize=(max(6.4, 0.7 * len(keys) * len(runs)), 3.8))
            width = 0.8 / len(runs)
            for k, (label, summary) in enumerate(runs):
                values = get(summary)
                ax.bar(
                    [i + k * width for i in range(len(keys))],
                    [values.get(b, 0) for b in keys],
                    width,
                    color=f"C{k}",
                    label=label,
                )
            ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))])
            ax.set_xticklabels([b.replace("_", "\n") for b in keys], fontsize=7)
            ax.set_ylabel("templates")
            ax.legend(fontsize=7)
            out[title] = _png(fig)
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
        rows = [["mean CorrSc", _pct(a["corrsc_mean"]), _pct(b["corrsc_mean"])]]
        rows += [
            [c.replace("_", " "), str(a["classes"]["counts"][c]), str(b["classes"]["counts"][c])]
            for c in a["classes"]["counts"]
        ]
        rows += [
            [
                "outlier precision",
                _pct(a["outliers"]["overall"]["precision"]),
                _pct(b["outliers"]["overall"]["precision"]),
            ],
            [
                "outlier recall",
                _pct(a["outliers"]["overall"]["recall"]),
                _pct(b["outliers"]["overall"]["recall"]),
            ],
        ]
        return rows + super().compare_rows(a, b)
