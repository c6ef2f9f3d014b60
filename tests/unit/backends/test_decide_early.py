"""Deciding early: every row writes its first tokens, one row is chosen on them and finished alone
from the batch's cache. The chosen row's completion is the one it gets in the whole batch (greedy),
the others are the start of theirs; on random-weight Llama (query heads sharing key/value heads)
and GPT-2 models, and on the bundled model with its boundaries, token healing and FIM layout."""

from __future__ import annotations

import asyncio

import pytest
from backend_prompts import PARTING as PROMPTS
from backend_prompts import VARIANTS

from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.types import Prompt


def _check_every_choice(backend: HFBackend, prompts: list[str], after: int, **kw: object) -> None:
    whole = backend.generate(prompts, **kw)  # type: ignore[arg-type]
    for row in range(len(prompts)):
        seen: list[list[str]] = []

        def decide(partial: list[object], row: int = row, seen: list[list[str]] = seen) -> int:
            seen.append([str(p) for p in partial])
            return row

        gens, chosen = backend.generate_deciding(prompts, after, decide, **kw)  # type: ignore[arg-type]
        assert chosen == row and len(seen) == 1
        assert gens[row].text == whole[row].text
        assert gens[row].completion_tokens == whole[row].completion_tokens
        # the others stopped where the decision was made: the start of their whole completion
        assert seen[0] == [g.text for g in gens[:row]] + [seen[0][row]] + [g.text for g in gens[row + 1 :]]
        for i, g in enumerate(gens):
            assert whole[i].text.startswith(g.text)
            if i != row:  # ``after`` tokens past the healed tail, which takes at most 4
                assert g.completion_tokens <= after + 4
                # cut by the decision, unless it had ended (its text then is whole)
                assert g.finish_reason == "decided" or g.text == whole[i].text


def test_the_chosen_row_finishes_as_in_the_whole_batch(tiny: HFBackend) -> None:
    backend = tiny.with_options(GenerationOptions(max_new_tokens=12), boundaries=False)
    assert backend.loaded.cascade
    gens, _ = backend.generate_deciding(PROMPTS, 4, lambda partial: 0)
    whole = backend.generate(PROMPTS)
    assert gens[0].completion_tokens == whole[0].completion_tokens == 12
    assert all(g.completion_tokens < w.completion_tokens for g, w in zip(gens[1:], whole[1:], strict=True))
    _check_every_choice(backend, PROMPTS, 4)


def test_deciding_early_with_boundaries_healing_and_fill_in_the_middle(hf_model: HFBackend) -> None:
    """The bundled model as the engine uses it: rows end at their boundaries, prompts ending in
    indentation are healed, and with suffixes the rows are laid out suffix first."""
    backend = hf_model.with_options(GenerationOptions(max_new_tokens=24))
    _check_every_choice(backend, VARIANTS, 3)
    suffixes = ["\n    return found\n"] * len(VARIANTS)
    assert backend.fim_inputs(VARIANTS, suffixes, 24) is not None
    _check_every_choice(backend.with_options(boundaries=False), VARIANTS, 5, suffixes=suffixes)


def test_no_decision_when_every_row_ends_first(tiny: HFBackend) -> None:
    backend = tiny.with_options(GenerationOptions(max_new_tokens=6), boundaries=False)
    asked: list[object] = []
    gens, chosen = backend.generate_deciding(PROMPTS, 6, asked.append)  # budget reached by then
    assert chosen is None and not asked
    assert [g.text for g in gens] == [g.text for g in backend.generate(PROMPTS)]
    one, chosen = backend.generate_deciding(PROMPTS[:1], 2, asked.append)  # one row: nothing to choose
    assert chosen is None and not asked and one[0].text == gens[0].text


def test_sampled_rows_finish_reproducibly(tiny: HFBackend) -> None:
    backend = tiny.with_options(GenerationOptions(max_new_tokens=10, temperature=0.9), boundaries=False)
    first = backend.generate_deciding(PROMPTS, 3, lambda partial: 2)
    again = backend.generate_deciding(PROMPTS, 3, lambda partial: 2)
    assert [g.text for g in first[0]] == [g.text for g in again[0]]
    assert first[0][2].completion_tokens == 10


