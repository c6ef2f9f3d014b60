"""A completion server as a backend: OpenAI-compatible, Ollama or TGI, over aiohttp.

Each provider is one request builder and one response parser (the shape of llm-ls's
``backend.rs``), chosen by ``Settings.provider``:

* ``openai``: ``POST /v1/completions`` (vLLM, llama.cpp's server, LM Studio, Ollama's OpenAI
  endpoint, ``cctest serve``);
* ``ollama``: ``POST /api/generate`` with ``stream: false`` and ``raw: true`` (no chat template);
* ``tgi``: ``POST /generate`` (HuggingFace text-generation-inference).

Instruction models are asked through ``chat`` at each provider's chat endpoint beside the
completion one: OpenAI ``POST /v1/chat/completions`` (TGI's Messages API too) and Ollama
``POST /api/chat``; ``--model`` may name either endpoint or the server's base URL.

The prompts of one ``complete`` call go out concurrently, at most ``max_concurrency`` at a time
(a batching server such as ``cctest serve`` or vLLM then runs them together). Every prompt has
one deadline, ``timeout`` seconds from the moment ``complete`` is called: it covers the wait for
a free slot under ``max_concurrency``, the retries and any Retry-After wait. 429 and 5xx answers
are retried with exponential backoff, or after the server's Retry-After when it sends one, while
time is left; with ``retry_unavailable`` (a long unattended run: the bench, not an editor, which
wants a down server reported at once) a refused, reset or dropped connection is retried the same
way. A timeout is final: the deadline already covers the retries. A prompt that fails gets a
typed error in its place (BackendUnavailable, BackendTimeout, BackendResponseError); nothing waits
longer than the deadline.

What a server sends is bounded: at most ``max_response_bytes`` on the wire and again once
unpacked (gzip and deflate are unpacked here, chunk by chunk, so a small "zip bomb" stops at the
bound instead of filling memory), and a completion longer than ``CHARS_PER_TOKEN`` characters
per requested token is cut there. An answer that is too large, not JSON, nested too deeply to
parse, or without a completion where the provider puts one becomes a one-line
BackendResponseError. Every answer and error detail a server sends passes through
``cctest.safe_text.model_text`` as it is parsed (a lone surrogate, which JSON allows, becomes U+FFFD).

The API key is read from the environment variable ``api_key_env`` names and sent as a Bearer
token. A URL's ``user:password@`` is sent as HTTP Basic authentication when no API key is set; when
both are given the API key wins and the URL's credentials are not sent (logged once). Neither
appears in ``describe()``, a log line or an error message: URLs are shown through
``cctest.redact.redact_url``. Completions are cut at their natural end by the same rules as the
local backend (``_stop``).

Fill in the middle (the ``fim`` setting, see ``fim.py``): with the code after the cursor, OpenAI
and Ollama requests carry it in the server's own ``suffix`` field (Ollama then formats the
prompt with the model's template, so ``raw`` is left out). A server that refuses the field (an
answer of 400, 404, 422 or 501 to a request carrying it) is asked again with a client-side template
when ``fim`` names one, else without the suffix; this is logged once, and later calls go straight
there. TGI has no suffix field: it is sent the prompt laid out in the named template (``fim``
``auto`` there means no suffix, logged once).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import json
import logging
import os
import random
import re
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
from yarl import URL

from ..config import PROVIDERS, Settings
from ..errors import (
    BackendError,
    BackendResponseError,
    BackendTimeout,
    BackendUnavailable,
    ConfigError,
)
from ..redact import redact_url
from ..safe_text import model_text
from ._slots import MORE_SLOTS, Slots, overflowed
from ._stop import BoundaryStopper
from ._streams import (
    INFILL_STREAM,
    STREAM_FORMATS,
    Row,
    StreamRefused,
    decide_over_streams,
    events,
    hold,
    interrupted,
    is_stream,
    without_stop,
)
from .base import (
    Backend,
    Decide,
    Decided,
    GenerationOptions,
    Message,
    Outcome,
    Unfinished,
    generation_options,
)
from .fim import FimTemplate, named_template

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
SUFFIX_REFUSALS = frozenset({400, 404, 422, 501})  # a server's answer to a field it does not take
MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # per answer, on the wire and again unpacked
FIM_MARKERS = 8  # tokens a fill-in-the-middle row may add to its text (its template's markers)
CHARS_PER_TOKEN = 64  # a completion is cut at max_new_tokens * this many characters
MIN_COMPLETION_CHARS = 4096
_READ_CHUNK = 64 * 1024
STREAM_REFUSALS = frozenset({400, 404, 405, 415, 422, 501})  # a server's answer to "stream": true
MAX_STREAMS = 64  # rows an early decision streams side by side at most (more: whole completions)


# -- providers: one request builder and one response parser each ---------------------------------


def _sampling_seed(opts: GenerationOptions) -> int | None:
    """The seed to send: only when sampling (a greedy answer needs none)."""
    return opts.seed if opts.temperature > 0 else None


def round_options(opts: GenerationOptions, keys: Sequence[str]) -> list[GenerationOptions]:
    """Each request's options: the n-th ask of the same prompt in one call (a task's n-th round)
    samples with ``seed + n``, so rounds differ from each other and a re-run repeats them.

    >>> [o.seed for o in round_options(GenerationOptions(temperature=0.8, seed=5), ["a", "a", "b", "a"])]
    [5, 6, 5, 7]
    """
    if _sampling_seed(opts) is None:
        return [opts] * len(keys)
    seen: dict[str, int] = {}
    out = []
    for key in keys:
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append(replace(opts, seed=(opts.seed or 0) + n))
    return out


def put_seed(body: dict[str, Any], seed: int) -> dict[str, Any]:
    """``body`` carrying ``seed`` where its provider's API takes it, at every temperature (a task's
    round asked with a seed of its own: ``complete_seeded``): TGI's ``parameters.seed``, Ollama's
    ``options.seed``, else OpenAI's ``seed``.

    >>> put_seed({"inputs": "x", "parameters": {}}, 7), put_seed({"prompt": "x"}, 7)
    ({'inputs': 'x', 'parameters': {'seed': 7}}, {'prompt': 'x', 'seed': 7})
    """
    if isinstance(body.get("parameters"), dict):
        body["parameters"]["seed"] = seed
    elif isinstance(body.get("options"), dict):
        body["options"]["seed"] = seed
    else:
        body["seed"] = seed
    return body


def openai_request(prompt: str, opts: GenerationOptions, model_name: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "prompt": prompt,
        "max_tokens": opts.max_new_tokens,
        "temperature": opts.temperature,
        "top_p": opts.top_p,
        "n": 1,
        "stream": False,
    }
    if model_name:
        body["model"] = model_name
    if opts.stop:
        body["stop"] = list(opts.stop)
    if _sampling_seed(opts) is not None:
        body["seed"] = opts.seed
    return body


def openai_response(data: Any) -> str:
    text = data["choices"][0]["text"]
    if not isinstance(text, str):
        raise TypeError("choices[0].text is not a string")
    return text


def ollama_request(prompt: str, opts: GenerationOptions, model_name: str | None) -> dict[str, Any]:
    options: dict[str, Any] = {
        "num_predict": opts.max_new_tokens,
        "temperature": opts.temperature,
        "top_p": opts.top_p,
    }
    if opts.stop:
        options["stop"] = list(opts.stop)
    if _sampling_seed(opts) is not None:
        options["seed"] = opts.seed
    return {"model": model_name, "prompt": prompt, "stream": False, "raw": True, "options": options}


def ollama_response(data: Any) -> str:
    text = data["response"]
    if not isinstance(text, str):
        raise TypeError("response is not a string")
    return text


def tgi_request(prompt: str, opts: GenerationOptions, model_name: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "max_new_tokens": opts.max_new_tokens,
        "return_full_text": False,
        "details": False,
    }
    if opts.temperature > 0:  # TGI rejects temperature 0 and top_p 1: leave them out when greedy
        params.update(do_sample=True, temperature=opts.temperature)
        if opts.top_p < 1:
            params["top_p"] = opts.top_p
        if opts.seed is not None:
            params["seed"] = opts.seed
    else:
        params["do_sample"] = False
    if opts.stop:
        params["stop"] = list(opts.stop)
    return {"inputs": prompt, "parameters": params}


def tgi_response(data: Any) -> str:
    if isinstance(data, list):  # some TGI versions answer a one-element list
        data = data[0]
    text = data["generated_text"]
    if not isinstance(text, str):
        raise TypeError("generated_text is not a string")
    return text


INFILL = "/infill (llama.cpp's server)"  # the fim mode that asks llama.cpp's server's /infill


def infill_request(prefix: str, suffix: str, opts: GenerationOptions) -> dict[str, Any]:
    """A fill-in-the-middle request for llama.cpp's server's ``/infill``, which lays the code out
    in the model's own FIM tokens (its ``/v1/completions`` takes a ``suffix`` field and ignores it)."""
    body: dict[str, Any] = {
        "input_prefix": prefix,
        "input_suffix": suffix,
        "n_predict": opts.max_new_tokens,
        "temperature": opts.temperature,
        "top_p": opts.top_p,
        "stream": False,
    }
    if opts.stop:
        body["stop"] = list(opts.stop)
    if _sampling_seed(opts) is not None:
        body["seed"] = opts.seed
    return body


