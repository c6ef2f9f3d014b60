"""The whole pipeline with a deterministic backend whose completions depend on the prompt.

RuleBackend completes ``return <params>`` with the parameter names the prompt uses, so a renamed
mutant's completion really contains the invented names and only de-mutation makes it agree.
"""

from __future__ import annotations

import json

import pytest

from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.errors import BackendError
from cctest.types import Prompt

# ordinary parameters: nothing in the document passes them by keyword, so REP renames them
PROMPT = "def add(a, b):\n    res = a + b\n    total = res * 2\n    "


async def run(backend, prompt=PROMPT, **settings):
    return await Engine(backend, Settings(**settings)).run(prompt)


async def test_renamed_completions_are_mapped_back_and_agree():
    backend = RuleBackend()
    result = await run(backend, schemes=("REP_R", "REP_C"), mutants=4)
    assert len(backend.calls) == 1 and len(backend.calls[0]) == 1 + len(result.mutants)  # one batched call
    assert result.mutants, "REP should apply to ordinary parameters"
    for m, c in zip(result.mutants, result.completions[1:], strict=True):
        assert m.renames and set(m.renames.values()) <= {"a", "b"}
        assert any(new in c.raw for new in m.renames)  # the model saw and used the invented name
        assert c.text == "return a + b\n"  # ... and de-mutation maps it back
    assert result.outliers == () and result.chosen == 0
    assert result.completion == "return a + b\n"


async def test_a_keyword_call_after_the_cursor_keeps_that_parameter_name():
    # the suffix passes b by keyword: renaming b would break it, so only a is renamed
    backend = RuleBackend()
    prompt = Prompt(text=PROMPT, suffix="\n\nprint(add(1, b=2))\n")
    result = await Engine(backend, Settings(schemes=("REP_R", "REP_C"), mutants=4)).run(prompt)
    assert result.mutants
    assert all(set(m.renames.values()) == {"a"} for m in result.mutants)
    assert result.completion == "return a + b\n"


async def test_a_mutant_that_changes_the_answer_is_flagged_and_not_chosen():
    # the backend answers differently whenever the prompt contains GRA_C's dead code
    result = await run(RuleBackend(fragile=["if False: Add_TempVar"]), mutants=10)
    gra = [i for i, m in enumerate(result.mutants, start=1) if m.scheme == "GRA_C"]
    assert gra and len(gra) < len(result.mutants) / 2, "GRA should apply, to a minority of the mutants"
    assert set(result.outliers) == set(gra) and not result.original_is_outlier
    assert result.completion == "return a + b\n"


async def test_an_original_that_disagrees_with_its_mutants_is_repaired():
    # only the original prompt contains "(a, b)": every REP mutant renamed one of them
    result = await run(RuleBackend(fragile=["(a, b)"]), schemes=("REP_R", "REP_C"), mutants=4)
    assert result.completions[0].text != result.completions[1].text
    assert result.original_is_outlier and result.is_suspect
    assert result.chosen != 0 and result.completion == "return a + b\n"
    assert "Param" not in result.completion


async def test_failed_and_empty_completions_are_counted_as_no_results():
    result = await run(RuleBackend(fail_on=["if False"]), mutants=10)
    ini = {i for i, m in enumerate(result.mutants, start=1) if m.scheme.startswith("GRA")}
    assert ini
    assert set(result.verdict.no_results) == ini
    assert all(result.completions[i].error for i in ini)
    assert not (set(result.outliers) & ini)
    assert result.similarity[min(ini)] == tuple(0.0 for _ in result.completions)


async def test_every_prompt_failing_raises_the_backend_error():
    with pytest.raises(BackendError):
        await run(RuleBackend(fail_on=["def"]))


async def test_known_original_completion_is_not_requested_again():
    backend = RuleBackend()
    result = await Engine(backend, Settings(mutants=3)).run(PROMPT, original="return a + b\n")
    assert PROMPT not in backend.calls[0]
    assert result.completions[0].raw == "return a + b\n"


