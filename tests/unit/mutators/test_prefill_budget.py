"""The mutant choice knows its cost (``selection.prefill_costs``, ``selection.within_budget``, the
setting ``prefill_budget``): each mutant costs the tokens after its first difference from the
prompt, and the k chosen stay within the budget while they span at least 3 scheme families."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import DEFAULT_HORIZON, Engine
from cctest.mutators.registry import family
from cctest.mutators.selection import (
    MIN_PLAIN_TOKENS,
    Costs,
    Reading,
    estimate_tokens,
    first_difference,
    prefill_costs,
    within_budget,
)
from cctest.types import Mutant, Prompt

ROOT = Path(__file__).resolve().parents[3]


def long_source() -> str:
    """A module whose last function is long, its parameters used from its first line on: a rename
    of one changes the ``def`` line, 40 lines above the cursor."""
    filler = "".join(
        f"def helper_{i}(values):\n    total = 0\n    for value in values:\n"
        f"        total += value * {i}\n    return total\n\n\n"
        for i in range(30)
    )
    body = "".join(f"    step_{i} = scale + offset * {i} - len(items)\n" for i in range(40))
    return (
        filler
        + "def summarize(items, scale, offset):\n    count = len(items)\n"
        + body
        + "    result = count + "
    )


def test_first_difference_finds_the_first_differing_character() -> None:
    a = "x" * 10_000 + "abc"
    assert first_difference(a, a) == len(a)
    assert first_difference(a, a[:-1] + "Z") == len(a) - 1
    assert first_difference(a, "y" + a[1:]) == 0
    assert first_difference(a, a + "more") == len(a)


def test_a_change_at_the_top_costs_the_function_and_one_near_the_cursor_a_few_tokens() -> None:
    prompt = "def f(a, b):\n" + "".join(f"    x{i} = a + {i}\n" for i in range(30)) + "    return "
    top = Mutant("REP_R", prompt.replace("a", "Param1"), renames={"Param1": "a"})
    near = Mutant("GRA_R", prompt.replace("    return ", "    if False: TempVar = 0\n    return "))
    costs = prefill_costs(prompt, [top, near], Reading())
    assert costs.plain == estimate_tokens(prompt)
    assert costs.own[0] >= costs.plain - 10  # read again from the def line on
    assert costs.own[1] < 20
    # read left to right, the code after the cursor costs nothing; prefix first, every row reads it
    suffix = "\n    return x0\n"
    after = prefill_costs(prompt, [top, near], Reading(suffix=suffix))
    assert after.plain == costs.plain + estimate_tokens(suffix)
    assert after.own == tuple(c + estimate_tokens(suffix) for c in costs.own)


def test_read_suffix_first_a_rename_the_suffix_uses_owns_its_whole_row() -> None:
    prompt = "def f(a, b):\n    c = a + b\n    "
    used = Mutant("REP_R", prompt.replace("b", "Param1"), renames={"Param1": "b"})
    unused = Mutant("REL_R", prompt.replace("c =", "LocalVar1 ="), renames={"LocalVar1": "c"})
    costs = prefill_costs(prompt, [used, unused], Reading(suffix="return b\n", suffix_first=True))
    assert costs.own[0] == costs.plain
    assert costs.own[1] < costs.plain


def test_the_horizon_caps_what_a_row_can_cost() -> None:
    prompt = "".join(f"v{i} = {i}\n" for i in range(2000))
    top = Mutant("FMT", "\n" + prompt)
    costs = prefill_costs(prompt, [top], Reading(horizon=300))
    assert costs.plain == 300 and costs.own[0] <= 301


def test_within_the_budget_the_first_k_stand() -> None:
    costs = Costs(plain=2000, own=(900, 10, 20, 30))
    assert within_budget(costs, ["REP", "GRA", "FMT", "INI"], 3, 2.0) == [0, 1, 2]
    assert within_budget(costs, ["REP", "GRA", "FMT", "INI"], 3, 0) == [0, 1, 2]


def test_over_the_budget_the_costliest_give_way_to_cheaper_ones() -> None:
    costs = Costs(plain=1000, own=(900, 10, 800, 20, 30, 5, 700))
    families = ["REP", "GRA", "REL", "FMT", "INI", "DOC", "REP"]
    chosen = within_budget(costs, families, 4, 1.5)
    assert chosen == [1, 3, 4, 5]
    assert costs.ratio(chosen) <= 1.5


def test_the_families_stay_at_least_three_even_over_the_budget() -> None:
    # the only cheap candidates are of one family: REP and REL keep their places
    costs = Costs(plain=1000, own=(900, 800, 10, 20, 30, 40))
    families = ["REP", "REL", "FMT", "FMT", "FMT", "FMT"]
    chosen = within_budget(costs, families, 3, 1.1)
    assert chosen == [0, 1, 2] and costs.ratio(chosen) > 1.1
    # with a fourth family among the cheap ones, the costliest gives way to it
    chosen = within_budget(costs, [*families[:5], "INI"], 3, 1.1)
    assert chosen == [1, 2, 5]


def test_a_short_prompt_is_counted_as_the_least_plain_prompt() -> None:
    costs = Costs(plain=100, own=(100, 100))
    assert costs.ratio() == pytest.approx(1 + 200 / MIN_PLAIN_TOKENS)


def test_the_engine_chooses_within_the_budget_and_shows_the_costs() -> None:
    prompt = Prompt(long_source())
    free = Engine(RuleBackend(), Settings(prefill_budget=0)).prepare(prompt).mutants
    bound = asyncio.run(Engine(RuleBackend()).run(prompt))
    assert Settings().prefill_budget > 0 and bound.prefill is not None
    assert bound.prefill.budget == Settings().prefill_budget and bound.prefill.horizon == DEFAULT_HORIZON
    unbound = prefill_costs(prompt.text, free, Reading(DEFAULT_HORIZON))
    assert unbound.ratio() > bound.prefill.budget  # the schemes' own choice costs more here
    assert bound.prefill.ratio <= bound.prefill.budget
    assert len(bound.mutants) == len(free) == Settings().mutants
    assert len({family(m.scheme) for m in bound.mutants}) >= 3
    assert bound.prefill.own == prefill_costs(prompt.text, bound.mutants, Reading(DEFAULT_HORIZON)).own
    # the renames that change the def line are what gave way
    assert sum(m.scheme.startswith("REP") for m in bound.mutants) < sum(
        m.scheme.startswith("REP") for m in free
    )
    assert bound.to_dict()["prefill"]["mutant_tokens"] == list(bound.prefill.own)


def test_cctest_complete_json_shows_each_mutants_cost_and_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "long.py"
    path.write_text(long_source() + "\n")
    line = long_source().count("\n") + 1
    done = subprocess.run(
        [sys.executable, "-m", "cctest", "complete", f"{path}:{line}:20", "--backend", "rules", "--json",
         "--prefill-budget", "1.5"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    prefill = out["prefill"]
    assert prefill["budget"] == 1.5 and len(prefill["mutant_tokens"]) == len(out["mutants"]) == 10
    assert prefill["ratio"] <= 1.5 and prefill["plain_tokens"] > MIN_PLAIN_TOKENS
