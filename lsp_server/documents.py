"""The text of the document a request names: the client's copy, or a bounded read from disk.

A client may ask for a completion in a document it never opened; pygls then reads the file
behind the URI on every access to ``TextDocument.source``, whatever it is: ``/dev/zero`` or a
named pipe reads forever, a huge file fills memory. ``document`` reads such a file once, and
only a regular file of at most ``MAX_UNOPENED_BYTES`` in UTF-8; anything else is a
``DocumentUnavailable`` with one sentence saying why, and the request gets an empty answer.
"""

from __future__ import annotations

import os
import stat
from urllib.parse import unquote

from pygls.workspace import TextDocument, Workspace

MAX_UNOPENED_BYTES = 4 * 1024 * 1024  # a Python file this large is not written by hand


class DocumentUnavailable(Exception):
    """The document is neither open nor a readable regular file of a sensible size."""


def document(workspace: Workspace, uri: str) -> TextDocument:
    """The open document ``uri``, or a read-once copy of the regular file it names."""
    doc = workspace.get_text_document(uri)  # unopened: pygls points it at the file (or nothing)
    if doc is workspace.text_documents.get(unquote(uri)):
        return doc
    if doc.path is None or not os.path.isabs(doc.path):
        raise DocumentUnavailable(f"{uri} is not open and names no file.")
    text = read_bounded(doc.path)
    return TextDocument(uri, source=text, position_codec=workspace.position_codec)


def read_bounded(path: str, limit: int = MAX_UNOPENED_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes."""
    try:
        # O_NONBLOCK: opening a named pipe must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise DocumentUnavailable(f"{path} cannot be read: {exc.strerror or exc}.") from exc
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)  # of what was opened, not of what the path names by now
        if not stat.S_ISREG(info.st_mode):
            raise DocumentUnavailable(f"{path} is not a regular file.")
        if info.st_size > limit:
            raise DocumentUnavailable(f"{path} is over {limit} bytes.")
        data = file.read(limit + 1)  # the file may have grown since fstat
    if len(data) > limit:
        raise DocumentUnavailable(f"{path} is over {limit} bytes.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentUnavailable(f"{path} is not UTF-8 text.") from exc


__all__ = ["MAX_UNOPENED_BYTES", "DocumentUnavailable", "document", "read_bounded"]
