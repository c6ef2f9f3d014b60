"""The http backend in front of a server that answers as llama.cpp's ``llama-server`` (and
llama-cpp-python's server) does (``llama_like_server``): interrupted streams, context-length
refusals, a suffix field that is ignored, ``/infill``, slots."""

from __future__ import annotations

import logging

import pytest
from aiohttp import web
from llama_like_server import LlamaLike, llama_like
from local_server import server

from cctest.backends.base import GenerationOptions
from cctest.backends.http import HTTPBackend
from cctest.errors import BackendError

TEXT = "value = compute(alpha, beta)"  # seven tokens of four characters


def words(prefix: str, suffix: str) -> str:
    return TEXT


class ReadsSuffix(LlamaLike):
    """A llama-server whose /v1/completions reads the suffix field (as vLLM's once did)."""

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((request.path, body))
        prompt = body["prompt"] + body.get("suffix", "")
        return await self._generate(request, body, prompt, "", body.get("max_tokens", 16), oai=True)


def backend(url: str, **kw: object) -> HTTPBackend:
    kw.setdefault("options", GenerationOptions(max_new_tokens=32))
    return HTTPBackend(url, boundaries=False, timeout=20, **kw)  # type: ignore[arg-type]


async def test_a_stream_ended_without_a_finish_reason_is_a_failed_row() -> None:
    """llama-cpp-python's server ends the streaming row with [DONE] and no finish reason when
    another request queues: that row is interrupted, not a (short) finished completion."""
    server = LlamaLike(words, slots=1, interrupt=True, props=False, step_s=0.01)
    async with llama_like(server) as url, (b := backend(url)):
        got = await b.complete_deciding(["a = 1\n", "b = 2\n", "c = 3\n"], after=64, decide=lambda _: 0)
    failed = [o for o in got.outcomes if isinstance(o, BackendError)]
    assert failed and all("without a finish reason" in str(o) for o in failed)
    assert all(o == TEXT for o in got.outcomes if isinstance(o, str))


LONG = "".join(f"line_{i} = compute({i})\n" for i in range(40)) + "result = "  # ~100 tokens


