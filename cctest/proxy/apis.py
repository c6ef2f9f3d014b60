"""The three APIs the proxy speaks to a plugin, each in its own shapes: OpenAI, Ollama and TGI.

An ``Api`` knows, for its completion endpoint(s):

* ``read``: whether a request is a completion the proxy repairs, and if so what it asks (``Ask``:
  the code before and after the cursor, how they are laid out, streamed or not, the stop
  sequences); anything else (``None``) passes through unchanged;
* ``row_requests``: the upstream requests for the prompt and its mutants, each a copy of the
  plugin's own body (its sampling options kept for every row) with the row's text; OpenAI's
  ``prompt`` takes a list, so rows that share a suffix go out as ONE request, the others one
  request per row (sent concurrently);
* ``texts``: the completions in an upstream answer;
* ``answer`` / ``stream``: the repaired completion in the shape the plugin expects, built on the
  upstream's own answer to the original row (ids, model name, usage); streamed as OpenAI's
  server-sent events ending in ``[DONE]``, Ollama's NDJSON ending in ``"done": true``, or TGI's
  ``/generate_stream`` events;
* ``own_text``: the completion in the upstream's own answer, streamed or not (monitor mode);
* ``error``: an error in the API's own shape and status.

The request and answer shapes follow each API's documentation (OpenAI's legacy completions,
Ollama's ``/api/generate``, TGI's ``/generate`` and ``/generate_stream``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .layout import LEFT_TO_RIGHT, SUFFIX_FIELD, Layout, looks_like_python, recognise


@dataclass(frozen=True)
class Ask:
    """A completion request the proxy repairs."""

    body: dict[str, Any]  # the plugin's own request body
    layout: Layout
    prefix: str  # the code before the cursor
    suffix: str  # the code after it
    stream: bool
    stop: tuple[str, ...]
    max_tokens: int
    model: str | None

    @property
    def is_python(self) -> bool:
        return looks_like_python(self.layout.head, self.prefix)


class BadAsk(ValueError):
    """A completion request the upstream API itself would refuse (a field of the wrong type that
    the proxy would otherwise trip on): a 400 in the API's shape, the message saying why."""


@dataclass(frozen=True)
class RowRequest:
    """One upstream request: its path, its body, and the rows whose completions it carries."""

    path: str
    body: dict[str, Any]
    rows: tuple[int, ...]


