"""``cctest proxy`` in front of a real ``llama-server``, asked as editor plugins ask it (the OpenAI
client; llama.vim's ``/infill``): the whole and streamed answers give the same text and are built
on the server's own (its ``model`` and ``usage``), the code after the cursor reaches the server,
an early decision cancels the rows it no longer needs (the server's log says ``cancel task``), and
at the server's bare defaults the proxy never answers an error where the server alone answers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from llama_helpers import Server, cctest_proxy

PROMPT = "def fibonacci(n):\n    if n < 2:\n        return n\n    "
SUFFIX = "\n\n\n" + "".join(
    f"def scale_{i}(values):\n    return [v * {i} for v in values]\n\n\n" for i in range(12)
)


@pytest.fixture(scope="module")
def proxy_wide(llama_wide: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with cctest_proxy(llama_wide, tmp_path_factory.mktemp("proxy-wide")) as proxy:
        yield proxy


def _client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0, timeout=300)


# fewer tokens than the early decision's 16: every row runs to the server's own end (its last
# event, the only one with the server's usage), none is cut by cctest at a block's boundary
SHORT = 4


def _ask(server: Server, max_tokens: int = 24, **body: Any) -> Any:
    return _client(server).completions.create(
        model="plugin-model", prompt=PROMPT, max_tokens=max_tokens, temperature=0, **body
    )


def test_whole_and_streamed_answers_give_the_same_text(proxy_wide: Server) -> None:
    """Without the prompt cache (the request's ``cache_prompt``, kept for every row): at
    temperature 0 llama-server's text can change with what its cache holds."""
    fresh = {"extra_body": {"cache_prompt": False}}
    whole = _ask(proxy_wide, SHORT, **fresh)
    streamed = "".join(
        chunk.choices[0].text for chunk in _ask(proxy_wide, SHORT, stream=True, **fresh) if chunk.choices
    )
    assert whole.choices[0].text.strip()
    assert streamed == whole.choices[0].text


def test_the_answer_is_built_on_the_servers(proxy_wide: Server, llama_wide: Server) -> None:
    """Its ``model`` is the server's name for the model, not the request's, and it has the
    server's ``usage`` (the prompt's tokens as the server counted them)."""
    direct = _ask(llama_wide, SHORT)
    answer = _ask(proxy_wide, SHORT)
    assert answer.model == direct.model != "plugin-model"
    assert answer.usage is not None and direct.usage is not None
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0


def test_the_code_after_the_cursor_reaches_the_server(proxy_wide: Server) -> None:
    """llama-server ignores /v1/completions' ``suffix`` (its prompt tokens are the same with or
    without it): through the proxy the suffix's tokens must be among the prompt's."""
    without = _ask(proxy_wide, SHORT)
    with_suffix = _ask(proxy_wide, SHORT, suffix=SUFFIX)
    assert without.usage is not None and with_suffix.usage is not None
    assert with_suffix.usage.prompt_tokens > without.usage.prompt_tokens + 40


def _post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def test_llama_vims_infill_through_the_proxy(proxy_wide: Server, llama_wide: Server) -> None:
    """llama.vim and llama.vscode ask ``/infill`` (``input_prefix``, ``input_suffix``): the proxy
    answers it as the server does (``content``), repaired."""
    body = {"input_prefix": PROMPT, "input_suffix": SUFFIX, "n_predict": 24, "temperature": 0}
    status, direct = _post(f"{llama_wide.url}/infill", body)
    assert status == 200, direct
    status, answer = _post(f"{proxy_wide.url}/infill", body)
    assert status == 200, answer
    assert isinstance(answer["content"], str) and answer["content"].strip()
    assert set(direct) <= set(answer)  # the server's fields, as the plugin reads them


def test_an_early_decision_cancels_the_rows_it_no_longer_needs(
    llama_wide: Server, tmp_path_factory: pytest.TempPathFactory
) -> None:
    before = llama_wide.log().count("cancel task")
    with cctest_proxy(llama_wide, tmp_path_factory.mktemp("proxy-decide"), "--decide-after", "4") as proxy:
        answer = _client(proxy).completions.create(
            model="m", prompt=PROMPT, max_tokens=200, temperature=0, stream=True
        )
        text = "".join(chunk.choices[0].text for chunk in answer if chunk.choices)
    assert text.strip()
    assert llama_wide.log().count("cancel task") > before


def test_at_the_bare_defaults_the_proxy_answers_where_the_server_does(
    llama_bare: Server, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Four slots sharing 1,024 tokens: eleven rows of a long prompt overflow the context and some
    fail. A request the server alone answers with 200 gets 200 through the proxy (the plain row's
    answer at least), whole and streamed."""
    prompt = "".join(f"def scale_{i}(values):\n    return [v * {i} for v in values]\n\n\n" for i in range(40))
    prompt += "def total(values):\n    "
    body = {"model": "m", "prompt": prompt, "max_tokens": 32, "temperature": 0}
    status, direct = _post(f"{llama_bare.url}/v1/completions", body)
    assert status == 200, direct
    with cctest_proxy(llama_bare, tmp_path_factory.mktemp("proxy-bare")) as proxy:
        status, answer = _post(f"{proxy.url}/v1/completions", body)
        assert status == 200, answer
        assert isinstance(answer["choices"][0]["text"], str)
        # a stream the proxy could not answer raises here (openai.APIStatusError)
        chunks = list(_client(proxy).completions.create(**body, stream=True))
        assert any(chunk.choices for chunk in chunks)
