"""The HTTP backend against real aiohttp servers: Ollama- and TGI-speaking servers over the bundled
model, and small fault servers (500s, 429 with Retry-After, slow answers, garbage, refusals).
The OpenAI provider against ``cctest serve`` is in tests/e2e/serve."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from backend_prompts import OTHERS, VARIANTS
from local_server import server

from cctest.backends import create_backend
from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.backends.http import HTTPBackend, endpoint_url
from cctest.config import Settings
from cctest.errors import BackendResponseError, BackendTimeout, BackendUnavailable, ConfigError


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed on exit: nothing listens there


def ok(text: str) -> web.Response:
    return web.json_response({"choices": [{"index": 0, "text": text, "finish_reason": "length"}]})


# -- providers over the real model -----------------------------------------------------------------


async def test_ollama_provider_against_an_ollama_speaking_server(hf_model: HFBackend) -> None:
    raw = hf_model.with_options(GenerationOptions(max_new_tokens=24), boundaries=False)
    bodies: list[dict[str, Any]] = []

    async def generate(request: web.Request) -> web.Response:
        body = await request.json()
        bodies.append(body)
        opts = GenerationOptions(
            max_new_tokens=body["options"]["num_predict"], stop=tuple(body["options"].get("stop", ()))
        )
        gen = (await asyncio.to_thread(raw.with_options(opts, boundaries=False).generate, [body["prompt"]]))[
            0
        ]
        return web.json_response({"model": body["model"], "response": gen.text, "done": True})

    prompts = VARIANTS[:3] + OTHERS[:2]
    async with server({"/api/generate": generate}) as url:
        settings = Settings(
            backend="http", model=url, provider="ollama", model_name="coder", max_new_tokens=24
        )
        async with create_backend(settings) as backend:
            out = await backend.complete(prompts)
    assert all(b["stream"] is False and b["raw"] is True and b["model"] == "coder" for b in bodies)
    assert all(b["options"]["num_predict"] == 24 and b["options"]["temperature"] == 0 for b in bodies)
    assert sorted(b["prompt"] for b in bodies) == sorted(prompts)
    # the server returns raw text; the backend cuts it like the local backend does
    local = await hf_model.with_options(GenerationOptions(max_new_tokens=24)).complete(prompts)
    assert out == local


async def test_tgi_provider_against_a_tgi_speaking_server(hf_model: HFBackend) -> None:
    bodies: list[dict[str, Any]] = []

    async def generate(request: web.Request) -> web.Response:
        body = await request.json()
        bodies.append(body)
        params = body["parameters"]
        opts = GenerationOptions(max_new_tokens=params["max_new_tokens"], stop=tuple(params.get("stop", ())))
        gen = (
            await asyncio.to_thread(hf_model.with_options(opts, boundaries=False).generate, [body["inputs"]])
        )[0]
        answer: Any = {"generated_text": gen.text}
        return web.json_response([answer] if len(bodies) % 2 else answer)  # TGI answers either shape

    prompts = OTHERS
    async with server({"/generate": generate}) as url:
        async with HTTPBackend(
            url, provider="tgi", options=GenerationOptions(max_new_tokens=20, stop=("\n\n\n",))
        ) as b:
            out = await b.complete(prompts)
    assert all(b["parameters"]["do_sample"] is False and "temperature" not in b["parameters"] for b in bodies)
    assert all(
        b["parameters"]["return_full_text"] is False and b["parameters"]["stop"] == ["\n\n\n"] for b in bodies
    )
    local = await hf_model.with_options(GenerationOptions(max_new_tokens=20, stop=("\n\n\n",))).complete(
        prompts
    )
    assert out == local


async def test_sampling_parameters_reach_the_server() -> None:
    bodies: list[dict[str, Any]] = []

    async def generate(request: web.Request) -> web.Response:
        bodies.append(await request.json())
        return web.json_response({"generated_text": "1"})

    async with server({"/generate": generate}) as url:
        async with HTTPBackend(
            url, provider="tgi", options=GenerationOptions(temperature=0.7, top_p=0.9)
        ) as b:
            assert await b.complete(["x = "]) == ["1"]
    assert (
        bodies[0]["parameters"] | {"temperature": 0.7, "top_p": 0.9, "do_sample": True}
        == bodies[0]["parameters"]
    )


async def test_sampled_rounds_are_seeded_so_they_differ_and_a_rerun_repeats_them() -> None:
    """A prompt asked n times in one call (a task's rounds) goes out with seed, seed + 1, ...; each
    provider carries the seed where its API takes it; greedy requests carry none."""
    seen: list[tuple[str, int | None]] = []

    async def openai(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((body["prompt"], body.get("seed")))
        return ok("1")

    async def ollama(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((body["prompt"], body["options"].get("seed")))
        return web.json_response({"response": "1", "done": True})

    async def tgi(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((body["inputs"], body["parameters"].get("seed")))
        return web.json_response({"generated_text": "1"})

    async def openai_chat(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((body["messages"][-1]["content"], body.get("seed")))
        return web.json_response(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": "1"}}]}
        )

    routes = {
        "/v1/completions": openai,
        "/api/generate": ollama,
        "/generate": tgi,
        "/v1/chat/completions": openai_chat,
    }
    sampled = GenerationOptions(temperature=0.7, seed=5)
    async with server(routes) as url:
        for provider in ("openai", "ollama", "tgi"):
            for opts, expected in ((sampled, [5, 6, 5]), (GenerationOptions(seed=5), [None, None, None])):
                seen.clear()
                async with HTTPBackend(url, provider=provider, options=opts, model_name="m") as b:
                    assert await b.complete(["a", "a", "b"]) == ["1", "1", "1"]
                assert sorted(seen, key=str) == sorted(
                    zip(["a", "a", "b"], expected, strict=True), key=str
                ), provider
        seen.clear()
        async with HTTPBackend(url, provider="openai", options=sampled) as b:
            asked = [[{"role": "user", "content": "q"}]] * 3
            assert len(await b.chat(asked)) == 3
        assert sorted(s for _, s in seen) == [5, 6, 7]


# -- the stop rules apply to server output -------------------------------------------------------


async def test_server_output_is_cut_at_its_boundary() -> None:
    async def completions(request: web.Request) -> web.Response:
        return ok("x + 1\n\n\ndef other():\n    pass\n")

    async with server({"/v1/completions": completions}) as url:
        async with HTTPBackend(url) as b:
            assert await b.complete(["def f(x):\n    return "]) == ["x + 1\n"]


# -- faults ------------------------------------------------------------------------------------------


async def test_5xx_is_retried_until_it_succeeds() -> None:
    hits: list[float] = []

    async def flaky(request: web.Request) -> web.Response:
        hits.append(time.monotonic())
        if len(hits) <= 2:
            return web.json_response({"error": {"message": "warming up"}}, status=503)
        return ok("42")

    async with server({"/v1/completions": flaky}) as url:
        async with HTTPBackend(url, timeout=10) as b:
            assert await b.complete(["x = "]) == ["42"]
    assert len(hits) == 3


async def test_persistent_500_gives_a_response_error_after_bounded_retries() -> None:
    hits = 0

    async def broken(request: web.Request) -> web.Response:
        nonlocal hits
        hits += 1
        return web.json_response({"error": {"message": "the GPU caught fire.\nTraceback ..."}}, status=500)

    async with server({"/v1/completions": broken}) as url:
        async with HTTPBackend(url, timeout=10, max_retries=2) as b:
            out = await b.complete(["x = ", "y = "])
    assert hits == 2 * 3  # two prompts, each tried three times
    assert all(isinstance(o, BackendResponseError) for o in out)
    message = str(out[0])
    assert "500" in message and "the GPU caught fire" in message and "\n" not in message


async def test_429_waits_for_retry_after() -> None:
    hits: list[float] = []

    async def limited(request: web.Request) -> web.Response:
        hits.append(time.monotonic())
        if len(hits) == 1:
            return web.json_response({"error": "slow down"}, status=429, headers={"Retry-After": "1"})
        return ok("done")

    async with server({"/v1/completions": limited}) as url:
        async with HTTPBackend(url, timeout=10) as b:
            assert await b.complete(["x = "]) == ["done"]
    assert len(hits) == 2
    assert hits[1] - hits[0] >= 0.95  # the server asked for one second


async def test_429_beyond_the_deadline_is_reported_at_once() -> None:
    hits = 0

    async def limited(request: web.Request) -> web.Response:
        nonlocal hits
        hits += 1
        return web.json_response({"error": "quota"}, status=429, headers={"Retry-After": "3600"})

    async with server({"/v1/completions": limited}) as url:
        async with HTTPBackend(url, timeout=5) as b:
            started = time.monotonic()
            (out,) = await b.complete(["x = "])
            elapsed = time.monotonic() - started
    assert isinstance(out, BackendResponseError) and "429" in str(out)
    assert hits == 1 and elapsed < 5  # no point waiting an hour past a 5-second deadline


async def test_a_slow_server_times_out_instead_of_hanging() -> None:
    release = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        try:
            await asyncio.wait_for(release.wait(), 30)
        except asyncio.TimeoutError:
            pass
        return ok("too late")

    async with server({"/v1/completions": slow}) as url:
        async with HTTPBackend(url, timeout=0.5) as b:
            started = time.monotonic()
            out = await b.complete(["x = ", "y = ", "z = "])
            elapsed = time.monotonic() - started
        release.set()
    assert all(isinstance(o, BackendTimeout) for o in out)
    assert "0.5 s" in str(out[0])
    assert elapsed < 10  # the 0.5 s deadline held (the server would have taken 30 s)


@pytest.mark.parametrize(
    ("payload", "content_type", "expected"),
    [
        (b"<html>502 Bad Gateway</html>", "text/html", "not JSON"),
        (b'{"choices": []}', "application/json", "choices[0].text"),
        (b'{"choices": [{"text": 7}]}', "application/json", "choices[0].text"),
        (b'{"object": "error"', "application/json", "not JSON"),
    ],
)
async def test_garbage_answers_are_response_errors(payload: bytes, content_type: str, expected: str) -> None:
    async def garbage(request: web.Request) -> web.Response:
        return web.Response(body=payload, content_type=content_type)

    async with server({"/v1/completions": garbage}) as url:
        async with HTTPBackend(url) as b:
            (out,) = await b.complete(["x = "])
    assert isinstance(out, BackendResponseError) and expected in str(out)


async def test_a_closed_port_is_unavailable_at_once() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    async with HTTPBackend(url, timeout=10) as b:
        started = time.monotonic()
        out = await b.complete(["x = ", "y = "])
        elapsed = time.monotonic() - started
    assert all(isinstance(o, BackendUnavailable) for o in out)
    assert "cannot connect" in str(out[0]) and "refused" in str(out[0])
    assert elapsed < 5  # refused connections are not retried until the deadline


async def test_a_server_that_drops_the_connection() -> None:
    async def rude(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        return web.Response()

    async with server({"/v1/completions": rude}) as url:
        async with HTTPBackend(url, timeout=5, max_retries=0) as b:
            (out,) = await b.complete(["x = "])
    assert isinstance(out, BackendUnavailable | BackendResponseError)


async def test_a_dropped_connection_is_retried_only_when_asked() -> None:
    """retry_unavailable (the bench's long runs): a server that drops the connection twice and then
    answers is asked again by the 5xx loop; by default (an editor) the drop is reported at once."""
    hits = 0

    async def flaky(request: web.Request) -> web.StreamResponse:
        nonlocal hits
        hits += 1
        if hits <= 2:
            assert request.transport is not None
            request.transport.close()
        return ok("42")

    async with server({"/v1/completions": flaky}) as url:
        async with HTTPBackend(url, timeout=10, retry_unavailable=True) as b:
            assert await b.complete(["x = "]) == ["42"]
        assert hits == 3
        hits = 0
        async with HTTPBackend(url, timeout=10) as b:
            (out,) = await b.complete(["x = "])
        assert isinstance(out, BackendUnavailable) and "broke before an answer" in str(out)
        assert hits == 1
        async with create_backend(Settings(backend="http", model=url), retry_unavailable=True) as b:
            hits = 0
            assert await b.complete(["y = "]) == ["42"] and hits == 3


async def test_a_refused_connection_is_retried_a_bounded_number_of_times(caplog) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with caplog.at_level(logging.INFO, logger="cctest.backends.http"):
        async with HTTPBackend(url, timeout=30, max_retries=2, retry_unavailable=True) as b:
            (out,) = await b.complete(["x = "])
    assert isinstance(out, BackendUnavailable) and "refused" in str(out)
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2 and "refused or dropped the connection" in retries[0]


async def test_one_failing_prompt_does_not_fail_the_others() -> None:
    async def picky(request: web.Request) -> web.Response:
        body = await request.json()
        if "bad" in body["prompt"]:
            return web.json_response({"error": {"message": "no"}}, status=400)
        return ok("fine")

    async with server({"/v1/completions": picky}) as url:
        async with HTTPBackend(url) as b:
            out = await b.complete(["good = ", "bad = ", "good2 = "])
    assert out[0] == "fine" and out[2] == "fine"
    assert isinstance(out[1], BackendResponseError) and "400" in str(out[1])


# -- concurrency, keys, configuration ----------------------------------------------------------------


async def test_variants_go_out_concurrently_within_the_bound() -> None:
    in_flight = 0
    peak = 0

    async def counting(request: web.Request) -> web.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.2)
        in_flight -= 1
        return ok("1")

    async with server({"/v1/completions": counting}) as url:
        async with HTTPBackend(url, max_concurrency=3) as b:
            out = await b.complete([f"x{i} = " for i in range(9)])
    assert out == ["1"] * 9
    assert peak == 3


async def test_the_api_key_is_sent_and_never_shown(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("MY_SERVER_KEY", secret)
    seen: list[str] = []

    async def guarded(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        if len(seen) == 1:
            return web.json_response({"error": "busy"}, status=503, headers={"Retry-After": "0"})
        return web.json_response({"error": {"message": "invalid key"}}, status=401)

    caplog.set_level(logging.DEBUG)
    async with server({"/v1/completions": guarded}) as url:
        async with HTTPBackend(url, api_key_env="MY_SERVER_KEY", timeout=5) as b:
            (out,) = await b.complete(["x = "])
            shown = b.describe()
    assert seen == [f"Bearer {secret}"] * 2
    assert isinstance(out, BackendResponseError) and "MY_SERVER_KEY" in str(out)
    assert secret not in str(out) and secret not in shown and secret not in caplog.text


async def test_no_key_no_authorization_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CCTEST_API_KEY", raising=False)
    seen: list[str | None] = []

    async def open_(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return ok("1")

    async with server({"/v1/completions": open_}) as url:
        async with HTTPBackend(url) as b:
            await b.complete(["x = "])
    assert seen == [None]


def test_credentials_in_the_url_are_not_shown() -> None:
    b = HTTPBackend("http://user:hunter2@127.0.0.1:9/v1?token=abc", model_name="m")
    assert "hunter2" not in b.describe() and "abc" not in b.describe()
    assert b.describe() == "http openai http://127.0.0.1:9/v1/completions?token=REDACTED model m"


@pytest.mark.parametrize(
    ("base", "provider", "expected"),
    [
        ("http://h:1", "openai", "http://h:1/v1/completions"),
        ("http://h:1/", "openai", "http://h:1/v1/completions"),
        ("http://h:1/v1/", "openai", "http://h:1/v1/completions"),
        ("https://h/proxy/v1/completions", "openai", "https://h/proxy/v1/completions"),
        ("http://h:11434", "ollama", "http://h:11434/api/generate"),
        ("http://h:8080", "tgi", "http://h:8080/generate"),
        ("https://h/v1?api-version=2&key=k", "openai", "https://h/v1/completions?api-version=2&key=k"),
    ],
)
def test_endpoint_urls(base: str, provider: str, expected: str) -> None:
    assert str(endpoint_url(base, provider)) == expected


@pytest.mark.parametrize(
    "settings",
    [
        Settings(backend="http"),  # no URL
        Settings(backend="http", model="localhost:8000"),  # no scheme
        Settings(backend="http", model="ftp://h/"),
        Settings(backend="http", model="http://"),
        Settings(backend="http", model="http://h:1", provider="ollama"),  # no model name
    ],
)
def test_unusable_configuration_is_one_sentence(settings: Settings) -> None:
    with pytest.raises(ConfigError) as err:
        create_backend(settings)
    assert str(err.value).endswith(".") and "\n" not in str(err.value)


def test_unknown_provider() -> None:
    with pytest.raises(ConfigError, match="unknown provider"):
        HTTPBackend("http://h:1", provider="grpc")


async def test_closing_while_a_call_is_in_flight_lets_it_finish_and_leaks_no_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The language server closes the old backend when the settings change, while a request may
    still be using it: that request must get its answers, and a later call on the closed backend
    must neither fail nor leave a connection pool open ("Unclosed client session")."""
    started, release = asyncio.Event(), asyncio.Event()

    async def held(request: web.Request) -> web.Response:
        started.set()
        await asyncio.wait_for(release.wait(), 10)
        return ok(" 1")

    async with server({"/v1/completions": held}) as url:
        b = HTTPBackend(url, timeout=15)
        call = asyncio.create_task(b.complete(["x =", "y ="]))
        await asyncio.wait_for(started.wait(), 10)
        closing = asyncio.create_task(b.aclose())
        await asyncio.sleep(0.2)
        assert not closing.done()  # it waits for the call in flight
        release.set()
        assert await call == [" 1", " 1"]
        await asyncio.wait_for(closing, 5)
        assert b._session is None
        sessions: list[aiohttp.ClientSession] = []
        real = aiohttp.ClientSession

        def recorded(*a: Any, **kw: Any) -> aiohttp.ClientSession:
            sessions.append(real(*a, **kw))
            return sessions[-1]

        monkeypatch.setattr(aiohttp, "ClientSession", recorded)  # to see the sessions it opens
        assert await b.complete(["z ="]) == [" 1"]  # after close: still answers ...
        assert len(sessions) == 1 and sessions[0].closed  # ... on a session closed with the call
        assert b._session is None
