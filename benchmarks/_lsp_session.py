"""A real ``cctest-lsp`` process behind a pygls client, for the benchmarks that measure it."""

from __future__ import annotations

import sys
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient


async def start_session(
    client: LanguageClient, options: dict[str, Any], docs: dict[str, str], log_level: str = "warning"
) -> int:
    """Start the server over stdio, initialize it with ``options``, open ``docs``; its pid."""
    await client.start_io(sys.executable, "-m", "lsp_server", "--log-level", log_level)
    pid = client._server.pid  # type: ignore[union-attr]
    await client.initialize_async(
        lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), initialization_options=options)
    )
    client.initialized(lsp.InitializedParams())
    for uri, text in docs.items():
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
    return int(pid)