def infill_response(data: Any) -> str:
    text = data["content"]
    if not isinstance(text, str):
        raise TypeError("content is not a string")
    return text


@dataclass(frozen=True)
class Provider:
    name: str
    path: str  # the endpoint, appended to a base URL that does not already end with it
    build: Callable[[str, GenerationOptions, str | None], dict[str, Any]]
    parse: Callable[[Any], str]
    expects: str  # what the parser looks for, for error messages
    suffix: Callable[[dict[str, Any], str], None] | None = None  # puts the suffix in a body


def _openai_suffix(body: dict[str, Any], suffix: str) -> None:
    body["suffix"] = suffix


def _ollama_suffix(body: dict[str, Any], suffix: str) -> None:
    body["suffix"] = suffix
    body.pop("raw", None)  # Ollama fills in the middle through the model's own template


PROVIDER_TABLE: dict[str, Provider] = {
    "openai": Provider(
        "openai", "/v1/completions", openai_request, openai_response, "choices[0].text", _openai_suffix
    ),
    "ollama": Provider(
        "ollama", "/api/generate", ollama_request, ollama_response, "response", _ollama_suffix
    ),
    "tgi": Provider("tgi", "/generate", tgi_request, tgi_response, "generated_text"),
}


# -- chat (instruction models): one request builder and one response parser per provider ----------


def openai_chat_request(
    messages: Sequence[Message], opts: GenerationOptions, model_name: str | None
) -> dict[str, Any]:
    body = openai_request("", opts, model_name)
    del body["prompt"]
    body["messages"] = [dict(m) for m in messages]
    return body


def openai_chat_response(data: Any) -> str:
    text = data["choices"][0]["message"]["content"]
    if text is None:  # an assistant message with no content: the model said nothing
        return ""
    if not isinstance(text, str):
        raise TypeError("choices[0].message.content is not a string")
    return text


def ollama_chat_request(
    messages: Sequence[Message], opts: GenerationOptions, model_name: str | None
) -> dict[str, Any]:
    body = ollama_request("", opts, model_name)
    del body["prompt"], body["raw"]
    body["messages"] = [dict(m) for m in messages]
    return body


def ollama_chat_response(data: Any) -> str:
    text = data["message"]["content"]
    if not isinstance(text, str):
        raise TypeError("message.content is not a string")
    return text


@dataclass(frozen=True)
class ChatProvider:
    path: str  # the chat endpoint, in place of the completion endpoint
    build: Callable[[Sequence[Message], GenerationOptions, str | None], dict[str, Any]]
    parse: Callable[[Any], str]
    expects: str


_OPENAI_CHAT = ChatProvider(
    "/v1/chat/completions", openai_chat_request, openai_chat_response, "choices[0].message.content"
)
# TGI serves chat through its OpenAI-compatible Messages API
CHAT_PROVIDER_TABLE: dict[str, ChatProvider] = {
    "openai": _OPENAI_CHAT,
    "ollama": ChatProvider("/api/chat", ollama_chat_request, ollama_chat_response, "message.content"),
    "tgi": _OPENAI_CHAT,
}


def chat_url(completion_url: URL, provider: str) -> URL:
    """The chat endpoint beside a provider's completion endpoint.

    >>> str(chat_url(URL("http://localhost:8000/v1/completions"), "openai"))
    'http://localhost:8000/v1/chat/completions'
    >>> str(chat_url(URL("http://localhost:11434/api/generate"), "ollama"))
    'http://localhost:11434/api/chat'
    >>> str(chat_url(URL("http://localhost:8080/generate"), "tgi"))
    'http://localhost:8080/v1/chat/completions'
    """
    path = completion_url.path.rstrip("/")
    base = (
        path[: -len(PROVIDER_TABLE[provider].path)] if path.endswith(PROVIDER_TABLE[provider].path) else path
    )
    return completion_url.with_path(base + CHAT_PROVIDER_TABLE[provider].path, keep_query=True)


