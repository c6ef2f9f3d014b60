"""Fixtures of the suites' tests: a real aiohttp server on 127.0.0.1 playing a scripted model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from aiohttp import web
from local_server import serve_in_thread


@pytest.fixture
def serve_app() -> Iterator[Callable[[web.Application], str]]:
    """``serve_app(app)`` serves ``app`` on 127.0.0.1 in a thread with its own loop and returns
    its URL; the servers stop when the test ends."""
    with ExitStack() as servers:
        yield lambda app: servers.enter_context(serve_in_thread(app))