def test_the_engine_decides_on_the_first_tokens(hf_model: HFBackend) -> None:
    # no healing: its tokens would make "the first 4" differ between the two requests below
    backend = hf_model.with_options(
        GenerationOptions(max_new_tokens=24), boundaries=False, token_healing=False
    )
    prompt = Prompt(text=VARIANTS[0], suffix="\n    return found\n")
    decided = asyncio.run(Engine(backend, Settings(mutants=6, decide_after=4)).run(prompt))
    whole = asyncio.run(Engine(backend, Settings(mutants=6, decide_after=0)).run(prompt))
    assert decided.decided_after == 4 and whole.decided_after is None
    assert decided.to_dict()["decided_after"] == 4
    assert decided.chosen is not None and len(decided.completions) == len(whole.completions) == 7
    # the chosen completion is whole; every other one is the start of its whole completion
    assert decided.completion == whole.completions[decided.chosen].text
    for got, full in zip(decided.completions, whole.completions, strict=True):
        assert full.text.startswith(got.text)
    shorter = [len(c.text) < len(w.text) for c, w in zip(decided.completions, whole.completions, strict=True)]
    assert sum(shorter) >= 3
    # the completions the decision stopped say so, in the result and in what the defect log stores
    assert all(c.cut for c, s in zip(decided.completions, shorter, strict=True) if s)
    assert not decided.completions[decided.chosen].cut and not any(c.cut for c in whole.completions)
    assert [c.get("cut", False) for c in decided.to_dict()["completions"]] == [
        c.cut for c in decided.completions
    ]
    # the verdict is the one a request for those first tokens alone gets
    short = backend.with_options(GenerationOptions(max_new_tokens=4))
    first = asyncio.run(Engine(short, Settings(mutants=6, decide_after=0)).run(prompt))
    assert decided.similarity == first.similarity
    assert (decided.outliers, decided.chosen) == (first.outliers, first.chosen)


def test_the_engine_settles_the_verdict_on_whole_completions(hf_model: HFBackend) -> None:
    """``run_settling``: the answer is decided on the first tokens; the settled verdict is the one
    an undecided run makes on whole completions, with the answered completion as its choice."""
    backend = hf_model.with_options(
        GenerationOptions(max_new_tokens=24), boundaries=False, token_healing=False
    )
    prompt = Prompt(text=VARIANTS[0], suffix="\n    return found\n")
    early, settling = asyncio.run(Engine(backend, Settings(mutants=6, decide_after=4)).run_settling(prompt))
    whole = asyncio.run(Engine(backend, Settings(mutants=6, decide_after=0)).run(prompt))
    assert settling is not None and any(c.cut for c in early.completions)
    settled = asyncio.run(settling.result())
    assert settled is not None and settled.settled and not early.settled
    assert settled.decided_after == 4 and settled.to_dict()["settled"] is True
    assert [c.text for c in settled.completions] == [c.text for c in whole.completions]
    assert not any(c.cut for c in settled.completions)
    assert settled.similarity == whole.similarity and settled.outliers == whole.outliers
    assert settled.is_suspect == whole.is_suspect
    assert settled.chosen == early.chosen and settled.completion == early.completion
    assert "settle" in settled.timings_ms and "settle" not in early.timings_ms
    # a settling closed before it ran has nothing to say; an undecided run has no settling
    _, closed = asyncio.run(Engine(backend, Settings(mutants=6, decide_after=4)).run_settling(prompt))
    assert closed is not None
    closed.close()
    assert asyncio.run(closed.result()) is None
    plain = asyncio.run(Engine(backend, Settings(mutants=6, decide_after=0)).run_settling(prompt))
    assert plain[1] is None and plain[0].completions == whole.completions


