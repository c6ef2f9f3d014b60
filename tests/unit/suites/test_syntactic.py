"""The syntactic suite's parts: reference solutions against SymPy, the tasks and the degree."""

from __future__ import annotations

import math
import random

import pytest
import sympy

from cctest.errors import ConfigError
from cctest.formula import EQUATIONS, parse_equation, reduce, variants
from cctest.suites.syntactic import EQUATION_KINDS, build_tasks, degrees, parse_distances, summarize_syntactic
from cctest.tasks import OracleSettings, check_reference


def _load(kind: str):  # type: ignore[no-untyped-def]
    ns: dict[str, object] = {}
    exec(EQUATION_KINDS[kind].reference, ns)
    exec(EQUATION_KINDS[kind].generator, ns)
    return ns["solve"], ns["generate"]


def _sympy_solutions(kind: str, args: tuple[int, ...]) -> list[float]:
    eq = parse_equation(EQUATIONS[kind])
    x = eq.variable
    expr = eq.difference().subs(dict(zip(eq.coefficients, map(sympy.Integer, args), strict=True)))
    trig = kind in ("sin", "cos", "tan")
    domain = sympy.Interval.Ropen(0, 2 * sympy.pi) if trig else sympy.S.Reals
    found = sympy.solveset(expr, x, domain)
    if found == sympy.S.EmptySet:
        return []
    assert isinstance(found, sympy.FiniteSet), (kind, args, found)
    return sorted({round(float(s), 2) for s in found})


@pytest.mark.parametrize("kind", list(EQUATION_KINDS))
def test_reference_solutions_agree_with_sympy_on_generated_inputs(kind):
    solve, generate = _load(kind)
    rng = random.Random(kind)
    for _ in range(15):
        args = generate(rng)
        assert all(isinstance(v, int) and v != 0 and -1000 <= v <= 1000 for v in args)
        got, want = solve(*args), _sympy_solutions(kind, args)
        assert len(got) == len(want) and all(
            math.isclose(g, w, rel_tol=1e-9, abs_tol=0.011) for g, w in zip(got, want, strict=True)
        ), (kind, args, got, want)


def test_sin_and_cos_inputs_have_solutions_and_log_inputs_finite_ones():
    for kind in ("sin", "cos", "log", "ln"):
        solve, generate = _load(kind)
        rng = random.Random(0)
        for _ in range(200):
            out = solve(*generate(rng))
            assert out and all(math.isfinite(v) for v in out), kind


@pytest.mark.parametrize("kind", ["quadratic", "tan"])
def test_references_pass_the_oracles_own_check(kind):
    task = build_tasks([kind], [1], 1)[0]
    check_reference(task, OracleSettings(inputs=50))


def test_tasks_per_kind_distance_and_reduction():
    tasks = build_tasks(["linear", "quadratic"], [1, 2], 20, reduced=True)
    by_id = {t.task_id: t for t in tasks}
    assert by_id["linear/original"].meta["distance"] == 0
    linear_d1 = [t for t in tasks if t.meta["equation"] == "linear" and t.meta["distance"] == 1]
    assert len(linear_d1) == 2 * 9  # every single mutation, and each reduced
    assert len([t for t in tasks if t.meta["equation"] == "quadratic" and t.meta["distance"] == 2]) == 40
    v = variants(parse_equation(EQUATIONS["linear"]), 2, count=20)[3]
    plain, red = by_id["linear/d2/3"], by_id["linear/d2/3/reduced"]
    assert plain.meta["formula"] == v.text and f"equation {v.text}, where" in plain.description
    assert red.meta["formula"] == reduce(v.equation).equation.text and red.meta["reduced"]
    assert plain.args == ("a", "b") and by_id["quadratic/original"].args == ("a", "b", "c")
    assert "'a', 'b' and 'c' are the function's arguments" in by_id["quadratic/original"].description
    assert plain.abs_tol == 0.02


def test_bad_suite_options():
    with pytest.raises(ConfigError):
        build_tasks(["cubic"], [1])
    for bad in ("0-3", "x", "", "2-9"):
        with pytest.raises(ConfigError):
            parse_distances(bad)
    assert parse_distances("1-3,5") == [1, 2, 3, 5]


def _record(kind: str, distance: int, mutations: list[str], cats: list[str | None], reduced: bool = False):
    return {
        "task_id": f"{kind}/{distance}/{len(mutations)}/{reduced}",
        "meta": {"equation": kind, "distance": distance, "mutations": mutations, "reduced": reduced},
        "rounds": [{"round": i, "category": c} for i, c in enumerate(cats)],
    }


def test_degree_counts_every_round_of_every_variant():
    records = [
        _record("linear", 0, [], ["fuzzing_failure"]),  # the original: not part of the degree
        _record("linear", 1, ["M1"], ["passed", "passed"]),
        _record("linear", 1, ["M3(b)"], ["passed", "fuzzing_failure"]),
        _record("sin", 2, ["M4(a)", "M1"], ["syntax_error", None]),  # a backend error is no answer
        _record("sin", 2, ["M4(a)", "M1"], ["passed", "passed"], reduced=True),
    ]
    plain = degrees(records, reduced=False)["degree"]
    assert plain["by_distance"] == {"1": 0.75, "2": 0.0}
    assert plain["by_equation"] == {"linear": 0.75, "sin": 0.0}
    assert plain["by_mutation"] == {"M1": 2 / 3, "M3": 0.5, "M4": 0.0}
    assert plain["by_equation_distance"] == {"linear": {"1": 0.75}, "sin": {"2": 0.0}}
    assert plain["overall"] == 3 / 5 and plain["answers"] == 5
    summary = summarize_syntactic(records)
    assert summary["variants"] == {"1": 2, "2": 1}
    assert summary["reduced"]["robustness_degree"]["overall"] == 1.0
    assert summary["categories_by_set"]["variants"]["syntax_error"] == 1
    assert summary["original"]["by_equation"] == {"linear": 0.0}


def test_variants_of_one_kind_share_one_reference_check(monkeypatch):
    from cctest.tasks import run as task_run

    checked = []
    real = task_run.check_and_time
    monkeypatch.setattr(task_run, "check_and_time", lambda t, o: checked.append(t.task_id) or real(t, o))
    task_run.check_tasks(build_tasks(["linear", "tan"], [1, 2], 3), OracleSettings(inputs=20))
    assert sorted(checked) == ["linear/original", "tan/original"]  # 2 of 2 * (1 + 3 + 3) tasks
