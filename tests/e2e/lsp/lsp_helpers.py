"""Helpers for the language server's end-to-end tests: a real server process, a real LSP client."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.protocol.json_rpc import JsonRPCRequestMessage
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = Path(__file__).resolve().parents[3]
SERVER = [sys.executable, "-m", "lsp_server", "--log-level", "info"]

# two functions; the rule backend completes "return <params joined by +>"
SOURCE = "def add(a, b):\n    \n\n\ndef scale(value, factor):\n    return\n"
URI = "file:///work/example.py"


def server_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the default defect log never lands in ~
    env["PYTHONPATH"] = str(ROOT)
    return env


@contextlib.asynccontextmanager
async def session(
    options: dict[str, Any] | None,
    tmp_path: Path,
    *,
    open_source: str | None = SOURCE,
    capabilities: lsp.ClientCapabilities | None = None,
    server_args: tuple[str, ...] = (),
) -> AsyncIterator[LanguageClient]:
    """A started, initialized server (``server_args`` added to its command line); ``open_source``
    is opened as ``URI`` when given."""
    config = ClientServerConfig(server_command=[*SERVER, *server_args], server_env=server_env(tmp_path))
    client = await config.start()
    assert isinstance(client, LanguageClient)
    verdicts: list[Any] = []
    client.verdicts = verdicts  # type: ignore[attr-defined]

    @client.feature("cctest/verdict")
    def _verdict(params: Any) -> None:
        verdicts.append(params)

    models: list[Any] = []  # cctest/model: a local model's load (loading, then ready or failed)
    client.models = models  # type: ignore[attr-defined]

    @client.feature("cctest/model")
    def _model(params: Any) -> None:
        models.append(as_dict(params))

    client.init_result = await client.initialize_session(  # type: ignore[attr-defined]
        lsp.InitializeParams(
            capabilities=capabilities or client_capabilities("neovim"), initialization_options=options
        )
    )
    if open_source is not None:
        open_doc(client, open_source)
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 20)
        await client.stop()


def open_doc(client: LanguageClient, text: str, uri: str = URI, version: int = 1) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )


def rules_options(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"backend": "rules", "mutants": 4, "defectLog": str(tmp_path / "defects.sqlite3"), **extra}


async def inline(
    client: LanguageClient, line: int, character: int, uri: str = URI
) -> lsp.InlineCompletionList:
    result = await client.text_document_inline_completion_async(
        lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=character),
            context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Automatic),
        )
    )
    assert isinstance(result, lsp.InlineCompletionList)
    return result


async def complete(client: LanguageClient, line: int, character: int, uri: str = URI) -> lsp.CompletionList:
    result = await client.text_document_completion_async(
        lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=character),
        )
    )
    assert isinstance(result, lsp.CompletionList)
    return result


def send_raw(client: LanguageClient, msg_id: str, method: str, params: Any) -> asyncio.Future[Any]:
    """Send a request exactly as given (no client-side typing), e.g. malformed params."""
    from concurrent.futures import Future

    fut: Future[Any] = Future()
    client.protocol._request_futures[msg_id] = fut
    client.protocol._send_data(JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params))
    return asyncio.wrap_future(fut)


async def custom(client: LanguageClient, method: str, params: Any = None) -> Any:
    return await client.protocol.send_request_async(method, params)


async def command(client: LanguageClient, name: str, *args: Any) -> Any:
    return await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=list(args))
    )


def as_dict(value: Any) -> Any:
    """Custom requests' results arrive as pygls ``Object``s or dicts, depending on nesting."""
    if isinstance(value, dict):
        return {k: as_dict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return [as_dict(v) for v in value]
    if hasattr(value, "_asdict"):
        return {k: as_dict(v) for k, v in value._asdict().items()}
    return value


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")