def endpoint_url(base: str, provider: str) -> URL:
    """The URL to POST to: ``base`` if it already names the endpoint, else base + the endpoint.

    >>> str(endpoint_url("http://localhost:8000", "openai"))
    'http://localhost:8000/v1/completions'
    >>> str(endpoint_url("http://localhost:8000/v1", "openai"))
    'http://localhost:8000/v1/completions'
    >>> str(endpoint_url("http://localhost:11434/api/generate", "ollama"))
    'http://localhost:11434/api/generate'
    """
    if provider not in PROVIDER_TABLE:
        raise ConfigError(f"unknown provider '{provider}'; choose {', '.join(PROVIDERS)}.")
    try:
        url = URL(base.strip())
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"'{redact_url(base)}' is not a URL; give the server's address, e.g. http://127.0.0.1:8000."
        ) from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"'{redact_url(str(url))}' is not an http(s) URL; give the server's address, "
            "e.g. http://127.0.0.1:8000."
        )
    endpoint = PROVIDER_TABLE[provider].path
    path = url.path.rstrip("/")
    chat = CHAT_PROVIDER_TABLE[provider].path
    if path.endswith(chat):  # the chat endpoint given: its server's completion endpoint
        path = path[: -len(chat)]
        url = url.with_path(path or "/", keep_query=True)
    if path.endswith(endpoint):
        return url
    if provider == "openai" and path.endswith("/v1"):
        return url.with_path(path + "/completions", keep_query=True)
    return url.with_path(path + endpoint, keep_query=True)


# -- the backend ---------------------------------------------------------------------------------