@pytest.mark.parametrize("decide_after", [0, 8])
def test_a_backend_that_cannot_decide_completes_every_row(decide_after: int) -> None:
    result = asyncio.run(
        Engine(RuleBackend(), Settings(mutants=4, decide_after=decide_after)).run("def f(a, b):\n    return ")
    )
    assert result.decided_after is None and result.completion
    _, settling = asyncio.run(
        Engine(RuleBackend(), Settings(mutants=4, decide_after=decide_after)).run_settling(
            "def f(a, b):\n    return "
        )
    )
    assert settling is None


def _run_on(
    backend: HFBackend, prompts: list[str], after: int, row: int, **kw: object
) -> tuple[object, object]:
    """An early decision for ``row``, then the cut rows run on: (what it answered, every row whole)."""

    async def go() -> tuple[object, object]:
        got = await backend.complete_deciding(prompts, after=after, decide=lambda partial: row, **kw)  # type: ignore[arg-type]
        assert got.chosen == row and got.cut and got.rest is not None
        return got, await got.rest.finish()

    return asyncio.run(go())


@pytest.mark.parametrize("row", [0, 2])
def test_the_cut_rows_run_on_to_what_the_whole_batch_writes(tiny: HFBackend, row: int) -> None:
    backend = tiny.with_options(GenerationOptions(max_new_tokens=14), boundaries=False)
    whole = [g.text for g in backend.generate(PROMPTS)]
    got, finished = _run_on(backend, PROMPTS, 4, row)
    assert finished == whole
    assert got.outcomes[row] == whole[row]  # type: ignore[attr-defined]
    assert any(len(o) < len(w) for o, w in zip(got.outcomes, whole, strict=True))  # type: ignore[attr-defined]


def test_the_cut_rows_run_on_with_boundaries_healing_and_fill_in_the_middle(hf_model: HFBackend) -> None:
    """Rows that end at a boundary or at EOS while the others go on end there, as in one batch."""
    backend = hf_model.with_options(GenerationOptions(max_new_tokens=24))
    whole = [str(o) for o in asyncio.run(backend.complete(VARIANTS))]
    assert _run_on(backend, VARIANTS, 3, 1)[1] == whole
    suffixes = ["\n    return found\n"] * len(VARIANTS)
    fim = backend.with_options(boundaries=False)
    whole = [str(o) for o in asyncio.run(fim.complete(VARIANTS, suffixes=suffixes))]
    assert _run_on(fim, VARIANTS, 5, 0, suffixes=suffixes)[1] == whole


def test_running_the_cut_rows_on_gives_way_to_a_call_queued_behind_it(tiny: HFBackend) -> None:
    """A call queued for the model thread while the cut rows run on is served before they end
    (after one more step of theirs), and they then go on to the same completions."""
    backend = tiny.with_options(GenerationOptions(max_new_tokens=40), boundaries=False)
    whole = [g.text for g in backend.generate(PROMPTS)]
    alone = [g.text for g in backend.generate(PROMPTS[:1])]

    async def go() -> tuple[list[str], object, object]:
        got = await backend.complete_deciding(PROMPTS, after=2, decide=lambda partial: 0)
        assert got.rest is not None
        order: list[str] = []

        async def settle() -> object:
            done = await got.rest.finish()  # type: ignore[union-attr]
            order.append("settled")
            return done

        async def other() -> object:
            await asyncio.sleep(0)  # queued after the first step of ``settle``
            done = await backend.complete(PROMPTS[:1])
            order.append("other")
            return done

        settled, answered = await asyncio.gather(settle(), other())
        return order, settled, answered

    order, settled, answered = asyncio.run(go())
    assert order == ["other", "settled"]
    assert answered == alone and settled == whole


def test_closed_cut_rows_are_let_go(tiny: HFBackend) -> None:
    backend = tiny.with_options(GenerationOptions(max_new_tokens=14), boundaries=False)

    async def go() -> object:
        got = await backend.complete_deciding(PROMPTS, after=4, decide=lambda partial: 0)
        assert got.rest is not None
        got.rest.close()
        return await got.rest.finish()

    assert asyncio.run(go()) is None
