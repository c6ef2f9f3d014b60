"""The syntactic-robustness suite (Sarker et al.): tasks + formula variants + the robustness degree.

For each equation kind (the paper's seven), one task asks for ``solve(a, b[, c])`` returning the
real solutions of the equation as written; the variants are the same task with the equation
rewritten by M1–M5 (``cctest.formula``) at syntactic distances 1–5, and with ``--reduce`` the same
variants once more after the pre-processing (R1, then R2–R5). Every task carries our reference
solution for its kind and a generator of coefficients in [-1000, 1000] (never 0; for sin and cos
only where a solution exists, for log and ln only where the solution is a finite float), so the
oracle's differential testing decides whether an answer is equivalent to the reference.

The syntactic robustness degree (Definition 7) of a set of variants is the share of the answers
to them that the oracle passes. ``SyntacticKind`` adds it to the task run's summary
(``robustness_degree``: ``by_distance``, ``by_equation``, ``by_mutation``, ``by_equation_distance``,
``overall``; the same under ``reduced``), with ``variants`` (count per distance) and
``categories`` (oracle categories of the variants' answers), and plots the degree against distance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, cast

from ..bench.kinds import Table, model_label
from ..bench.render import pct
from ..errors import ConfigError
from ..formula import EQUATIONS, parse_equation, reduce, variants
from ..tasks.model import Task
from ..tasks.oracle import CATEGORIES
from ..tasks.run import TasksKind, TasksSummary, mode_label, summarize_tasks

_OUTPUT = (
    "Return the distinct real solutions for 'x' as a list of floats, each rounded to 2 digits after "
    "the decimal point with round(x, 2), sorted in increasing order; return an empty list when there "
    "is no real solution."
)
_TRIG = (
    "Return the distinct solutions for 'x' in radians that lie in the interval [0, 2*pi), as a list of "
    "floats, each rounded to 2 digits after the decimal point with round(x, 2), sorted in increasing "
    "order; return an empty list when there is no real solution."
)


@dataclass(frozen=True)
class Kind:
    """One equation kind: its prompt wording, our reference solution and its inputs."""

    wording: str  # the task's description; {equation} is the (mutated) formula
    reference: str  # Python defining solve(...)
    generator: str  # Python defining generate(rng)


_NZ = "def generate(rng):\n    def nz():\n        return rng.choice((-1, 1)) * rng.randint(1, 1000)\n"


def _coefficients(names: str) -> str:
    quoted = [f"'{n}'" for n in names]
    both = ", ".join(quoted[:-1]) + " and " + quoted[-1]
    either = ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"where {both} are the function's arguments (numbers). Assume that none of {either} is 0."


def _wording(names: str, output: str, extra: str = "") -> str:
    return (
        "Find the solutions for 'x' in the equation {equation}"
        + extra
        + ", "
        + _coefficients(names)
        + " "
        + output
    )


EQUATION_KINDS: dict[str, Kind] = {
    "linear": Kind(
        _wording("ab", _OUTPUT),
        "def solve(a, b):\n    return [round(-b / a, 2)]\n",
        _NZ + "    return (nz(), nz())\n",
    ),
    "quadratic": Kind(
        _wording("abc", _OUTPUT),
        "import math\n\n\ndef solve(a, b, c):\n    d = b * b - 4 * a * c\n    if d < 0:\n        return []\n"
        "    r = math.sqrt(d)\n"
        "    return sorted({round((-b - r) / (2 * a), 2), round((-b + r) / (2 * a), 2)})\n",
        _NZ + "    return (nz(), nz(), nz())\n",
    ),
    "sin": Kind(
        _wording("ab", _TRIG),
        "import math\n\n\ndef solve(a, b):\n    r = b / a\n    if r < -1 or r > 1:\n        return []\n"
        "    x = math.asin(r)\n    tau = 2 * math.pi\n"
        "    return sorted({round(x % tau, 2), round((math.pi - x) % tau, 2)})\n",
        # a solution exists: |b| <= |a|
        _NZ + "    a = nz()\n    return (a, rng.choice((-1, 1)) * rng.randint(1, abs(a)))\n",
    ),
    "cos": Kind(
        _wording("ab", _TRIG),
        "import math\n\n\ndef solve(a, b):\n    r = b / a\n    if r < -1 or r > 1:\n        return []\n"
        "    x = math.acos(r)\n    tau = 2 * math.pi\n"
        "    return sorted({round(x % tau, 2), round((tau - x) % tau, 2)})\n",
        _NZ + "    a = nz()\n    return (a, rng.choice((-1, 1)) * rng.randint(1, abs(a)))\n",
    ),
    "tan": Kind(
        _wording("ab", _TRIG),
        "import math\n\n\ndef solve(a, b):\n    x = math.atan(b / a) % math.pi\n"
        "    return sorted({round(x, 2), round(x + math.pi, 2)})\n",
        _NZ + "    return (nz(), nz())\n",
    ),
    "log": Kind(
        _wording("ab", _OUTPUT, ", where log is the logarithm in base 10 (not base e)"),
        "def solve(a, b):\n    return [round(10 ** (b / a), 2)]\n",
        # 10 ** (b / a) must be a finite float
        _NZ + "    a, b = nz(), nz()\n    while abs(b / a) > 300:\n        b = nz()\n    return (a, b)\n",
    ),
    "ln": Kind(
        _wording("ab", _OUTPUT, ", where ln is the natural logarithm (base e, not base 10)"),
        "import math\n\n\ndef solve(a, b):\n    return [round(math.exp(b / a), 2)]\n",
        _NZ + "    a, b = nz(), nz()\n    while abs(b / a) > 700:\n        b = nz()\n    return (a, b)\n",
    ),
}
ARGS = {"quadratic": ("a", "b", "c")}
REL_TOL = 1e-9  # besides epsilon: log and ln solutions can be huge, where 0.02 is below one ulp


def parse_distances(text: str) -> list[int]:
    """``"1-5"`` or ``"1,3,5"`` -> [1, ...]; ``ConfigError`` otherwise."""
    out: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        out = set()
    if not out or min(out) < 1 or max(out) > 8:
        raise ConfigError(f"--distances must be distances from 1 to 8 like 1-5 or 1,3 (got '{text}').")
    return sorted(out)


def build_tasks(
    kinds: Sequence[str],
    distances: Sequence[int],
    per_distance: int = 20,
    *,
    seed: int = 0,
    reduced: bool = False,
    epsilon: float = 0.02,
    prompt: str = "function",
) -> list[Task]:
    """The suite's tasks: per kind, the original equation (distance 0, not part of the degree), its
    variants at each distance, and with ``reduced`` each variant again after pre-processing.

    ``prompt``: ``function`` (cctest's ``solve(a, b)`` returning a list) or ``paper`` (the paper's
    program printing the solutions, judged by ``syntactic_program.judge_programs``; ε per kind)."""
    from .syntactic_program import PROMPTS, paper_description, paper_epsilon

    unknown = [k for k in kinds if k not in EQUATION_KINDS]
    if unknown:
        raise ConfigError(f"unknown equation '{unknown[0]}'; the equations are {', '.join(EQUATION_KINDS)}.")
    if prompt not in PROMPTS:
        raise ConfigError(f"--prompt must be {' or '.join(PROMPTS)} (got '{prompt}').")
    tasks: list[Task] = []

    def task(kind: str, task_id: str, formula: str, meta: dict[str, Any]) -> Task:
        k = EQUATION_KINDS[kind]
        paper = prompt == "paper"
        return Task(
            task_id=task_id,
            description=paper_description(kind, formula) if paper else k.wording.format(equation=formula),
            name="solve",
            args=ARGS.get(kind, ("a", "b")),
            reference=k.reference,  # the function form's: check_tasks checks it either way
            generator=k.generator,
            abs_tol=paper_epsilon(kind, epsilon) if paper else epsilon,
            rel_tol=REL_TOL,
            meta={"equation": kind, "formula": formula, **meta, **({"prompt": "paper"} if paper else {})},
        )

    for kind in kinds:
        original = parse_equation(EQUATIONS[kind])
        tasks.append(task(kind, f"{kind}/original", original.text, {"distance": 0, "mutations": []}))
        for d in distances:
            for i, v in enumerate(variants(original, d, count=per_distance, seed=seed)):
                meta = {"distance": d, "mutations": [str(m) for m in v.mutations], "size": v.equation.size}
                tasks.append(task(kind, f"{kind}/d{d}/{i}", v.text, {**meta, "reduced": False}))
                if reduced:
                    r = reduce(v.equation).equation
                    tasks.append(
                        task(
                            kind,
                            f"{kind}/d{d}/{i}/reduced",
                            r.text,
                            {**meta, "reduced": True, "from": v.text},
                        )
                    )
    return tasks


# -- the metrics --------------------------------------------------------------------------------------


def _share(passed: int, judged: int) -> float | None:
    return passed / judged if judged else None


def degrees(records: Sequence[Mapping[str, Any]], reduced: bool) -> dict[str, Any]:
    """Definition 7 over the variants' answers (every round; backend errors are not answers)."""
    tallies: dict[str, dict[str, list[int]]] = {
        "by_distance": {},
        "by_equation": {},
        "by_mutation": {},
        "by_equation_distance": {},
    }
    total = [0, 0]
    categories = dict.fromkeys(CATEGORIES, 0)

    def add(group: str, key: str, passed: int, judged: int) -> None:
        t = tallies[group].setdefault(key, [0, 0])
        t[0] += passed
        t[1] += judged

    for r in records:
        meta = r.get("meta") or {}
        if not meta.get("distance") or bool(meta.get("reduced")) != reduced:
            continue
        cats = [a["category"] for a in r.get("rounds") or [] if a.get("category") is not None]
        passed, judged = sum(c == "passed" for c in cats), len(cats)
        for c in cats:
            categories[c] = categories.get(c, 0) + 1
        d, kind = str(meta["distance"]), str(meta["equation"])
        add("by_distance", d, passed, judged)
        add("by_equation", kind, passed, judged)
        add("by_equation_distance", f"{kind}/{d}", passed, judged)
        for m in sorted({m[:2] for m in meta.get("mutations") or []}):
            add("by_mutation", m, passed, judged)
        total[0] += passed
        total[1] += judged
    by_eq_d: dict[str, dict[str, float | None]] = {}
    for key, (p, j) in tallies["by_equation_distance"].items():
        kind, d = key.split("/")
        by_eq_d.setdefault(kind, {})[d] = _share(p, j)
    out: dict[str, Any] = {
        group: {k: _share(p, j) for k, (p, j) in sorted(t.items(), key=lambda kv: _order(kv[0]))}
        for group, t in tallies.items()
        if group != "by_equation_distance"
    }
    out["by_equation_distance"] = {
        k: dict(sorted(v.items(), key=lambda kv: int(kv[0]))) for k, v in by_eq_d.items()
    }
    out["overall"] = _share(*total)
    out["answers"] = total[1]
    return {"degree": out, "categories": categories}