@pytest.mark.parametrize("deciding", [False, True])
async def test_a_context_length_refusal_is_not_a_suffix_refusal_and_the_prompt_is_windowed(
    deciding: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """llama-server refuses a prompt longer than a slot's context with a 400: that is neither a
    refused suffix field nor a refused stream; the rows are asked again cut to fit, one line says
    so, and the suffix field and streams stay in use."""
    server = ReadsSuffix(words, n_ctx=64, props=False)  # no /props: nothing asked before the rows
    opts = GenerationOptions(max_new_tokens=8)
    with caplog.at_level(logging.INFO, logger="cctest.backends.http"):
        async with llama_like(server) as url, (b := backend(url, options=opts)):
            prompts, tails = [LONG, LONG.replace("result", "total")], ["\nprint(result)\n"] * 2
            if deciding:
                got = await b.complete_deciding(prompts, suffixes=tails, after=4, decide=lambda _: 0)
                out = got.outcomes
            else:
                out = await b.complete(prompts, suffixes=tails)
            assert b.fim_mode == "suffix" and not b._stream_refused
            later = await b.complete(prompts[:1], suffixes=tails[:1])  # cut at once now
    assert out == [TEXT[:32]] * 2 and later == [TEXT[:32]]
    messages = [r.getMessage() for r in caplog.records]
    assert not any("refused" in m for m in messages)
    assert len([m for m in messages if "gives each row 64 tokens of context" in m]) == 1
    asked = [b["prompt"] for p, b in server.requests if p == "/v1/completions" and b["max_tokens"] > 1]
    assert all(p.endswith("result = ") or p.endswith("total = ") for p in asked)
    assert len(asked[-1]) < len(LONG) and asked[-1].startswith("line_")  # from a line's start
    assert len(asked) == 5  # two refused, two cut, and the later one cut before it went out


async def test_an_error_that_was_not_about_the_suffix_leaves_the_suffix_field_in_use() -> None:
    """A 400 the request without the suffix field gets too did not come from the field."""
    seen: list[bool] = []

    async def refuse(request: web.Request) -> web.Response:
        seen.append("suffix" in await request.json())
        return web.json_response({"error": {"message": "the model is loading"}}, status=400)

    async with server({"/v1/completions": refuse}) as url, (b := backend(url)):
        out = await b.complete(["x = "], suffixes=["\ny = x\n"])
        assert isinstance(out[0], BackendError) and b.fim_mode == "suffix"
    assert seen == [True, False]


async def test_the_streamed_and_the_whole_rows_give_the_same_text_under_a_stop_sequence() -> None:
    """llama-server holds back streamed text that may begin a stop sequence and never sends it
    when the row reaches its token limit; the rows are streamed without their stop sequences (cut
    here), so the streamed row is the whole one."""
    server = LlamaLike(lambda prefix, suffix: "x = 1  \ny = 2\n")
    opts = GenerationOptions(max_new_tokens=2, stop=("\n\n",))
    async with llama_like(server) as url, (b := backend(url, options=opts)):
        whole = await b.complete(["a = ", "b = "])
        streamed = await b.complete_deciding(["a = ", "b = "], after=64, decide=lambda _: 0)
    assert whole == ["x = 1  \n"] * 2
    assert streamed.outcomes == whole


ROW = "def f(x):\n    y = x + 1\n    return "  # nine tokens


@pytest.mark.parametrize("deciding", [False, True])
async def test_rows_that_overflow_the_servers_shared_context_are_asked_again_as_many_at_a_time_as_fit(
    deciding: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """llama-server's default slots share one context: four rows side by side overflow it and all
    but one fail. Those rows are asked again, one at a time (the rows that fitted), and one line
    says how to give the server more slots; its /props is asked once."""
    server = LlamaLike(words, slots=4, shared_ctx=20)  # one row of 9 + 7 tokens fits, two do not
    prompts = [ROW + name for name in ("a", "b", "c", "d")]
    with caplog.at_level(logging.INFO, logger="cctest.backends.http"):
        async with llama_like(server) as url, (b := backend(url)):
            if deciding:
                out = (await b.complete_deciding(prompts, after=3, decide=lambda _: 0)).outcomes
            else:
                out = await b.complete(prompts)
            assert out == [TEXT] * 4
            again = await b.complete(prompts)  # at once one at a time now: nothing fails
    assert again == [TEXT] * 4
    lines = [r.getMessage() for r in caplog.records if "side by side" in r.getMessage()]
    assert len(lines) == 1 and "runs 1 rows side by side" in lines[0] and "llama-server -np" in lines[0]
    assert server.props_asked == 1


def fills(prefix: str, suffix: str) -> str:
    """The model: fills in the middle when it is shown the code after the cursor."""
    return "area(r)" if suffix else "print()"


@pytest.mark.parametrize("deciding", [False, True])
async def test_a_server_that_ignores_the_suffix_field_is_asked_at_its_infill(
    deciding: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """llama-server's /v1/completions answers 200 to a suffix field and ignores it (the prompt
    tokens it reports are the same without it): the rows with code after the cursor go to its
    /infill, and the layout reported is that one."""
    server = LlamaLike(fills)
    prompts, tails = ["x = ", "y = "], ["\nprint(x)\n", "\nprint(y)\n"]
    with caplog.at_level(logging.INFO, logger="cctest.backends.http"):
        async with llama_like(server) as url, (b := backend(url)):
            if deciding:
                out = (
                    await b.complete_deciding(prompts, suffixes=tails, after=2, decide=lambda _: 0)
                ).outcomes
            else:
                out = await b.complete(prompts, suffixes=tails)
            assert b.fim_used() == "/infill (llama.cpp's server)"
            plain = await b.complete(prompts)  # no code after the cursor: the completion endpoint
    assert out == ["area(r)"] * 2 and plain == ["print()"] * 2
    assert len([r for r in caplog.records if "ignores the suffix field" in r.getMessage()]) == 1
    paths = [path for path, _ in server.requests]
    assert paths[3:] == ["/infill", "/infill", "/v1/completions", "/v1/completions"]
    assert server.props_asked == 1


async def test_a_server_whose_suffix_field_is_read_keeps_it() -> None:
    """A server that reports more prompt tokens with the suffix field reads it: it is kept."""

    server = ReadsSuffix(fills)
    async with llama_like(server) as url, (b := backend(url)):
        await b.complete(["x = "], suffixes=["\nprint(x)\n"])
        assert b.fim_used() == "suffix field"
    assert [p for p, _ in server.requests].count("/infill") == 1  # the check's, no row's