def _stops(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    return None


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def pieces(text: str) -> list[str]:
    """``text`` in word-sized pieces (each word with the whitespace after it), for a stream.

    >>> pieces("if x:\\n    return 1\\n")
    ['if ', 'x:\\n    ', 'return ', '1\\n']
    """
    return re.findall(r"\s+\S*\s*|\S+\s*", text) if text else []


class Api:
    """One API's shapes (module docstring)."""

    name = "api"
    paths: tuple[str, ...] = ()
    content_type = "application/json"

    def read(self, path: str, body: Any) -> Ask | None:
        raise NotImplementedError

    def row_requests(self, ask: Ask, texts: Sequence[str], suffixes: Sequence[str]) -> list[RowRequest]:
        raise NotImplementedError

    def texts(self, data: Any, n: int) -> list[str]:
        raise NotImplementedError

    def answer(self, ask: Ask, data: Any, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def stream(self, ask: Ask, data: Any, parts: Sequence[str], text: str) -> Iterator[bytes]:
        raise NotImplementedError

    def stream_type(self, ask: Ask) -> str:
        return "text/event-stream"

    # a stream written as the chosen row comes: its ids (one per answer), each piece, the end
    def stream_source(self, ask: Ask, data: Any = None) -> Any:
        return data

    def stream_piece(self, ask: Ask, data: Any, piece: str, n: int) -> bytes:
        raise NotImplementedError

    def stream_end(self, ask: Ask, data: Any, text: str, n: int) -> bytes:
        raise NotImplementedError

    def own_text(self, payload: bytes, streamed: bool) -> str | None:
        raise NotImplementedError

    def merge_event(self, kept: Any, event: Any) -> Any:
        """What a streamed row's events so far say of the answer (``answer`` is built on it):
        here the last event, which for Ollama holds the answer's fields once it is done."""
        return event

    def error(self, status: int, message: str, kind: str) -> web.Response:
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------------

    @staticmethod
    def _layout(prompt: str, suffix: Any) -> tuple[Layout, str, str]:
        """The layout of a prompt with an optional ``suffix`` field."""
        if isinstance(suffix, str) and suffix:
            return Layout(SUFFIX_FIELD), prompt, suffix
        found = recognise(prompt)
        if found is not None:
            return found
        return Layout(LEFT_TO_RIGHT), prompt, ""

    @staticmethod
    def _row_prompt(ask: Ask, text: str, suffix: str) -> str:
        return ask.layout.render(text, suffix) if ask.layout.template is not None else text


def _sse(data: Any) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


def _sse_events(payload: bytes) -> Iterator[Any]:
    """The JSON of each ``data:`` line of a server-sent event stream (``[DONE]`` skipped)."""
    for line in payload.decode("utf-8", "replace").splitlines():
        if line.startswith("data:"):
            item = line[5:].strip()
            if item and item != "[DONE]":
                yield json.loads(item)


INFILL = "/infill"  # llama.cpp's server's fill-in-the-middle endpoint (llama.vim, llama.vscode)


def is_infill(ask: Ask) -> bool:
    """Whether ``ask`` came to llama.cpp's ``/infill`` (its answer is ``/infill``'s shape)."""
    return "input_prefix" in ask.body


class OpenAI(Api):
    """OpenAI's completions, and llama.cpp's server's ``/infill`` beside them."""

    name = "openai"
    paths = ("/v1/completions", "/completions", INFILL)

    def read(self, path: str, body: Any) -> Ask | None:
        if path not in self.paths or not isinstance(body, dict):
            return None
        if path == INFILL:
            return self._read_infill(body)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1:
            prompt = prompt[0]
        stop = _stops(body.get("stop"))
        if (
            not isinstance(prompt, str)
            or stop is None
            or body.get("n", 1) not in (1, None)
            or body.get("best_of", 1) not in (1, None)
            or body.get("echo")
            or body.get("logprobs") is not None
        ):
            return None  # several prompts or choices, echoes, log-probabilities: not repaired
        if not isinstance(body.get("stream_options"), (dict, type(None))):
            raise BadAsk("'stream_options' must be an object, such as {\"include_usage\": true}.")
        layout, prefix, suffix = self._layout(prompt, body.get("suffix"))
        model = body.get("model")
        return Ask(
            body,
            layout,
            prefix,
            suffix,
            bool(body.get("stream")),
            stop,
            _int(body.get("max_tokens"), 16),
            model if isinstance(model, str) else None,
        )

    def _read_infill(self, body: dict[str, Any]) -> Ask | None:
        """An ``/infill`` request: the code before the cursor is ``input_prefix`` and ``prompt``
        (llama.vim sends the cursor's line up to the cursor there), the code after it
        ``input_suffix``; ``input_extra`` (other files' chunks) stays with every row."""
        prefix, suffix, line = body.get("input_prefix"), body.get("input_suffix", ""), body.get("prompt", "")
        stop = _stops(body.get("stop"))
        if (
            not isinstance(prefix, str)
            or not isinstance(suffix, str)
            or not isinstance(line, str)
            or "\n" in line
            or (line and prefix and not prefix.endswith("\n"))
            or stop is None
            or body.get("n_probs")
        ):
            return None  # a layout the rows could not be split back into: passed through
        model = body.get("model")
        return Ask(
            body,
            Layout(SUFFIX_FIELD),
            prefix + line,
            suffix,
            bool(body.get("stream")),
            stop,
            _int(body.get("n_predict"), 128),
            model if isinstance(model, str) else None,
        )

    def row_requests(self, ask: Ask, texts: Sequence[str], suffixes: Sequence[str]) -> list[RowRequest]:
        """Rows that share their suffix (all of them, when it is in the prompt) in ONE request;
        an ``/infill`` request's rows one request each."""
        if is_infill(ask):
            each = []
            for i, (row_text, row_suffix) in enumerate(zip(texts, suffixes, strict=True)):
                row = {**ask.body, "input_suffix": row_suffix, "stream": False}
                if "prompt" in ask.body:  # the cursor's line in ``prompt``, as the plugin laid it out
                    cut = row_text.rfind("\n") + 1
                    row["input_prefix"], row["prompt"] = row_text[:cut], row_text[cut:]
                else:
                    row["input_prefix"] = row_text
                each.append(RowRequest(INFILL, row, (i,)))
            return each
        groups: dict[str | None, list[int]] = {}
        for i, s in enumerate(suffixes):
            key = s if ask.layout.kind == SUFFIX_FIELD and s.strip() else None
            groups.setdefault(key, []).append(i)
        out = []
        for suffix, rows in groups.items():
            body = {k: v for k, v in ask.body.items() if k not in ("stream", "stream_options", "suffix")}
            prompts = [self._row_prompt(ask, texts[i], suffixes[i]) for i in rows]
            # one row (each streamed row of an early decision): a plain string, as the http
            # backend sends it and every server takes it (some refuse a list with a stream)
            body["prompt"] = prompts if len(prompts) > 1 else prompts[0]
            body["stream"] = False
            if suffix is not None:
                body["suffix"] = suffix
            out.append(RowRequest("/v1/completions", body, tuple(rows)))
        return out

    def texts(self, data: Any, n: int) -> list[str]:
        if "choices" not in data and isinstance(data.get("content"), str):  # /infill's answer
            return [data["content"]]
        choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
        texts = [c["text"] for c in choices]
        if len(texts) != n or not all(isinstance(t, str) for t in texts):
            raise ValueError(f"expected {n} choices with text")
        return texts

    def answer(self, ask: Ask, data: Any, text: str) -> dict[str, Any]:
        out = dict(data) if isinstance(data, dict) else {}
        if is_infill(ask):
            out.update(content=text, stop=True)
            return out
        choice = dict((out.get("choices") or [{}])[0])
        choice.update(text=text, index=0, logprobs=None)
        choice.setdefault("finish_reason", "stop")
        out.update(
            choices=[choice],
            object="text_completion",
            id=out.get("id") or f"cmpl-{time.time_ns()}",
            created=out.get("created") or int(time.time()),
            model=out.get("model") or ask.model or "",
        )
        return out

    def stream_source(self, ask: Ask, data: Any = None) -> Any:
        """The ids of a stream written as the chosen row comes: the upstream's own (``data``,
        the original row's events so far), else new ones."""
        if is_infill(ask):
            return data
        known = data if isinstance(data, dict) else {}
        head = {k: known[k] for k in ("id", "created", "model", "system_fingerprint") if known.get(k)}
        return {"id": f"cmpl-{time.time_ns()}", "created": int(time.time()), **head}

    def merge_event(self, kept: Any, event: Any) -> Any:
        """The ids, model, usage (the last event of llama.cpp's server and vLLM's carries it) and
        finish reason a row's events gave."""
        out = dict(kept) if isinstance(kept, dict) else {}
        if isinstance(event, dict):
            out.update({k: v for k, v in event.items() if k != "choices" and v is not None})
            choices = event.get("choices")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                if choices[0].get("finish_reason"):
                    out["choices"] = [{"finish_reason": choices[0]["finish_reason"]}]
        return out

    def stream_piece(self, ask: Ask, data: Any, piece: str, n: int) -> bytes:
        return next(self.stream(ask, data, [piece], piece))

    def stream_end(self, ask: Ask, data: Any, text: str, n: int) -> bytes:
        return b"".join(self.stream(ask, data, [], text))

    def stream(self, ask: Ask, data: Any, parts: Sequence[str], text: str) -> Iterator[bytes]:
        whole = self.answer(ask, data, text)
        if is_infill(ask):  # /infill's events: the content so far, the last with "stop": true
            for piece in parts:
                yield _sse({"content": piece, "stop": False})
            yield _sse({**whole, "content": "", "stop": True})
            return
        head = {k: whole[k] for k in ("id", "object", "created", "model")}
        for piece in parts:
            yield _sse(
                {**head, "choices": [{"text": piece, "index": 0, "logprobs": None, "finish_reason": None}]}
            )
        finish = whole["choices"][0].get("finish_reason") or "stop"
        last: dict[str, Any] = {
            **head,
            "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": finish}],
        }
        if (ask.body.get("stream_options") or {}).get("include_usage") and "usage" in whole:
            yield _sse(last)
            last = {**head, "choices": [], "usage": whole["usage"]}
        yield _sse(last)
        yield b"data: [DONE]\n\n"

    def own_text(self, payload: bytes, streamed: bool) -> str | None:
        if not streamed:
            return str(self.texts(json.loads(payload), 1)[0])
        out: list[str] = []
        for event in _sse_events(payload):
            if "choices" in event:
                out.extend(str(c.get("text") or "") for c in event.get("choices") or [])
            else:  # /infill's events
                out.append(str(event.get("content") or ""))
        return "".join(out)

    def error(self, status: int, message: str, kind: str) -> web.Response:
        code = {504: "timeout", 502: "upstream_unavailable"}.get(status, kind)
        return web.json_response(
            {"error": {"message": message, "type": kind, "param": None, "code": code}}, status=status
        )