async def test_result_serialises_with_timings_for_every_stage():
    result = await run(RuleBackend(), mutants=5)
    d = json.loads(json.dumps(result.to_dict()))
    assert set(d) >= {
        "prompt",
        "mutants",
        "completions",
        "similarity",
        "outliers",
        "chosen",
        "completion",
        "original_is_outlier",
        "timings_ms",
    }
    assert set(d["timings_ms"]) >= {"mutate", "complete", "demutate", "detect", "repair", "total", "engine"}
    n = len(d["completions"])
    assert len(d["similarity"]) == n and all(len(r) == n for r in d["similarity"])
    assert all(0.0 <= m["structural_distance"] <= 0.1 for m in d["mutants"])


async def test_k_zero_is_the_plain_completion():
    result = await run(RuleBackend(), mutants=0)
    assert result.mutants == () and result.chosen == 0 and result.completion == "return a + b\n"


async def test_run_many_sends_one_call_and_agrees_with_run():
    prompts = [
        PROMPT,
        "def scale(values, factor):\n    out = [v * factor for v in values]\n    ",
        Prompt(text=PROMPT, suffix="\n\nprint(add(1, b=2))\n"),
    ]
    settings = Settings(mutants=6)
    together = RuleBackend(fragile=["if False"])
    many = await Engine(together, settings).run_many(prompts)
    assert len(together.calls) == 1  # every variant of every prompt in one backend call
    assert len(together.calls[0]) == sum(len(r.completions) for r in many)  # type: ignore[union-attr]
    for prompt, got in zip(prompts, many, strict=True):
        alone = await Engine(RuleBackend(fragile=["if False"]), settings).run(prompt)
        assert not isinstance(got, Exception)
        assert got.prompt == alone.prompt
        assert [m.text for m in got.mutants] == [m.text for m in alone.mutants]
        assert [c.text for c in got.completions] == [c.text for c in alone.completions]
        assert got.outliers == alone.outliers and got.chosen == alone.chosen
        assert got.timings_ms["total"] >= got.timings_ms["complete"] > 0


async def test_run_many_gives_each_prompt_its_own_failure():
    # the rules backend fails every variant of the prompts that mention "boom"
    prompts = [PROMPT, "def boom(a):\n    b = a\n    ", "def other(x):\n    y = x + 1\n    "]
    backend = RuleBackend.from_spec("fail_on=boom")
    many = await Engine(backend, Settings(mutants=4)).run_many(prompts)
    assert isinstance(many[1], BackendError)
    assert not isinstance(many[0], Exception) and many[0].completion == "return a + b\n"
    assert not isinstance(many[2], Exception) and many[2].completion
    assert await Engine(backend, Settings()).run_many([]) == []


async def test_run_many_isolates_a_prompt_whose_fault_breaks_the_shared_call():
    """An unexpected exception (a fault no real backend raises on cue, hence the subclass) from the
    shared call is retried prompt by prompt: only the prompt that causes it fails."""

    class Buggy(RuleBackend):
        async def complete(self, prompts, *, suffixes=None):  # type: ignore[no-untyped-def]
            if any("greet" in p for p in prompts):
                raise RuntimeError("a bug")
            return await super().complete(prompts, suffixes=suffixes)

    backend = Buggy()
    prompts = [PROMPT, "def greet(name):\n    msg = name\n    ", "def other(x):\n    y = x + 1\n    "]
    many = await Engine(backend, Settings(mutants=3)).run_many(prompts)
    assert isinstance(many[1], RuntimeError)
    assert not isinstance(many[0], Exception) and many[0].completion == "return a + b\n"
    assert not isinstance(many[2], Exception)
    assert len(backend.calls) == 2  # the shared call failed; then one call per other prompt
    # a lone prompt's fault is its result, not retried
    alone = await Engine(backend, Settings(mutants=3)).run_many([prompts[1]])
    assert isinstance(alone[0], RuntimeError) and len(backend.calls) == 2