def _order(key: str) -> tuple[int, str]:
    kinds = list(EQUATION_KINDS)
    if key.isdigit():
        return (int(key), "")
    return (kinds.index(key), "") if key in kinds else (len(kinds), key)


class SyntacticSummary(TasksSummary):
    """``summary.json`` of a syntactic run: the task run's, then the robustness degrees."""

    robustness_degree: dict[str, Any]
    categories_by_set: dict[str, Any]
    variants: dict[str, int]  # variants per syntactic distance
    original: dict[str, Any]
    reduced: NotRequired[dict[str, Any]]  # --reduce


def summarize_syntactic(records: Sequence[Mapping[str, Any]]) -> SyntacticSummary:
    # the task run's summary, then the suite's own fields, each set below
    summary = cast(SyntacticSummary, {**summarize_tasks(records)})
    plain = degrees(records, reduced=False)
    summary["robustness_degree"] = plain["degree"]
    # ``categories`` (every answer) is the task run's; here the same split by set of prompts
    summary["categories_by_set"] = {"variants": plain["categories"]}
    counts: dict[str, int] = {}
    for r in records:
        meta = r.get("meta") or {}
        if meta.get("distance") and not meta.get("reduced"):
            counts[str(meta["distance"])] = counts.get(str(meta["distance"]), 0) + 1
    summary["variants"] = dict(sorted(counts.items(), key=lambda kv: int(kv[0])))
    originals = [r for r in records if (r.get("meta") or {}).get("distance") == 0]
    summary["original"] = {
        "tasks": len(originals),
        "pass_rate": summarize_tasks(originals)["pass_rate"] if originals else None,
        "by_equation": {str(r["meta"]["equation"]): summarize_tasks([r])["pass_rate"] for r in originals},
    }
    if any((r.get("meta") or {}).get("reduced") for r in records):
        red = degrees(records, reduced=True)
        summary["reduced"] = {"robustness_degree": red["degree"], "categories": red["categories"]}
        summary["categories_by_set"]["reduced"] = red["categories"]
    return summary