class Ollama(Api):
    name = "ollama"
    paths = ("/api/generate",)

    def read(self, path: str, body: Any) -> Ask | None:
        if path not in self.paths or not isinstance(body, dict):
            return None
        prompt = body.get("prompt")
        options: dict[str, Any] = body["options"] if isinstance(body.get("options"), dict) else {}
        stop = _stops(options.get("stop"))
        if (
            not isinstance(prompt, str)
            or not prompt
            or stop is None
            or body.get("images")
            or body.get("format")
        ):
            return None
        layout, prefix, suffix = self._layout(prompt, body.get("suffix"))
        if layout.kind == LEFT_TO_RIGHT and not body.get("raw"):
            return None  # a prompt for the model's own (chat) template: not a code completion
        model = body.get("model")
        return Ask(
            body,
            layout,
            prefix,
            suffix,
            body.get("stream", True) is not False,  # Ollama streams unless told not to
            stop,
            _int(options.get("num_predict"), 128),
            model if isinstance(model, str) else None,
        )

    def row_requests(self, ask: Ask, texts: Sequence[str], suffixes: Sequence[str]) -> list[RowRequest]:
        out = []
        for i, (text, suffix) in enumerate(zip(texts, suffixes, strict=True)):
            body = {k: v for k, v in ask.body.items() if k not in ("suffix", "context")}
            body["prompt"] = self._row_prompt(ask, text, suffix)
            body["stream"] = False
            if ask.layout.kind == SUFFIX_FIELD and suffix.strip():
                body["suffix"] = suffix
            out.append(RowRequest("/api/generate", body, (i,)))
        return out

    def texts(self, data: Any, n: int) -> list[str]:
        text = data["response"]
        if not isinstance(text, str):
            raise ValueError("response is not a string")
        return [text]

    def answer(self, ask: Ask, data: Any, text: str) -> dict[str, Any]:
        # ``context`` holds the tokens of the original prompt and answer: not this answer's
        out = {k: v for k, v in (data if isinstance(data, dict) else {}).items() if k != "context"}
        out.update(response=text, done=True)
        out.setdefault("model", ask.model or "")
        out.setdefault("created_at", _now_iso())
        out.setdefault("done_reason", "stop")
        return out

    def stream_type(self, ask: Ask) -> str:
        return "application/x-ndjson"

    def stream_piece(self, ask: Ask, data: Any, piece: str, n: int) -> bytes:
        return next(self.stream(ask, data, [piece], piece))

    def stream_end(self, ask: Ask, data: Any, text: str, n: int) -> bytes:
        return b"".join(self.stream(ask, data, [], text))

    def stream(self, ask: Ask, data: Any, parts: Sequence[str], text: str) -> Iterator[bytes]:
        whole = self.answer(ask, data, text)
        for piece in parts:
            line = {"model": whole["model"], "created_at": _now_iso(), "response": piece, "done": False}
            yield json.dumps(line, ensure_ascii=False).encode() + b"\n"
        yield (
            json.dumps({**whole, "response": "", "created_at": _now_iso()}, ensure_ascii=False).encode()
            + b"\n"
        )

    def own_text(self, payload: bytes, streamed: bool) -> str | None:
        lines = [json.loads(x) for x in payload.splitlines() if x.strip()]
        return "".join(str(x.get("response") or "") for x in lines)

    def error(self, status: int, message: str, kind: str) -> web.Response:
        return web.json_response({"error": message}, status=status)