# a method of ordinary length: its parameters are renamed at the def line, far from the cursor
LONG_PROMPT = (
    "def summarise(records, key, limit):\n"
    "    counts = {}\n"
    "    for record in records:\n"
    "        name = record[key]\n"
    "        counts[name] = counts.get(name, 0) + 1\n"
    "    ordered = sorted(counts.items(), key=lambda kv: -kv[1])\n"
    "    top = ordered[:limit]\n"
    "    lines = []\n"
    "    for name, count in top:\n"
    "        if count > 1:\n"
    "            lines.append(f'{name}: {count}')\n"
    "    "
)


def _reach(prompt: str, mutants) -> list[int]:
    import os

    return [len(prompt) - len(os.path.commonprefix([prompt, m.text])) for m in mutants]


async def test_mutant_pool_keeps_the_mutants_changed_nearest_the_cursor():
    from cctest.mutators import SCHEMES, generate_mutants, nearest_the_cursor

    # near_sites off: the schemes' own sites (with it, GRA's are already the nearest)
    plain = await run(RuleBackend(), LONG_PROMPT, mutants=6, mutant_pool=1, near_sites=False)
    near = await run(RuleBackend(), LONG_PROMPT, mutants=6, mutant_pool=3, near_sites=False)
    far6 = generate_mutants(LONG_PROMPT, k=6, near=False).mutants
    assert [m.text for m in plain.mutants] == [m.text for m in far6]
    pool = generate_mutants(LONG_PROMPT, k=18, near=False).mutants
    assert len(pool) > 6  # there was a choice to make
    assert [m.text for m in near.mutants] == [m.text for m in nearest_the_cursor(LONG_PROMPT, pool, 6)]
    assert len(near.mutants) == 6
    # every family the pool offers is still there, and the rows part from the prompt later
    families = {SCHEMES[m.scheme].family for m in pool}
    assert {SCHEMES[m.scheme].family for m in near.mutants} == families or len(families) > 6
    assert sum(_reach(LONG_PROMPT, near.mutants)) < sum(_reach(LONG_PROMPT, plain.mutants))


async def test_near_sites_part_the_rows_from_the_prompt_later_with_the_same_schemes():
    from cctest.mutators import generate_mutants

    far = await run(RuleBackend(), LONG_PROMPT, mutants=6, near_sites=False)
    near = await run(RuleBackend(), LONG_PROMPT, mutants=6)  # the default
    assert [m.text for m in near.mutants] == [m.text for m in generate_mutants(LONG_PROMPT, k=6).mutants]
    assert [m.scheme for m in near.mutants] == [m.scheme for m in far.mutants]
    assert sum(_reach(LONG_PROMPT, near.mutants)) < sum(_reach(LONG_PROMPT, far.mutants))


def test_nearest_the_cursor_keeps_one_per_family_then_the_nearest():
    from cctest.mutators import SCHEMES, generate_mutants, nearest_the_cursor

    pool = generate_mutants(LONG_PROMPT, k=18).mutants
    for k in (1, 3, 6, len(pool), len(pool) + 2):
        got = nearest_the_cursor(LONG_PROMPT, pool, k)
        assert len(got) == min(k, len(pool))
        assert [m.text for m in got] == [m.text for m in pool if m in got]  # the pool's order
        families = {SCHEMES[m.scheme].family for m in pool}
        assert len({SCHEMES[m.scheme].family for m in got}) == min(k, len(families))
        rest = [m for m in pool if m not in got]
        by_family: dict[str, list[int]] = {}
        for m, r in zip(got, _reach(LONG_PROMPT, got), strict=True):
            by_family.setdefault(SCHEMES[m.scheme].family, []).append(r)
        extras = [max(rs) for rs in by_family.values() if len(rs) > 1]  # each a family's 2nd or later
        if rest and extras:  # beyond one per family, the nearest were taken
            assert max(extras) <= min(_reach(LONG_PROMPT, rest))
