"""The http backend in front of a server that answers as llama.cpp's ``llama-server`` (and
llama-cpp-python's server) does (``llama_like_server``): interrupted streams, context-length
refusals, a suffix field that is ignored, ``/infill``, slots."""

from __future__ import annotations

from llama_like_server import LlamaLike, llama_like

from cctest.backends.base import GenerationOptions
from cctest.backends.http import HTTPBackend
from cctest.errors import BackendError

TEXT = "value = compute(alpha, beta)"  # seven tokens of four characters


def words(prefix: str, suffix: str) -> str:
    return TEXT


def backend(url: str, **kw: object) -> HTTPBackend:
    kw.setdefault("options", GenerationOptions(max_new_tokens=32))
    return HTTPBackend(url, boundaries=False, timeout=20, **kw)  # type: ignore[arg-type]


async def test_a_stream_ended_without_a_finish_reason_is_a_failed_row() -> None:
    """llama-cpp-python's server ends the streaming row with [DONE] and no finish reason when
    another request queues: that row is interrupted, not a (short) finished completion."""
    server = LlamaLike(words, slots=1, interrupt=True, step_s=0.01)
    async with llama_like(server) as url, backend(url) as b:
        got = await b.complete_deciding(["a = 1\n", "b = 2\n", "c = 3\n"], after=64, decide=lambda _: 0)
    failed = [o for o in got.outcomes if isinstance(o, BackendError)]
    assert failed and all("without a finish reason" in str(o) for o in failed)
    assert all(o == TEXT for o in got.outcomes if isinstance(o, str))
