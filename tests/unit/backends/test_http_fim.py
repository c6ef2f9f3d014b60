"""The HTTP backend fills in the middle: the request bodies a real local aiohttp server receives
for OpenAI's and Ollama's ``suffix``, a server that refuses it, and TGI with a client-side template."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web
from local_server import server
from test_http_backend import ok

from cctest.backends.fim import FAMILIES
from cctest.backends.http import HTTPBackend

PREFIXES = ["def area(r):\n    return ", "def area(radius):\n    return "]
SUFFIXES = ["\n\n\nprint(area(2))\n", "\n\n\nprint(area(2))\n"]


def recorder(bodies: list[dict[str, Any]], refuse_suffix: bool = False) -> Any:
    async def handler(request: web.Request) -> web.Response:
        body = await request.json()
        bodies.append(body)
        if refuse_suffix and "suffix" in body:
            return web.json_response({"error": "suffix is not supported"}, status=422)
        if "inputs" in body:
            return web.json_response({"generated_text": "3.14 * r * r\n"})
        if "options" in body:
            return web.json_response({"response": "3.14 * r * r\n", "done": True})
        return ok("3.14 * r * r\n")

    return handler


async def test_openai_sends_the_suffix_field() -> None:
    bodies: list[dict[str, Any]] = []
    async with server({"/v1/completions": recorder(bodies)}) as url:
        async with (backend := HTTPBackend(url)):
            assert backend.fim_mode == "suffix"
            out = await backend.complete(PREFIXES, suffixes=SUFFIXES)
            assert out == ["3.14 * r * r\n"] * 2
            await backend.complete(PREFIXES[:1])  # no suffix: none sent
    by_prompt = {b["prompt"]: b for b in bodies[:2]}
    assert {p: by_prompt[p]["suffix"] for p in PREFIXES} == dict(zip(PREFIXES, SUFFIXES, strict=True))
    assert "suffix" not in bodies[2]


async def test_a_row_without_a_suffix_is_asked_as_it_is_alone() -> None:
    """In one call with rows that have code after the cursor, a row without any is sent without
    a suffix field (as it is alone), not with an empty one."""
    bodies: list[dict[str, Any]] = []
    async with server({"/v1/completions": recorder(bodies)}) as url:
        async with (backend := HTTPBackend(url)):
            await backend.complete(PREFIXES, suffixes=[SUFFIXES[0], " \n"])
    by_prompt = {b["prompt"]: b for b in bodies}
    assert by_prompt[PREFIXES[0]]["suffix"] == SUFFIXES[0]
    assert "suffix" not in by_prompt[PREFIXES[1]]


async def test_ollama_sends_the_suffix_field_without_raw() -> None:
    bodies: list[dict[str, Any]] = []
    async with server({"/api/generate": recorder(bodies)}) as url:
        async with (backend := HTTPBackend(url, provider="ollama", model_name="coder")):
            await backend.complete(PREFIXES[:1], suffixes=SUFFIXES[:1])
            await backend.complete(PREFIXES[:1])
    assert bodies[0]["prompt"] == PREFIXES[0] and bodies[0]["suffix"] == SUFFIXES[0]
    assert "raw" not in bodies[0]
    assert bodies[1]["raw"] is True and "suffix" not in bodies[1]


async def test_a_named_template_is_used_from_the_first_request(caplog: pytest.LogCaptureFixture) -> None:
    """``--fim NAME`` lays the rows out in that template up front, not only once a server has
    refused the suffix field (a server may take the field and ignore it)."""
    bodies: list[dict[str, Any]] = []
    async with server({"/v1/completions": recorder(bodies)}) as url:
        async with (backend := HTTPBackend(url, fim="starcoder")):
            assert backend.fim_mode == "starcoder (psm)"
            with caplog.at_level(logging.WARNING, logger="cctest.backends.http"):
                assert await backend.complete(PREFIXES[:1], suffixes=SUFFIXES[:1]) == ["3.14 * r * r\n"]
                assert await backend.complete(PREFIXES[1:], suffixes=SUFFIXES[1:]) == ["3.14 * r * r\n"]
            assert backend.fim_used() == "starcoder (psm)"
    assert [("suffix" in b) for b in bodies] == [False, False]
    assert bodies[0]["prompt"] == FAMILIES["starcoder"].prompt(PREFIXES[0], SUFFIXES[0])
    assert bodies[1]["prompt"] == FAMILIES["starcoder"].prompt(PREFIXES[1], SUFFIXES[1])
    assert not caplog.records


async def test_a_refused_suffix_without_a_template_is_dropped_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bodies: list[dict[str, Any]] = []
    async with server({"/v1/completions": recorder(bodies, refuse_suffix=True)}) as url:
        async with (backend := HTTPBackend(url)):
            with caplog.at_level(logging.WARNING, logger="cctest.backends.http"):
                for _ in range(2):
                    assert await backend.complete(PREFIXES, suffixes=SUFFIXES) == ["3.14 * r * r\n"] * 2
            assert backend.fim_mode == "none"
    assert [("suffix" in b) for b in bodies] == [True, True, False, False, False, False]
    assert sorted(b["prompt"] for b in bodies[2:4]) == sorted(PREFIXES)
    assert len([r for r in caplog.records if "without the code after the cursor" in r.getMessage()]) == 1


async def test_tgi_gets_the_client_side_template(caplog: pytest.LogCaptureFixture) -> None:
    bodies: list[dict[str, Any]] = []
    async with server({"/generate": recorder(bodies)}) as url:
        async with (backend := HTTPBackend(url, provider="tgi", fim="codellama-spm")):
            assert backend.fim_mode == "codellama-spm (spm)"
            await backend.complete(PREFIXES[:1], suffixes=SUFFIXES[:1])
        async with (plain := HTTPBackend(url, provider="tgi")):  # auto: TGI has no suffix field
            with caplog.at_level(logging.WARNING, logger="cctest.backends.http"):
                await plain.complete(PREFIXES[:1], suffixes=SUFFIXES[:1])
        async with (off := HTTPBackend(url, fim="off", provider="tgi")):
            await off.complete(PREFIXES[:1], suffixes=SUFFIXES[:1])
    assert bodies[0]["inputs"] == FAMILIES["codellama-spm"].prompt(PREFIXES[0], SUFFIXES[0])
    assert bodies[0]["inputs"].endswith(PREFIXES[0])
    assert bodies[1]["inputs"] == PREFIXES[0] and bodies[2]["inputs"] == PREFIXES[0]
    assert len([r for r in caplog.records if "no FIM template" in r.getMessage()]) == 1


def test_only_a_client_side_spm_template_reads_the_suffix_first() -> None:
    url = "http://127.0.0.1:9"
    # a server's suffix field may lay the code out either way: not known, so not suffix-first
    assert not HTTPBackend(url).reads_suffix_first
    assert HTTPBackend(url, fim="starcoder-spm").reads_suffix_first  # a named template: used up front
    assert HTTPBackend(url, provider="tgi", fim="starcoder-spm").reads_suffix_first
    assert not HTTPBackend(url, provider="tgi", fim="starcoder").reads_suffix_first
    assert not HTTPBackend(url, provider="tgi", fim="off").reads_suffix_first
