"""cctest against llama-cpp-python's own server (``python -m llama_cpp.server``), which runs one
row at a time: as docs/servers.md says to run it (``--interrupt_requests false``) a repair gets
every row; at its default, which ends the streaming row with ``[DONE]`` and no finish reason
whenever another row queues, an interrupted row is a failed row, never a finished one."""

from __future__ import annotations

import json

from llama_helpers import K, Server, cctest

ROWS = K + 1
WHERE = "examples/demo.py:6:5"


def _complete(server: Server, *options: str) -> dict:
    done = cctest(
        "complete", WHERE, "--backend", "http", "--model", server.url, "--json", "--timeout", "600", *options
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_a_repair_gets_every_row(llama_cpp_python: Server) -> None:
    result = _complete(llama_cpp_python)
    assert len(result["completions"]) == ROWS
    assert result["no_results"] == []
    assert result["completion"].strip()


def _finished(completion: dict) -> bool:
    """A row that went to its end: neither failed nor cut where the engine decided early."""
    return "error" not in completion and not completion.get("cut", False)


def test_an_interrupted_row_is_not_a_finished_one(
    llama_cpp_python: Server, llama_cpp_python_interrupting: Server
) -> None:
    """The same model and settings on both servers, one row at a time on each: a row the
    interrupting server ended early must not count as finished, so every row finished on both
    has the same text on both (an interrupted one had a token or two)."""
    calm = _complete(llama_cpp_python)
    interrupted = _complete(llama_cpp_python_interrupting)
    assert len(interrupted["completions"]) == ROWS
    for a, b in zip(calm["completions"], interrupted["completions"], strict=True):
        assert a["source"] == b["source"]
        if _finished(a) and _finished(b):
            assert b["raw"] == a["raw"], b["source"]
