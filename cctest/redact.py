"""Credentials out of URLs: the one helper used wherever cctest records or shows a URL.

A server URL may carry a secret in its ``user:password@`` part or in a query parameter
(``?api_key=…``, ``token=…``, ``access_token=…``, ``sig=…``). Everything that writes a URL where a
person or a file can read it (the HTTP backend's ``describe()``, its log lines and error messages,
the defect log's settings and exports, the language server's settings log, a bench run's
``config.json``) passes it through :func:`redact_url` first; settings go through
:func:`redact_settings`; free text (a log file, where pygls writes every message it receives at
debug level) through :func:`redact_text`, which :class:`RedactingFormatter` applies to every log
line (with ``cctest.safe_text.terminal_text``: no raw control characters either). The request
itself still goes to the URL as given.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .safe_text import terminal_text

REDACTED = "REDACTED"

# query parameter names that hold a secret (matched anywhere in the name, case-insensitively)
_SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential|session|bearer", re.IGNORECASE)
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>\\]+")
# settings whose values are URLs (or may be: --model is a path, a rules spec or a server URL)
URL_SETTINGS = ("model",)


def redact_url(url: str) -> str:
    """``url`` with its ``user:password@`` dropped and secret query values replaced.

    >>> redact_url("http://me:pw@host:8000/v1?api_key=sk-1&api-version=2")
    'http://host:8000/v1?api_key=REDACTED&api-version=2'
    >>> redact_url("https://h/generate?token=abc#frag")
    'https://h/generate?token=REDACTED'
    >>> redact_url("/models/coder")  # not a URL: unchanged
    '/models/coder'
    """
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # a malformed URL: show none of it rather than a secret
        return "<a URL that cannot be parsed>"
    if ":" in host:  # IPv6 literals keep their brackets
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    query = urlencode(
        [
            (k, REDACTED if _SECRET_PARAM.search(k) else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="",
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (URLs end at white space, quotes, ``<>`` or ``\\``).

    >>> redact_text('{"model": "http://me:pw@h/v1?token=t"} and https://x.org/a')
    '{"model": "http://h/v1?token=REDACTED"} and https://x.org/a'
    """
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


class RedactingFormatter(logging.Formatter):
    """A log formatter whose lines (tracebacks included) carry no URL credentials and no raw
    control characters (a task id or a model's text quoted in a message: ``terminal_text``)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_text(redact_text(super().format(record)))


def redact_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``settings`` fit to be stored or logged: every URL setting redacted.

    >>> redact_settings({"model": "http://me:pw@host:8000/v1", "mutants": 3})
    {'model': 'http://host:8000/v1', 'mutants': 3}
    """
    out = dict(settings)
    for key in URL_SETTINGS:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = redact_url(value)
    return out


__all__ = ["REDACTED", "URL_SETTINGS", "RedactingFormatter", "redact_settings", "redact_text", "redact_url"]