class SyntacticKind(TasksKind):
    """A ``cctest bench syntactic`` run: the robustness degree with and without reduction."""

    name = "syntactic"
    title = "cctest bench syntactic"
    docs = "docs/syntactic.md"
    figures_after = {"Robustness degree by distance": ("Robustness degree against syntactic distance",)}

    def summarize(self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> SyntacticSummary:
        return summarize_syntactic(records)

    def headline(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        suite = config.get("suite") or {}
        return (
            f"{self.title} · {config.get('backend')} {model_label(config)} · {mode_label(config, summary)} · "
            f"{', '.join(suite.get('equations') or [])} · {sum(summary['variants'].values())} variants "
            f"× {config.get('rounds')} rounds" + (" · with reduction" if suite.get("reduce") else "")
        )

    def tables(self, summary: Mapping[str, Any]) -> dict[str, Table]:
        deg = summary["robustness_degree"]
        red = (summary.get("reduced") or {}).get("robustness_degree")
        head = ["", "degree"] + (["reduced"] if red else [])

        def rows(group: str) -> list[list[str]]:
            keys = list(deg[group]) + [k for k in (red or {}).get(group, {}) if k not in deg[group]]
            return [[k, pct(deg[group].get(k))] + ([pct(red[group].get(k))] if red else []) for k in keys]

        overall = [["overall", pct(deg["overall"])] + ([pct(red["overall"])] if red else [])]
        tables: dict[str, Table] = {
            "Robustness degree by distance": (
                ["distance", "variants", "degree"] + (["reduced"] if red else []),
                [
                    [d, str(summary["variants"].get(d, 0)), pct(v)]
                    + ([pct(red["by_distance"].get(d))] if red else [])
                    for d, v in deg["by_distance"].items()
                ]
                + [["overall", str(sum(summary["variants"].values()))] + overall[0][1:]],
            ),
            "Robustness degree by equation": (head, rows("by_equation")),
            "Robustness degree by mutation": (head, rows("by_mutation")),
            "Original equations (distance 0)": (
                ["equation", "pass rate"],
                [[k, pct(v)] for k, v in summary["original"]["by_equation"].items()],
            ),
        }
        return {**tables, **super().tables(summary)}

    def figures(self, runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
        from ..bench.render import pyplot, svg_of, why_empty

        plt = pyplot()
        fig, axes = plt.subplots(1, len(runs), figsize=(6.4 * len(runs), 4.2), squeeze=False)
        for ax, (label, summary) in zip(axes[0], runs, strict=True):
            distances: set[int] = set()
            reduced = bool(summary.get("reduced"))
            for which, style in (("plain", "-"), ("reduced", "--")):
                src = summary if which == "plain" else summary.get("reduced")
                if not src:
                    continue
                per = src["robustness_degree"]["by_equation_distance"]
                for i, (kind, series) in enumerate(per.items()):
                    points = [(int(d), 100 * v) for d, v in series.items() if v is not None]
                    if not points:
                        continue
                    distances.update(x for x, _ in points)
                    ax.plot(
                        *zip(*points, strict=True),
                        style,
                        marker="o",
                        color=f"C{i}",
                        label=(kind if which == "plain" else None),
                    )
                overall = [
                    (int(d), 100 * v)
                    for d, v in src["robustness_degree"]["by_distance"].items()
                    if v is not None
                ]
                if overall:
                    distances.update(x for x, _ in overall)
                    ax.plot(
                        *zip(*overall, strict=True),
                        style,
                        marker="s",  # a lone distance is a point, not a line: drawn all the same
                        markerfacecolor="none",  # around the equations' points, not over them
                        markersize=10,
                        color="black",
                        linewidth=2.5,
                        label=f"all ({which})" if reduced else "all",
                    )
            ax.set_xlabel("syntactic distance")
            ax.set_ylabel("robustness degree (%)")
            ax.set_ylim(-5, 105)
            ax.set_title(label + (" (dashed: reduced)" if reduced else ""))
            if distances:
                ax.set_xticks(sorted(distances))  # integer ticks, at the distances run
                if len(distances) == 1:
                    ax.set_xlim(min(distances) - 1, max(distances) + 1)
                ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
            else:
                why_empty(ax, "No variant was judged, so there is no degree to show.")
        return {"Robustness degree against syntactic distance": svg_of(fig)}

    def compare_rows(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
        da, db = a["robustness_degree"], b["robustness_degree"]
        rows = [["degree, overall", pct(da["overall"]), pct(db["overall"])]]
        rows += [
            [f"degree, distance {d}", pct(v), pct(db["by_distance"].get(d))]
            for d, v in da["by_distance"].items()
        ]
        ra, rb = (x.get("reduced", {}).get("robustness_degree") for x in (a, b))
        if ra or rb:
            rows.append(
                ["degree after reduction", pct((ra or {}).get("overall")), pct((rb or {}).get("overall"))]
            )
        return rows + super().compare_rows(a, b)
