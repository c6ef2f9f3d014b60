"""Unopened documents: only regular UTF-8 files under the size limit are read, and only once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.workspace import Workspace

from lsp_server.documents import DocumentUnavailable, document, read_bounded


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    workspace = Workspace(None)
    doc = document(workspace, path.as_uri())
    path.write_text("changed\n")
    assert doc.source == "x = 1\n"  # read once, not on every access as pygls would


def test_an_open_document_is_the_clients_copy(tmp_path: Path) -> None:
    workspace = Workspace(None)
    uri = (tmp_path / "open.py").as_uri()
    item = lsp.TextDocumentItem(uri=uri, language_id="python", version=3, text="y = 2\n")
    workspace.put_text_document(item)
    assert document(workspace, uri).source == "y = 2\n"


def test_special_huge_and_binary_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.py"
    with huge.open("wb") as f:
        f.truncate(64 * 1024 * 1024)
    binary = tmp_path / "bin.py"
    binary.write_bytes(b"\xff\xfe\xfa")
    cases = {"/dev/zero": "not a regular file", str(fifo): "not a regular file", str(huge): "is over"}
    cases[str(binary)] = "not UTF-8"
    cases[str(tmp_path / "missing.py")] = "cannot be read"
    for path, why in cases.items():
        with pytest.raises(DocumentUnavailable, match=why):
            read_bounded(path)
    with pytest.raises(DocumentUnavailable, match="names no file"):
        document(Workspace(None), "untitled:Untitled-1")