class HTTPBackend(Backend):
    """Completions from a server speaking one of the providers' APIs."""

    name = "http"

    def __init__(
        self,
        url: str,
        *,
        provider: str = "openai",
        model_name: str | None = None,
        api_key_env: str = "CCTEST_API_KEY",
        options: GenerationOptions | None = None,
        timeout: float = 30.0,
        max_concurrency: int = 8,
        max_retries: int = 3,
        retry_unavailable: bool = False,
        boundaries: bool = True,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        fim: str = "auto",
    ) -> None:
        full = endpoint_url(url, provider)
        # the URL's user:password is kept apart and sent as a header of ours (or not at all, when
        # an API key is set), never left to aiohttp, which refuses it next to an Authorization header
        self._url_auth = (
            "Basic " + base64.b64encode(f"{full.user or ''}:{full.password or ''}".encode()).decode()
            if full.user or full.password
            else None
        )
        self.url = full.with_user(None)
        path = self.url.path.rstrip("/")
        for tail in (PROVIDER_TABLE[provider].path, "/v1"):
            path = path[: -len(tail)] if path.endswith(tail) else path
        self._base_url = self.url.with_path(path or "/").with_query(None)  # the server's, for /props
        self._infill_url = self._base_url.with_path(path + "/infill")
        self.provider = PROVIDER_TABLE[provider]
        if provider == "ollama" and not model_name:
            raise ConfigError("the ollama provider needs the model's name; pass --model-name NAME.")
        self.model_name = model_name
        self.api_key_env = api_key_env
        self.options = options or GenerationOptions()
        if timeout <= 0:
            raise ConfigError("the timeout must be a positive number of seconds.")
        self.timeout = float(timeout)
        self.max_concurrency = max(1, int(max_concurrency))
        self.max_retries = max(0, int(max_retries))
        self.retry_unavailable = retry_unavailable
        self.boundaries = boundaries
        self.max_response_bytes = max(1024, int(max_response_bytes))
        self.fim = fim
        self.template: FimTemplate | None = named_template(fim)  # the client-side one, if named
        self._suffix_refused = provider == "tgi"  # TGI takes no suffix field
        self._fim_note_logged = False
        self.max_completion_chars = max(MIN_COMPLETION_CHARS, CHARS_PER_TOKEN * self.options.max_new_tokens)
        self._shown_url = redact_url(str(self.url))
        self._auth_note_logged = False
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._inflight = 0  # complete() calls running on the shared session
        self._requesting = 0  # engine requests under way (``requesting``)
        self._stream_refused = False  # the server answers whole completions only
        self._window_chars: int | None = None  # a row's prompt at most, once a refusal told the context
        self._slots = Slots()  # the server's rows side by side, where it says (``_fit_slots``)
        self._known = False  # the server was asked what it is (``_know_server``), once
        self._infill = False  # rows with a suffix go to llama.cpp's /infill (``_check_suffix``)
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings, *, retry_unavailable: bool = False) -> HTTPBackend:

        if not settings.model:
            raise ConfigError("the http backend needs the server's URL; pass --model URL.")
        return cls(
            settings.model,
            provider=settings.provider,
            model_name=settings.model_name,
            api_key_env=settings.api_key_env,
            options=generation_options(settings),
            timeout=settings.timeout,
            max_concurrency=settings.max_concurrency,
            retry_unavailable=retry_unavailable,
            fim=settings.fim,
        )

    def describe(self) -> str:
        named = f" model {self.model_name}" if self.model_name else ""
        return f"http {self.provider.name} {self._shown_url}{named}"

    async def aclose(self) -> None:
        """Close the connection pool once the calls in flight on it have finished (each ends
        within its timeout). A call made after this gets a session of its own, closed with it,
        so a caller that still holds the backend (a request racing a settings change) neither
        fails nor leaves a session open."""
        self._closed = True
        while self._inflight and self._session_loop is asyncio.get_running_loop():
            await asyncio.sleep(0.02)
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    def _headers(self) -> dict[str, str]:
        # only encodings unpacked here, under the size bound (the session does not unpack)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": "gzip, deflate",
        }
        key = os.environ.get(self.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
            if self._url_auth is not None and not self._auth_note_logged:
                self._auth_note_logged = True
                log.warning(
                    "%s: the API key in $%s is sent; the user:password in the URL is not",
                    self._shown_url,
                    self.api_key_env,
                )
        elif self._url_auth is not None:
            headers["Authorization"] = self._url_auth
        return headers

    def _get_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            # a session belongs to one event loop; a caller on a new loop gets a new session
            self._session = self._new_session()
            self._session_loop = loop
        return self._session

    def _new_session(self) -> aiohttp.ClientSession:
        # auto_decompress off: _read unpacks the body itself, bounded
        # an early decision streams every row side by side (``complete_deciding``); each call
        # bounds its own requests by ``max_concurrency``
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max(self.max_concurrency, MAX_STREAMS)),
            auto_decompress=False,
        )

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        """One completion per prompt; with ``suffixes``, filled in between (module docstring).
        Each prompt is a request of its own, so several prompts' rows need no grouping."""
        if not prompts:
            return []
        # the user's deadline starts now, before any prompt waits for a free slot
        deadline = asyncio.get_running_loop().time() + self.timeout
        if self.fim == "off" or suffixes is None or not any(s.strip() for s in suffixes):
            suffixes = None
        return await self._complete(prompts, suffixes, None, deadline)

    async def complete_seeded(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Outcome]:
        """``complete``, each prompt a request of its own carrying its seed at every temperature
        (``put_seed``): a task's rounds, which no answer cache or server-side batching may merge
        (``SeedsEachRequest``)."""
        if not prompts:
            return []
        deadline = asyncio.get_running_loop().time() + self.timeout
        return await self._complete(prompts, None, list(seeds), deadline)

    async def _complete(
        self,
        prompts: Sequence[str],
        suffixes: Sequence[str] | None,
        seeds: Sequence[int] | None,
        deadline: float,
    ) -> list[Outcome]:
        if self._closed:
            async with self._new_session() as own:
                return await self._complete_all(own, prompts, suffixes, deadline, seeds)
        session = self._get_session()
        self._inflight += 1
        try:
            return await self._complete_all(session, prompts, suffixes, deadline, seeds)
        finally:
            self._inflight -= 1

    @contextlib.contextmanager
    def requesting(self) -> Iterator[None]:
        """Counts the engine requests under way: a settling (``_Settle``) waits for none."""
        self._requesting += 1
        try:
            yield
        finally:
            self._requesting -= 1

    def busy(self, own: int = 0) -> bool:
        """Whether an engine request, or a call other than ``own`` of them, is under way."""
        return self._requesting > 0 or self._inflight > own

    async def complete_deciding(
        self,
        prompts: Sequence[str],
        *,
        suffixes: Sequence[str] | None = None,
        after: int,
        decide: Decide,
    ) -> Decided:
        """``complete``, deciding early over streams (``_streams``): every row is asked as a
        stream of its own, all side by side; once each has ``after`` tokens (events) or has
        ended, ``decide`` picks the row to finish, the others' streams are closed (the server
        stops writing them) and the chosen one is read to its end. A server that does not stream
        gets whole completions from then on (logged once)."""
        if self._stream_refused or after <= 0 or not 1 < len(prompts) <= MAX_STREAMS:
            return Decided(await self.complete(prompts, suffixes=suffixes), None)
        deadline = asyncio.get_running_loop().time() + self.timeout
        if self.fim == "off" or suffixes is None or not any(s.strip() for s in suffixes):
            suffixes = None
        own = self._closed
        session = self._new_session() if own else self._get_session()
        heads = (
            [t if t.strip() else None for t in suffixes] if suffixes is not None else [None] * len(prompts)
        )
        await self._know_server(session, prompts, heads, deadline)
        if await self._fit_slots(session, len(prompts)):  # fewer slots than rows: whole, slots at a time
            if own:
                await session.close()
            return Decided(await self.complete(prompts, suffixes=suffixes), None)
        self._inflight += 1
        try:
            tails: Sequence[str | None] = (
                [t if t.strip() else None for t in suffixes]
                if suffixes is not None
                else [None] * len(prompts)
            )
            opts = round_options(self.options, [f"{x}\0{t}" for x, t in zip(prompts, tails, strict=True)])
            sent = [self._windowed(x, t) for x, t in zip(prompts, tails, strict=True)]
            bodies = [self._body(*xt, o) for xt, o in zip(sent, opts, strict=True)]
            rows = [
                Row(
                    BoundaryStopper(x, self.options.stop, boundaries=self.boundaries),
                    self.max_completion_chars,
                )
                for x in prompts
            ]

            async def pump(i: int, row: Row) -> None:
                await self._pump(session, bodies[i], row, after, deadline)

            declined: list[bool] = []

            def deciding(partial: list[Outcome]) -> int | None:
                # rows refused or failed for the context are asked again whole (below): nothing
                # is decided on the others' first tokens
                if any(isinstance(o, BackendError) and overflowed(str(o)) for o in partial):
                    declined.append(True)
                    return None
                return decide(partial)

            got = await decide_over_streams(rows, pump, after, deciding, deadline, self._timeout_error)
        finally:
            self._inflight -= 1
            if own:
                await session.close()
        if got.refused is not None:
            whole = await self.complete(prompts, suffixes=suffixes)
            # taken for a server that does not stream only when the same rows are answered whole
            # (a refused suffix field is complete's to learn)
            if not any("suffix" in b for b in bodies) and any(isinstance(o, str) for o in whole):
                self._stream_refused = True
                log.warning(
                    "%s refused a streamed request (%s); repair requests get whole completions",
                    self._shown_url,
                    got.refused,
                )
            return Decided(whole, None)
        exceeded = [(o, sent[i][0]) for i, o in enumerate(got.outcomes) if isinstance(o, ContextExceeded)]
        overflowing = [
            o
            for o in got.outcomes
            if isinstance(o, BackendError) and not isinstance(o, ContextExceeded) and overflowed(str(o))
        ]
        for o in got.outcomes:
            if isinstance(o, BackendError):
                self._slots.noted_failure(str(o))
        if exceeded:
            self._learn_window(exceeded)  # asked again (below), each row cut to fit
        if overflowing:  # the rows overflowed the server's context: as many at a time as fitted
            self._slots.measured(len(prompts) - len(overflowing))
            async with self._new_session() as probe:
                await self._fit_slots(probe, len(prompts))
        if declined or (got.chosen is None and (exceeded or overflowing)):
            return Decided(await self.complete(prompts, suffixes=suffixes), None)
        if got.whole and not self._stream_refused:
            self._stream_refused = True
            log.warning(
                "%s answers whole completions to streamed requests; repair requests get whole completions",
                self._shown_url,
            )
        rest = _Settle(self, prompts, suffixes, got.outcomes, got.cut) if got.cut else None
        return Decided(got.outcomes, got.chosen, got.cut, rest)

    async def _pump(
        self, session: aiohttp.ClientSession, body: dict[str, Any], row: Row, after: int, deadline: float
    ) -> None:
        """Row ``row``'s stream, read into it until it ends (``Row.add``); cancelled, it closes the
        connection, which is what makes the server stop writing the row."""
        url, _, parse, expects = self._job(body)
        fmt = INFILL_STREAM if url == self._infill_url else STREAM_FORMATS[self.provider.name]
        headers = self._headers() | {
            "Accept": "text/event-stream, application/x-ndjson, application/json",
            "Accept-Encoding": "identity",  # events are read as they come, never unpacked
        }
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            async with session.post(
                fmt.url(url),
                json=fmt.body(without_stop(body)),
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=max(remaining, 0.001)),
            ) as resp:
                try:
                    await self._read_stream(resp, fmt, row, after, parse, expects)
                    await hold(row)
                except asyncio.CancelledError:
                    resp.close()  # the connection, not kept for reuse: the server sees it closed
                    raise
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            row.end(self._timeout_error())
        except BackendError as exc:
            row.end(exc)
        except aiohttp.ClientConnectorError as exc:
            row.end(BackendUnavailable(f"cannot connect to {self._shown_url} ({type(exc).__name__})."))
        except (aiohttp.ClientError, ValueError) as exc:
            row.end(BackendUnavailable(f"the stream from {self._shown_url} broke ({type(exc).__name__})."))
        row.end()

    async def _read_stream(
        self,
        resp: aiohttp.ClientResponse,
        fmt: Any,
        row: Row,
        after: int,
        parse: Callable[[Any], str],
        expects: str,
    ) -> None:
        if resp.status != 200:
            payload = await self._read(resp)
            error = self._status_error(resp.status, resp.reason or "", payload)
            told = context_refusal(resp.status, payload)
            if told is not None:
                row.end(ContextExceeded(str(error), *told))
            else:
                row.end(StreamRefused(str(error)) if resp.status in STREAM_REFUSALS else error)
            return
        if not is_stream(resp.headers.get(aiohttp.hdrs.CONTENT_TYPE, ""), fmt.framing):
            text = self._parse(await self._read(resp), parse, expects)
            row.whole = True
            row.add(text, "stop", after)
            return
        async for data in events(resp, fmt.framing, self.max_response_bytes):
            self._slots.notice(data)
            try:
                piece, finish = fmt.piece(data)
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                raise BackendResponseError(
                    f"{self._shown_url} sent a stream event without a completion."
                ) from exc
            if row.add(piece, finish, after):
                return
        raise interrupted(self._shown_url)

    @property
    def fim_mode(self) -> str:
        """How the code after the cursor reaches the server: ``suffix`` (the server's field),
        a client-side template's description (a named one is used up front), ``INFILL`` (a
        server that ignores the field and has llama.cpp's /infill), or ``none``."""
        if self.fim == "off":
            return "none"
        if self.template is not None:  # named: the user's layout, from the first request on
            return self.template.describe()
        if self._infill:
            return INFILL
        if not self._suffix_refused and self.provider.suffix is not None:
            return "suffix"
        return "none"

    def fim_used(self) -> str | None:
        mode = self.fim_mode
        return {"none": None, "suffix": "suffix field"}.get(mode, mode)

    @property
    def reads_suffix_first(self) -> bool:
        """Only a client-side template's order is known; a server's suffix field may lay the code
        out either way."""
        mode = self.fim_mode
        return mode not in ("none", "suffix") and self.template is not None and self.template.order == "spm"

    def suffix_shown(self, prompt: str, suffix: str) -> str:
        """All of it: the server cuts to its context, if it does, out of sight."""
        return suffix

    def _body(self, prompt: str, suffix: str | None, opts: GenerationOptions) -> dict[str, Any]:
        """A completion request for ``prompt`` with the code after the cursor as ``fim_mode`` says."""
        p = self.provider
        mode = self.fim_mode if suffix is not None else "none"
        if mode == "suffix" and p.suffix is not None and suffix is not None:
            body = p.build(prompt, opts, self.model_name)
            p.suffix(body, suffix)
            return body
        if mode == INFILL and suffix is not None:
            return infill_request(prompt, suffix, opts)
        if mode != "none" and self.template is not None and suffix is not None:
            return p.build(self.template.prompt(prompt, suffix), opts, self.model_name)
        if suffix is not None:
            self._note_fim("takes no suffix and no FIM template is set (the fim setting)")
        return p.build(prompt, opts, self.model_name)

    def _note_fim(self, why: str) -> None:
        if not self._fim_note_logged:
            self._fim_note_logged = True
            log.warning(
                "%s %s; completions are asked without the code after the cursor", self._shown_url, why
            )

    async def chat(self, conversations: Sequence[Sequence[Message]]) -> list[Outcome]:
        """One answer per conversation from the provider's chat endpoint (OpenAI
        ``/v1/chat/completions``, Ollama ``/api/chat``; TGI's OpenAI-compatible one), with the
        same deadline, retries, bounds and errors as ``complete``. Answers are not cut at code
        boundaries (they hold prose and fenced code), only at the runaway-length bound."""
        return await self._chat(conversations, None)

    async def chat_seeded(
        self, conversations: Sequence[Sequence[Message]], seeds: Sequence[int]
    ) -> list[Outcome]:
        """``chat``, each conversation a request of its own carrying its seed at every temperature
        (``complete_seeded``)."""
        return await self._chat(conversations, list(seeds))

    async def _chat(
        self, conversations: Sequence[Sequence[Message]], seeds: Sequence[int] | None
    ) -> list[Outcome]:
        if not conversations:
            return []
        deadline = asyncio.get_running_loop().time() + self.timeout
        chat = CHAT_PROVIDER_TABLE[self.provider.name]
        url = chat_url(self.url, self.provider.name)
        keys = [json.dumps([dict(m) for m in c], sort_keys=True) for c in conversations]
        jobs = [
            (url, chat.build(c, o, self.model_name), chat.parse, chat.expects)
            for c, o in zip(conversations, round_options(self.options, keys), strict=True)
        ]
        if seeds is not None:
            jobs = [
                (u, put_seed(body, seed), p, e) for (u, body, p, e), seed in zip(jobs, seeds, strict=True)
            ]
        if self._closed:
            async with self._new_session() as own:
                return await self._send_all(own, jobs, deadline, [None] * len(jobs))
        session = self._get_session()
        self._inflight += 1
        try:
            return await self._send_all(session, jobs, deadline, [None] * len(jobs))
        finally:
            self._inflight -= 1

    async def _complete_all(
        self,
        session: aiohttp.ClientSession,
        prompts: Sequence[str],
        suffixes: Sequence[str] | None,
        deadline: float,
        seeds: Sequence[int] | None = None,
    ) -> list[Outcome]:
        # a row without code after its cursor is asked without a suffix, as it is alone
        tails: Sequence[str | None] = (
            [t if t.strip() else None for t in suffixes] if suffixes is not None else [None] * len(prompts)
        )
        await self._know_server(session, prompts, tails, deadline)
        await self._fit_slots(session, len(prompts))
        asked_suffix = suffixes is not None and self.fim_mode == "suffix"
        opts = round_options(self.options, [f"{x}\0{s}" for x, s in zip(prompts, tails, strict=True)])
        if seeds is not None:
            opts = [replace(o, seed=seed) for o, seed in zip(opts, seeds, strict=True)]

        sent = [self._windowed(x, t) for x, t in zip(prompts, tails, strict=True)]

        def body(i: int) -> dict[str, Any]:
            made = self._body(*sent[i], opts[i])
            return made if seeds is None else put_seed(made, seeds[i])

        jobs = [self._job(body(i)) for i in range(len(prompts))]
        out = await self._send_all(session, jobs, deadline, list(prompts))
        refused = [i for i, o in enumerate(out) if isinstance(o, _SuffixRefused)]
        if asked_suffix and refused:
            # asked again without the field; the server is taken to refuse it only when that is
            # answered (an error that was not about the field leaves the field in use)
            self._suffix_refused = True
            logged, self._fim_note_logged = self._fim_note_logged, True  # said below, if it holds
            again = [self._job(body(i)) for i in refused]
            self._fim_note_logged = logged
            answers = await self._send_all(session, again, deadline, [prompts[i] for i in refused])
            if any(isinstance(o, str) for o in answers):
                if self.template is None:
                    self._note_fim("refused the suffix field")
                else:
                    log.warning(
                        "%s refused the suffix field; the FIM template %s is used instead",
                        self._shown_url,
                        self.template.describe(),
                    )
            else:
                self._suffix_refused = False
            for i, o in zip(refused, answers, strict=True):
                out[i] = o
        exceeded = [i for i, o in enumerate(out) if isinstance(o, ContextExceeded)]
        if exceeded and self._learn_window([(out[i], sent[i][0]) for i in exceeded]):
            for i in exceeded:
                sent[i] = self._windowed(prompts[i], tails[i])
            again = [self._job(body(i)) for i in exceeded]
            answers = await self._send_all(session, again, deadline, [prompts[i] for i in exceeded])
            for i, o in zip(exceeded, answers, strict=True):
                out[i] = o
        failed = [
            i
            for i, o in enumerate(out)
            if isinstance(o, BackendError) and not isinstance(o, ContextExceeded) and overflowed(str(o))
        ]
        if failed:
            self._slots.measured(len(prompts) - len(failed))
        if failed and await self._fit_slots(session, len(prompts)):  # they overflowed its slots
            again = [self._job(body(i)) for i in failed]
            answers = await self._send_all(session, again, deadline, [prompts[i] for i in failed])
            for i, o in zip(failed, answers, strict=True):
                out[i] = o
        return out

    async def _fit_slots(self, session: aiohttp.ClientSession, rows: int) -> bool:
        """Asks the server for its slots when that is due (``_slots``); True when it runs fewer
        rows side by side than ``rows`` (its slots, or the rows that fitted its context last):
        they then go that many at a time (``_send_all``), whole, and one line says so and how to
        give the server more."""
        if self._slots.due():
            await self._slots.ask(session, self._base_url, self._headers())
        at_once = self._slots.at_once
        if at_once is None or at_once >= rows:
            return False
        if self._slots.tell(rows):
            log.warning(
                "%s runs %d rows side by side; a repair's %d rows go %d at a time, each whole; %s",
                self._shown_url,
                at_once,
                rows,
                at_once,
                MORE_SLOTS,
            )
        return True

    def _job(self, body: dict[str, Any]) -> tuple[URL, dict[str, Any], Callable[[Any], str], str]:
        """Where a row's body goes and how its answer is read (``/infill``'s own shape)."""
        if "input_prefix" in body:
            return self._infill_url, body, infill_response, "content"
        return self.url, body, self.provider.parse, self.provider.expects

    async def _know_server(
        self,
        session: aiohttp.ClientSession,
        prompts: Sequence[str],
        tails: Sequence[str | None],
        deadline: float,
    ) -> None:
        """Once, before the first completions: whether the server is llama.cpp's (``/props``: its
        slots and context), and if so whether it honours the suffix field (``_check_suffix``)."""
        if self._known:
            return
        self._known = True
        left = deadline - asyncio.get_running_loop().time()
        await self._slots.ask(session, self._base_url, self._headers(), min(2.0, left / 4))
        if self._slots.llama and self._slots.n_ctx and prompts:
            await self._window_from_props(session, prompts, tails, deadline)
        row = next((i for i, t in enumerate(tails) if t is not None), None)
        if self._slots.llama and row is not None and self.fim_mode == "suffix":
            await self._check_suffix(session, prompts[row], tails[row] or "", deadline)

    async def _window_from_props(
        self,
        session: aiohttp.ClientSession,
        prompts: Sequence[str],
        tails: Sequence[str | None],
        deadline: float,
    ) -> None:
        """Before the first rows go: where the server told each row's context (``/props``), the
        longest row's tokens counted by its ``/tokenize``; a row that would not fit with
        ``max_new_tokens`` sets the window now (one line says so), so no row is refused first."""
        n_ctx = self._slots.n_ctx
        longest = max(range(len(prompts)), key=lambda i: len(prompts[i]) + len(tails[i] or ""))
        text = prompts[longest] + (tails[longest] or "")
        if not text or n_ctx is None:
            return
        url = self._base_url.with_path(self._base_url.path.rstrip("/") + "/tokenize")
        try:
            left = deadline - asyncio.get_running_loop().time()
            async with asyncio.timeout(max(0.001, min(2.0, left / 4))):
                async with session.post(url, json={"content": text}, headers=self._headers()) as resp:
                    raw = await resp.content.read(MAX_RESPONSE_BYTES) if resp.status == 200 else b"null"
            data = json.loads(raw)
        except (aiohttp.ClientError, TimeoutError, ValueError, RecursionError):
            return
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list) or not tokens:
            return
        # (a few tokens more for the fill-in-the-middle markers a row may get)
        if len(tokens) + self.options.max_new_tokens + FIM_MARKERS <= n_ctx:
            return
        budget = n_ctx - self.options.max_new_tokens - FIM_MARKERS
        if budget > 0:
            self._set_window(n_ctx, int(len(text) / len(tokens) * budget * 0.9))

    async def _check_suffix(
        self, session: aiohttp.ClientSession, prompt: str, suffix: str, deadline: float
    ) -> None:
        """Whether the server reads the suffix field: the prompt tokens it reports for one token
        of ``prompt`` with the field and without it. The same count means it ignores the field
        (llama.cpp's server's /v1/completions does): rows with a suffix then go to its /infill,
        checked the same way; where that is refused too, they go without (one line says so)."""
        one = replace(self.options, max_new_tokens=1, stop=())
        for _ in range(2):  # once more, cut to fit, when the prompt was too long for the server
            x, s = self._windowed(prompt, suffix)
            plain = self.provider.build(x, one, self.model_name)
            with_field = {**plain, "suffix": s}
            infill = infill_request(x, s or "", one)
            got = await asyncio.gather(
                *(self._prompt_tokens(session, u, b, deadline) for u, b in
                  ((self.url, plain), (self.url, with_field), (self._infill_url, infill)))
            )  # fmt: skip
            refused = [(c, x) for c in got if isinstance(c, ContextExceeded)]
            if not refused or not self._learn_window(refused):
                break
        counts = [c if isinstance(c, int) else None for c in got]
        if counts[0] is None or counts[1] is None or counts[1] > counts[0]:
            return  # read, or not told
        if counts[2] is not None and counts[2] > counts[0]:
            self._infill = True
            log.warning(
                "%s ignores the suffix field (the prompt tokens it reports are the same without it); "
                "rows with code after the cursor go to its /infill",
                self._shown_url,
            )
            return
        self._suffix_refused = True
        self._note_fim("ignores the suffix field and fills in the middle nowhere else")

    async def _prompt_tokens(
        self, session: aiohttp.ClientSession, url: URL, body: dict[str, Any], deadline: float
    ) -> int | ContextExceeded | None:
        """The prompt tokens a server reports for one request (OpenAI's ``usage.prompt_tokens``,
        llama.cpp's ``tokens_evaluated``); its refusal of a prompt too long for it; None when it
        fails otherwise or does not say."""
        try:
            status, reason, _, payload = await self._post(
                session, body, deadline - asyncio.get_running_loop().time(), url
            )
            told = context_refusal(status, payload)
            if told is not None:
                return ContextExceeded(str(self._status_error(status, reason, payload)), *told)
            data = json.loads(payload) if status == 200 else None
        except (BackendError, TimeoutError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        usage = data.get("usage")
        count = usage.get("prompt_tokens") if isinstance(usage, dict) else data.get("tokens_evaluated")
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    def _windowed(self, prompt: str, suffix: str | None) -> tuple[str, str | None]:
        """A row as it is sent: cut around the cursor to the context the server gives a row, once
        that is known (``_learn_window``)."""
        if self._window_chars is None:
            return prompt, suffix
        return window(prompt, suffix, self._window_chars)

    def _learn_window(self, refusals: Sequence[tuple[Outcome, str]]) -> bool:
        """From context-length refusals (each with the prompt it refused): the characters a row's
        prompt may have, so that it and ``max_new_tokens`` fit the server's context for a row
        (its characters per token measured on the refused prompt); one line says so. False when
        the refusals do not tell, or the window is already that small."""
        best: int | None = None
        for exc, prompt in refusals:
            if not isinstance(exc, ContextExceeded) or not exc.asked or not exc.limit:
                continue
            budget = exc.limit - self.options.max_new_tokens
            if budget <= 0:
                continue
            chars = int(len(prompt) / exc.asked * budget * 0.9)
            best = chars if best is None else min(best, chars)
            limit = exc.limit
        if best is None or best < 1 or (self._window_chars is not None and best >= self._window_chars):
            return False
        self._set_window(limit, best)
        return True

    def _set_window(self, limit: int, chars: int) -> None:
        """Rows cut to ``chars`` characters around the cursor from now on, for a server that gives
        each row ``limit`` tokens of context; said once."""
        if self._window_chars is None:
            log.warning(
                "%s gives each row %d tokens of context; prompts are cut to about %d characters "
                "around the cursor to fit it with %d new tokens",
                self._shown_url,
                limit,
                chars,
                self.options.max_new_tokens,
            )
        self._window_chars = chars

    async def _send_all(
        self,
        session: aiohttp.ClientSession,
        jobs: Sequence[tuple[URL, dict[str, Any], Callable[[Any], str], str]],
        deadline: float,
        prompts: Sequence[str | None],
    ) -> list[Outcome]:
        """Each job's answer (or error), at most ``max_concurrency`` at a time; an answer to a
        completion ``prompt`` is trimmed at its natural end (None: a chat answer, kept whole)."""
        gate = asyncio.Semaphore(min(self.max_concurrency, self._slots.at_once or self.max_concurrency))

        async def one(
            job: tuple[URL, dict[str, Any], Callable[[Any], str], str], prompt: str | None
        ) -> Outcome:
            try:
                async with asyncio.timeout_at(deadline):
                    async with gate:
                        text = await self._request(session, *job, deadline)
            except TimeoutError:  # aiohttp's own timeouts derive from it too
                return self._timeout_error()
            except BackendError as exc:
                self._slots.noted_failure(str(exc))
                return exc
            text = text[: self.max_completion_chars]  # a runaway answer is cut before it is trimmed
            if prompt is None:
                return text
            return BoundaryStopper(prompt, self.options.stop, boundaries=self.boundaries).trim(text)

        return list(await asyncio.gather(*(one(j, p) for j, p in zip(jobs, prompts, strict=True))))

    async def _request(
        self,
        session: aiohttp.ClientSession,
        url: URL,
        body: dict[str, Any],
        parse: Callable[[Any], str],
        expects: str,
        deadline: float,
    ) -> str:
        """One request's answer, retried while ``deadline`` allows (the caller enforces it)."""
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise self._timeout_error()
            retry_after: float | None = None
            try:
                status, reason, retry_after, payload = await self._post(session, body, remaining, url)
            except _ConnectionFailed as exc:
                if not self.retry_unavailable:
                    raise
                error: BackendError = exc
                what = "refused or dropped the connection"
            else:
                if status == 200:
                    return self._parse(payload, parse, expects)
                error = self._status_error(status, reason, payload)
                told = context_refusal(status, payload)
                if told is not None:
                    raise ContextExceeded(str(error), *told)
                if status in SUFFIX_REFUSALS and "suffix" in body:
                    raise _SuffixRefused(str(error))
                if status not in RETRY_STATUSES or overflowed(str(error)):
                    raise error  # rows that overflow a server's context are asked again as they fit
                what = f"answered {status}"
            if attempt >= self.max_retries:
                raise error
            delay = (
                retry_after
                if retry_after is not None
                else min(4.0, 0.25 * 2**attempt) * (0.5 + random.random())
            )
            if loop.time() + delay >= deadline:
                raise error  # waiting would overrun the deadline: report the server's answer now
            log.info("%s %s; retrying in %.2f s", self._shown_url, what, delay)
            await asyncio.sleep(delay)
            attempt += 1

    async def _post(
        self, session: aiohttp.ClientSession, body: dict[str, Any], remaining: float, url: URL
    ) -> tuple[int, str, float | None, bytes]:
        try:
            async with session.post(
                url, json=body, headers=self._headers(), timeout=aiohttp.ClientTimeout(total=remaining)
            ) as resp:
                payload = await self._read(resp)
                return resp.status, resp.reason or "", _retry_after(resp.headers.get("Retry-After")), payload
        except TimeoutError:
            raise  # aiohttp's timeout errors are also connection errors; they mean "too slow"
        except aiohttp.ClientConnectorError as exc:
            err = exc.os_error
            if err is None:
                why = "connection failed"
            elif err.errno and err.errno > 0:
                why = os.strerror(err.errno)  # asyncio's own strerror is "Connect call failed (...)"
            else:
                # resolver errors (negative codes) carry their own text; a bad host is not transient
                why = err.strerror or str(err)
                raise BackendUnavailable(f"cannot connect to {self._shown_url} ({why.lower()}).") from exc
            raise _ConnectionFailed(f"cannot connect to {self._shown_url} ({why.lower()}).") from exc
        except aiohttp.ClientConnectionError as exc:
            raise _ConnectionFailed(
                f"the connection to {self._shown_url} broke before an answer ({type(exc).__name__})."
            ) from exc
        except aiohttp.ClientPayloadError as exc:
            raise BackendResponseError(f"{self._shown_url} sent an incomplete answer.") from exc
        except aiohttp.ClientError as exc:
            raise BackendUnavailable(
                f"the request to {self._shown_url} failed ({type(exc).__name__})."
            ) from exc
        except ValueError as exc:  # e.g. a header aiohttp refuses; its text may quote the header
            raise BackendUnavailable(
                f"the request to {self._shown_url} could not be sent ({type(exc).__name__}); "
                f"check the URL and ${self.api_key_env}."
            ) from exc

    async def _read(self, resp: aiohttp.ClientResponse) -> bytes:
        """The body, unpacked, or BackendResponseError once it passes ``max_response_bytes`` on
        the wire or unpacked. Reading stops there: nothing beyond the bound is held."""
        limit = self.max_response_bytes
        if resp.content_length is not None and resp.content_length > limit:
            raise self._too_large()
        encoding = resp.headers.get(aiohttp.hdrs.CONTENT_ENCODING, "identity").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            unpack = zlib.decompressobj(wbits=32 + zlib.MAX_WBITS)  # gzip or zlib header
        elif encoding in ("", "identity"):
            unpack = None
        else:
            raise BackendResponseError(
                f"{self._shown_url} answered in an encoding cctest does not read ({encoding[:40]})."
            )
        wire = 0
        out = bytearray()
        try:
            async for chunk in resp.content.iter_chunked(_READ_CHUNK):
                wire += len(chunk)
                if wire > limit:
                    raise self._too_large()
                if unpack is None:
                    out += chunk
                else:
                    out += unpack.decompress(chunk, limit + 1 - len(out))
                    if unpack.unconsumed_tail:  # more output is waiting than the bound allows
                        raise self._too_large()
                if len(out) > limit:
                    raise self._too_large()
            if unpack is not None:
                out += unpack.flush(limit + 1 - len(out))
                if len(out) > limit:
                    raise self._too_large()
        except zlib.error as exc:
            raise BackendResponseError(
                f"{self._shown_url} sent a {encoding} body that does not unpack."
            ) from exc
        return bytes(out)

    def _too_large(self) -> BackendResponseError:
        return BackendResponseError(
            f"{self._shown_url} sent an answer larger than {self.max_response_bytes // 1024} KiB; "
            "it was not read."
        )

    def _parse(self, payload: bytes, parse: Callable[[Any], str], expects: str) -> str:
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise BackendResponseError(
                f"{self._shown_url} answered something that is not JSON"
                + (" (nested too deeply to read)." if isinstance(exc, RecursionError) else ".")
            ) from exc
        self._slots.notice(data)
        try:
            return model_text(parse(data))  # the one place a server's answer enters
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            raise BackendResponseError(
                f"{self._shown_url} answered JSON without a completion (expected {expects})."
            ) from exc

    def _status_error(self, status: int, reason: str, payload: bytes) -> BackendError:
        if status in (401, 403):
            return BackendResponseError(
                f"{self._shown_url} refused the request with {status} {reason}; "
                f"check the API key in ${self.api_key_env}."
            )
        detail = _error_detail(payload)
        return BackendResponseError(
            f"{self._shown_url} answered {status} {reason}".rstrip() + (f" ({detail})." if detail else ".")
        )

    def _timeout_error(self) -> BackendTimeout:
        return BackendTimeout(f"{self._shown_url} gave no completion within {self.timeout:g} s.")


class _Settle(Unfinished):
    """The rows an early decision over streams closed (``Decided.rest``), asked again whole once
    the backend is idle: no engine request and no other call under way. A request that starts
    meanwhile closes them (the server stops) and they are asked again after it; the server writes
    them from the start each time, since a closed stream cannot be continued."""

    def __init__(
        self,
        backend: HTTPBackend,
        prompts: Sequence[str],
        suffixes: Sequence[str] | None,
        outcomes: list[Outcome],
        cut: Sequence[int],
    ) -> None:
        self.backend, self.outcomes, self.cut = backend, list(outcomes), list(cut)
        self.prompts = [prompts[i] for i in cut]
        self.suffixes = None if suffixes is None else [suffixes[i] for i in cut]
        self.closed = False

    async def finish(self) -> list[Outcome] | None:
        b = self.backend
        while not self.closed:
            while b.busy() and not self.closed:
                await asyncio.sleep(0.005)
            if self.closed:
                break
            task = asyncio.ensure_future(b.complete(self.prompts, suffixes=self.suffixes))
            while not task.done() and not self.closed and not b.busy(own=1):
                await asyncio.wait([task], timeout=0.005)
            if not task.done():  # a request came: it goes first
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                continue
            out = list(self.outcomes)
            for i, whole in zip(self.cut, task.result(), strict=True):
                out[i] = whole
            return out
        return None

    def close(self) -> None:
        self.closed = True


class _ConnectionFailed(BackendUnavailable):
    """A refused, reset or dropped connection: worth another try when ``retry_unavailable``."""


class _SuffixRefused(BackendResponseError):
    """The server refused a request that carried the ``suffix`` field."""


class ContextExceeded(BackendResponseError):
    """The server refused a prompt longer than the context it gives a row: ``asked`` tokens
    against ``limit`` (either None where its message does not say)."""

    def __init__(self, message: str, asked: int | None, limit: int | None) -> None:
        super().__init__(message)
        self.asked, self.limit = asked, limit


# the words each server's context-length refusal is told by, and where its numbers are: llama.cpp's
# server ("request (N tokens) exceeds the available context size (M tokens)", type
# exceed_context_size_error), vLLM and OpenAI ("maximum context length is M tokens. However, you
# requested N tokens"), TGI ("inputs tokens + max_new_tokens must be <= M. Given: N inputs tokens")
_CONTEXT_REFUSALS = (
    (re.compile(r"\((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"), 1, 2),
    (re.compile(r"maximum context length is (\d+) tokens.*?requested (\d+) tokens", re.S), 2, 1),
    (re.compile(r"must be <= (\d+)\. Given: (\d+) `inputs` tokens"), 2, 1),
)
_CONTEXT_WORDS = ("exceed_context_size_error", "context length", "context size", "context window")


def context_refusal(status: int, payload: bytes) -> tuple[int | None, int | None] | None:
    """(tokens asked, the context's tokens) when an error answer refuses a prompt for its length.

    >>> context_refusal(400, b'{"error": {"code": 400, "type": "exceed_context_size_error", '
    ...     b'"message": "request (1300 tokens) exceeds the available context size (1024 tokens)"}}')
    (1300, 1024)
    >>> context_refusal(400, b'{"error": {"message": "suffix is not supported"}}') is None
    True
    """
    if status not in (400, 413, 422):
        return None
    text = payload[:4096].decode("utf-8", "replace")
    for pattern, asked, limit in _CONTEXT_REFUSALS:
        found = pattern.search(text)
        if found:
            return int(found.group(asked)), int(found.group(limit))
    if any(w in text.lower() for w in _CONTEXT_WORDS):
        return None, None
    return None


def window(prompt: str, suffix: str | None, chars: int) -> tuple[str, str | None]:
    """``prompt`` and ``suffix`` cut to about ``chars`` characters around the cursor: the code
    just before it (from a line's start), at most a quarter of them after it (to a line's end).

    >>> window("a = 1\\nb = 2\\nc = ", "\\nd = 4\\ne = 5\\n", 12)
    ('b = 2\\nc = ', '\\n')
    """
    tail = suffix or ""
    if len(prompt) + len(tail) <= chars:
        return prompt, suffix
    after = min(len(tail), chars // 4)
    kept = tail[:after]
    if after < len(tail) and "\n" in kept:
        kept = kept[: kept.rfind("\n") + 1]
    before = prompt[-max(1, chars - len(kept)) :]
    if len(before) < len(prompt) and "\n" in before[:-1]:
        before = before[before.index("\n") + 1 :]
    return before, (kept if suffix is not None else None)


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_detail(payload: bytes) -> str:
    """The server's own error message, shortened to one line, if it sent one as JSON."""
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        return ""
    msg: Any = data.get("error") if isinstance(data, dict) else None
    if isinstance(msg, dict):
        msg = msg.get("message")
    if not isinstance(msg, str):
        return ""
    msg = " ".join(model_text(msg).split()).rstrip(".")
    return msg[:160]


__all__ = ["CHAT_PROVIDER_TABLE", "HTTPBackend", "PROVIDER_TABLE", "Provider", "chat_url", "endpoint_url"]
