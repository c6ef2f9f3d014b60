"""The http backend's early decision over streams (``HTTPBackend.complete_deciding``) against
real aiohttp servers speaking vLLM's (OpenAI), Ollama's and TGI's stream formats: every row
streamed, the decision on each row's first tokens, the other rows' streams closed (the server
stops generating them), the chosen one read to its end; and a server that does not stream."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from stream_server import counts_of, make_app, start, tokens_for

from cctest.backends.base import DecidesEarly, GenerationOptions, Outcome
from cctest.backends.http import HTTPBackend

PROMPTS = ["x = alpha", "x = beta", "x = gamma"]
BUDGET = 200


def backend(url: str, fmt: str) -> HTTPBackend:
    return HTTPBackend(
        url,
        provider=fmt,
        model_name="m",
        options=GenerationOptions(max_new_tokens=BUDGET),
        boundaries=False,
        timeout=20,
    )


@pytest.mark.parametrize("fmt", ["openai", "ollama", "tgi"])
async def test_the_decision_reads_first_tokens_and_closes_the_other_streams(fmt: str) -> None:
    app = make_app(fmt)
    runner, url = await start(app)
    seen: list[list[Outcome]] = []

    def decide(partial: list[Outcome]) -> int:
        seen.append(partial)
        return 1

    try:
        async with backend(url, fmt) as b:
            assert isinstance(b, DecidesEarly)
            got = await b.complete_deciding(PROMPTS, after=5, decide=decide)
    finally:
        await runner.cleanup()
    whole = ["".join(tokens_for(p, BUDGET)) for p in PROMPTS]
    assert len(seen) == 1
    for partial, full in zip(seen[0], whole, strict=True):  # each row's first 5 tokens, at least
        assert isinstance(partial, str) and full.startswith(partial) and len(partial.split()) >= 5
    assert got.chosen == 1 and got.cut == (0, 2)
    assert got.outcomes[1] == whole[1]  # the chosen row read to its end
    assert got.outcomes[0] == seen[0][0] or whole[0].startswith(str(got.outcomes[0]))
    written = counts_of(app).written
    assert sorted(written)[-1] == BUDGET and sum(written) < BUDGET + 2 * BUDGET / 4
    assert counts_of(app).plain == 0
    assert got.rest is not None
    got.rest.close()


async def test_settling_asks_the_closed_rows_again_whole_when_the_backend_is_idle() -> None:
    app = make_app("openai")
    runner, url = await start(app)
    try:
        async with backend(url, "openai") as b:
            got = await b.complete_deciding(PROMPTS, after=3, decide=lambda partial: 2)
            assert got.rest is not None
            settled = await got.rest.finish()
    finally:
        await runner.cleanup()
    assert settled == ["".join(tokens_for(p, BUDGET)) for p in PROMPTS]
    assert counts_of(app).plain == 2  # the two closed rows, asked again whole


@pytest.mark.parametrize("how", ["refuse", "whole"])
async def test_a_server_that_does_not_stream_gets_whole_completions_with_one_log_line(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app("openai", refuse=how == "refuse", whole=how == "whole")
    runner, url = await start(app)
    asked: list[Any] = []
    try:
        async with backend(url, "openai") as b:
            with caplog.at_level(logging.WARNING, logger="cctest.backends.http"):
                first = await b.complete_deciding(PROMPTS, after=3, decide=lambda p: asked.append(p) or 0)
                second = await b.complete_deciding(PROMPTS, after=3, decide=lambda p: asked.append(p) or 0)
    finally:
        await runner.cleanup()
    whole = ["".join(tokens_for(p, BUDGET)) for p in PROMPTS]
    assert first.outcomes == second.outcomes == whole
    assert first.chosen is None and second.chosen is None and not asked
    lines = [r.getMessage() for r in caplog.records if "whole completions" in r.getMessage()]
    assert len(lines) == 1


@pytest.mark.parametrize("fmt", ["openai", "ollama", "tgi"])
async def test_events_without_text_count_as_tokens(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row whose first events carry no text (a server regenerating the prompt's healed tail, as
    ``cctest serve`` at a cursor after a run of spaces) does not hold the decision up: each event
    is a token, so the decision comes after ``after`` events of every row, while that row has
    shown nothing yet (it shows text only after 60 events; counting only events with text, the
    decision waited for them, and nothing was saved)."""
    import stream_server

    def tokens(prompt: str, n: int) -> list[str]:
        words = tokens_for(prompt, n)
        return [""] * 60 + words[60:] if prompt.endswith("beta") else words

    monkeypatch.setattr(stream_server, "tokens_for", tokens)
    app = make_app(fmt, step_s=0.01)
    runner, url = await start(app)
    seen: list[list[Outcome]] = []

    def decide(partial: list[Outcome]) -> int:
        seen.append(partial)
        return 0

    try:
        async with HTTPBackend(
            url,
            provider=fmt,
            model_name="m",
            options=GenerationOptions(max_new_tokens=80),
            boundaries=False,
            timeout=20,
        ) as b:
            got = await b.complete_deciding(PROMPTS, after=3, decide=decide)
    finally:
        await runner.cleanup()
    assert len(seen) == 1 and seen[0][1] == ""  # decided before the row showed any text
    assert got.chosen == 0 and got.cut == (1, 2)
    assert got.outcomes[0] == "".join(tokens_for(PROMPTS[0], 80))
    written = counts_of(app).written
    assert sorted(written)[-1] == 80 and sum(written) < 80 + 2 * 60
    if got.rest is not None:
        got.rest.close()


async def test_a_row_that_ends_here_keeps_its_stream_until_the_decision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A row that reaches its end on this side (here a stop sequence in its first token) does not
    close its stream at once: every row the decision does not need is closed together, when it is
    made (``cctest serve`` rebuilds its batch each time rows leave it). The server writes that row
    on until then; closed at its end, it would have written one token."""
    import stream_server

    def tokens(prompt: str, n: int) -> list[str]:
        words = tokens_for(prompt, n)
        return [" STOP"] + words[1:] if prompt.endswith("beta") else words

    monkeypatch.setattr(stream_server, "tokens_for", tokens)
    app = make_app("openai", step_s=0.01)
    runner, url = await start(app)
    try:
        async with HTTPBackend(
            url,
            model_name="m",
            options=GenerationOptions(max_new_tokens=60, stop=("STOP",)),
            boundaries=False,
            timeout=20,
        ) as b:
            got = await b.complete_deciding(PROMPTS, after=12, decide=lambda partial: 0)
    finally:
        await runner.cleanup()
    assert got.outcomes[1] == " " and got.chosen == 0 and got.cut == (2,)  # cut at "STOP"
    written = counts_of(app).written
    assert written[0] == 60  # the chosen row, to its end
    assert written[1] > 6  # held open while the others wrote their first 12 tokens
    if got.rest is not None:
        got.rest.close()
