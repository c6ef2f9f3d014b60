"""Session-wide fixtures for the tests against llama.cpp's servers: the bundled model as GGUF
(``cctest.models.gguf``) and the servers that serve it, each started once:

- ``llama_defaults``: ``llama-server`` with its default slots (4, sharing one context) and a
  context sized for them (``-c`` 4 x the model's 1,024 tokens);
- ``llama_bare``: ``llama-server`` exactly at its defaults (4 slots sharing the model's 1,024
  tokens: a repair's k + 1 rows overflow it);
- ``llama_wide``: ``llama-server`` with a slot for each of a repair's k + 1 rows (``-np 11``) and
  1,024 tokens each;
- ``llama_cpp_python``: llama-cpp-python's server as docs/servers.md says to run it for cctest
  (``--interrupt_requests false``), and ``llama_cpp_python_interrupting`` at its default.

A missing build fails these tests with one sentence saying to run ``make setup-e2e``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_helpers import K, Server, llama_cpp_python_server, llama_server, llama_server_binary

from cctest.models import bundled_model_path
from cctest.models.gguf import convert

CONTEXT = 1024  # the bundled model's training context


@pytest.fixture(scope="session")
def bundled_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    llama_server_binary()  # no converting for a server that is not there
    return convert(bundled_model_path(), tmp_path_factory.mktemp("gguf") / "cctest-code-small.gguf")


@pytest.fixture(scope="session")
def llama_defaults(bundled_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with llama_server(bundled_gguf, tmp_path_factory.mktemp("llama-defaults"), "-c", str(4 * CONTEXT)) as s:
        yield s


@pytest.fixture(scope="session")
def llama_bare(bundled_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with llama_server(bundled_gguf, tmp_path_factory.mktemp("llama-bare")) as s:
        yield s


@pytest.fixture(scope="session")
def llama_wide(bundled_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    rows = K + 1
    with llama_server(
        bundled_gguf, tmp_path_factory.mktemp("llama-wide"), "-np", str(rows), "-c", str(rows * CONTEXT)
    ) as s:
        yield s


@pytest.fixture(scope="session")
def llama_cpp_python(bundled_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with llama_cpp_python_server(
        bundled_gguf,
        tmp_path_factory.mktemp("llama-cpp-python"),
        "--n_ctx", str(CONTEXT), "--interrupt_requests", "false",
    ) as s:  # fmt: skip
        yield s


@pytest.fixture(scope="session")
def llama_cpp_python_interrupting(
    bundled_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with llama_cpp_python_server(
        bundled_gguf, tmp_path_factory.mktemp("llama-cpp-python-default"), "--n_ctx", str(CONTEXT)
    ) as s:
        yield s