class TGI(Api):
    name = "tgi"
    paths = ("/generate", "/generate_stream")

    def read(self, path: str, body: Any) -> Ask | None:
        if path not in self.paths or not isinstance(body, dict):
            return None
        prompt = body.get("inputs")
        params: dict[str, Any] = body["parameters"] if isinstance(body.get("parameters"), dict) else {}
        stop = _stops(params.get("stop"))
        if (
            not isinstance(prompt, str)
            or stop is None
            or params.get("return_full_text")
            or params.get("best_of", 1) not in (1, None)
            or params.get("decoder_input_details")
        ):
            return None
        found = recognise(prompt)
        layout, prefix, suffix = found if found is not None else (Layout(LEFT_TO_RIGHT), prompt, "")
        return Ask(
            body,
            layout,
            prefix,
            suffix,
            path == "/generate_stream",
            stop,
            _int(params.get("max_new_tokens"), 100),
            None,
        )

    def row_requests(self, ask: Ask, texts: Sequence[str], suffixes: Sequence[str]) -> list[RowRequest]:
        out = []
        for i, (text, suffix) in enumerate(zip(texts, suffixes, strict=True)):
            body = {k: v for k, v in ask.body.items() if k != "stream"}
            body["inputs"] = self._row_prompt(ask, text, suffix)
            out.append(RowRequest("/generate", body, (i,)))
        return out

    def texts(self, data: Any, n: int) -> list[str]:
        if isinstance(data, list):  # some TGI versions answer a one-element list
            data = data[0]
        text = data["generated_text"]
        if not isinstance(text, str):
            raise ValueError("generated_text is not a string")
        return [text]

    def answer(self, ask: Ask, data: Any, text: str) -> dict[str, Any]:
        if isinstance(data, list):
            data = data[0] if data else {}
        out = dict(data) if isinstance(data, dict) else {}
        out["generated_text"] = text
        return out

    def merge_event(self, kept: Any, event: Any) -> Any:
        if isinstance(event, dict) and isinstance(event.get("details"), dict):
            return {"details": event["details"]}
        return kept

    def stream_piece(self, ask: Ask, data: Any, piece: str, n: int) -> bytes:
        token = {"id": 0, "text": piece, "logprob": 0.0, "special": False}
        return _sse({"index": n, "token": token, "generated_text": None, "details": None})

    def stream_end(self, ask: Ask, data: Any, text: str, n: int) -> bytes:
        token = {"id": 0, "text": "", "logprob": 0.0, "special": True}  # EOS: not part of the text
        details = {"finish_reason": "eos_token", "generated_tokens": n, "seed": None}
        return _sse({"index": n + 1, "token": token, "generated_text": text, "details": details})

    def stream(self, ask: Ask, data: Any, parts: Sequence[str], text: str) -> Iterator[bytes]:
        details = (self.answer(ask, data, text).get("details") or {}) if data else {}
        for n, piece in enumerate(parts, start=1):
            last = n == len(parts)
            token = {"id": 0, "text": piece, "logprob": 0.0, "special": False}
            yield _sse(
                {
                    "index": n,
                    "token": token,
                    "generated_text": text if last else None,
                    "details": {
                        "finish_reason": details.get("finish_reason", "eos_token"),
                        "generated_tokens": len(parts),
                        "seed": details.get("seed"),
                    }
                    if last
                    else None,
                }
            )
        if not parts:
            token = {"id": 0, "text": "", "logprob": 0.0, "special": True}
            yield _sse(
                {
                    "index": 1,
                    "token": token,
                    "generated_text": "",
                    "details": {"finish_reason": "eos_token", "generated_tokens": 0, "seed": None},
                }
            )

    def own_text(self, payload: bytes, streamed: bool) -> str | None:
        if not streamed:
            return self.texts(json.loads(payload), 1)[0]
        text = None
        for event in _sse_events(payload):
            if isinstance(event, dict) and isinstance(event.get("generated_text"), str):
                text = event["generated_text"]
        return text

    def error(self, status: int, message: str, kind: str) -> web.Response:
        return web.json_response({"error": message, "error_type": kind}, status=status)


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{time.time_ns() % 10**9:09d}Z"


APIS: dict[str, Api] = {api.name: api for api in (OpenAI(), Ollama(), TGI())}

__all__ = ["APIS", "Api", "Ask", "BadAsk", "RowRequest", "pieces"]
