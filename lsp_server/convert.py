"""cctest values <-> lsprotocol values: the only module where the two meet.

Positions: LSP counts columns in UTF-16 code units (the default position encoding); Python
strings index code points. pygls's ``TextDocument`` converts (``offset_at_position``,
``position_codec``), so everything here goes through it, never through raw ``character``.
"""

from __future__ import annotations

from typing import Any, Protocol

from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from cctest.types import EngineResult, Prompt

ACCEPT_COMMAND = "cctest.accepted"


class AnsweredJob(Protocol):
    """What an answer reads of the job behind it (``runner.JobResult``)."""

    @property
    def completion(self) -> str: ...
    @property
    def mode(self) -> str: ...


class Served(Protocol):
    """What an answer reads of a served request (``runner.Served``; named here by its shape, so
    that this module imports nothing of the server)."""

    @property
    def request_id(self) -> str: ...
    @property
    def doc(self) -> TextDocument: ...
    @property
    def job(self) -> AnsweredJob: ...
    @property
    def result(self) -> EngineResult | None: ...
    @property
    def current(self) -> bool: ...


def prompt_at(doc: TextDocument, position: lsp.Position) -> Prompt:
    """The prompt (document text before the cursor) and suffix (after it) at an LSP position."""
    source = doc.source
    lines = doc.lines  # split once: pygls's offset_at_position splits the document twice more
    # a copy: pygls clamps an out-of-range character by assigning to the position it is given
    server_pos = doc.position_codec.position_from_client_units(
        lines, lsp.Position(line=position.line, character=position.character)
    )
    offset = sum(map(len, lines[: server_pos.line])) + server_pos.character
    return Prompt(
        text=source[:offset],
        suffix=source[offset:],
        path=doc.uri,
        line=server_pos.line + 1,  # cctest's Prompt is 1-based, as in compiler messages
        col=server_pos.character + 1,
    )


def _line_text(doc: TextDocument, line: int) -> str:
    lines = doc.lines
    return lines[line].rstrip("\r\n") if line < len(lines) else ""


def edit_for(doc: TextDocument, position: lsp.Position, completion: str) -> tuple[lsp.Range, str]:
    """The range a completion replaces, and the text to put there.

    - the completion is inserted at the cursor, trailing newlines dropped (the line break after
      the cursor is already in the document);
    - a completion that repeats what the user typed on this line (``    return a`` after
      ``    ret``, as a model may restate the line) replaces the line from its start, so the typed
      part is not doubled;
    - a completion whose first line ends with the rest of the line after the cursor (``a, b)``
      with ``)`` after the cursor) replaces up to the end of the line, so it is not doubled either.
    """
    text = completion.rstrip("\n")
    server_pos = doc.position_from_client_units(position)
    line = _line_text(doc, server_pos.line)
    typed, rest = line[: server_pos.character], line[server_pos.character :]
    start = position
    if typed.strip() and text.startswith(typed) and text != typed:
        start = lsp.Position(line=position.line, character=0)
    end = position
    first = text.split("\n", 1)[0]
    if rest.strip() and first.endswith(rest):
        end = lsp.Position(line=position.line, character=doc.position_codec.client_num_units(line))
    return lsp.Range(start=start, end=end), text


def verdict_text(result: EngineResult | None, mode: str) -> str:
    """One line for the user, e.g. ``cctest: 2/11 outliers · repaired``."""
    if result is None:
        return "cctest: not checked yet (monitor mode)" if mode == "monitor" else "cctest"
    n = len(result.completions)
    k = len(result.outliers)
    if result.chosen is None:
        state = "no result"
    elif result.verdict.original_no_result:
        state = "repaired (the original gave no result)"
    elif result.original_is_outlier and result.completion != result.original_completion:
        state = "repaired"
    elif result.original_is_outlier:
        state = "original flagged"
    else:
        state = "consistent"
    return f"cctest: {k}/{n} outliers · {state}"


def _documentation(completion: str, verdict: str, result: EngineResult | None) -> lsp.MarkupContent:
    parts = [f"**{verdict}**", "", "```python", completion.rstrip("\n"), "```"]
    if result is not None and result.completion != result.original_completion:
        parts += [
            "",
            "Original completion (replaced):",
            "",
            "```python",
            result.original_completion.rstrip("\n"),
            "```",
        ]
    return lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n".join(parts))


def _accept_command(request_id: str) -> lsp.Command:
    return lsp.Command(title="cctest: completion accepted", command=ACCEPT_COMMAND, arguments=[request_id])


def inline_completion(
    doc: TextDocument, position: lsp.Position, completion: str, request_id: str
) -> lsp.InlineCompletionList:
    """The repaired completion as ghost text, with the command that reports its acceptance."""
    if not completion.strip():
        return lsp.InlineCompletionList(items=[])
    rng, text = edit_for(doc, position, completion)
    item = lsp.InlineCompletionItem(insert_text=text, range=rng, command=_accept_command(request_id))
    return lsp.InlineCompletionList(items=[item])


def completion_list(
    doc: TextDocument,
    position: lsp.Position,
    completion: str,
    request_id: str,
    verdict: str,
    result: EngineResult | None,
) -> lsp.CompletionList:
    """The repaired completion as one completion item whose detail shows the verdict."""
    if not completion.strip():
        return lsp.CompletionList(is_incomplete=True, items=[])
    rng, text = edit_for(doc, position, completion)
    # a TextEdit may not span lines; edit_for only ever widens within the cursor's line
    label = next((x.strip() for x in text.split("\n") if x.strip()), text)
    item = lsp.CompletionItem(
        label=label[:80],
        kind=lsp.CompletionItemKind.Snippet,
        detail=verdict,
        documentation=_documentation(text, verdict, result),
        insert_text_format=lsp.InsertTextFormat.PlainText,
        text_edit=lsp.TextEdit(range=rng, new_text=text),
        # clients filter with the text from the range start to the cursor: "" or the typed line,
        # and the text starts with both
        filter_text=text,
        sort_text="0",
        preselect=True,
        command=_accept_command(request_id),
        data={"requestId": request_id},
    )
    # incomplete: the answer depends on every keystroke, so the client must ask again
    return lsp.CompletionList(is_incomplete=True, items=[item])


def inline_answer(served: Served | None, position: lsp.Position) -> lsp.InlineCompletionList:
    """A served request as ghost text: none when nothing was served, or when the document changed
    while the job ran (the positions moved)."""
    if served is None or not served.current:
        return lsp.InlineCompletionList(items=[])
    return inline_completion(served.doc, position, served.job.completion, served.request_id)


def completion_answer(served: Served | None, position: lsp.Position) -> lsp.CompletionList:
    """A served request as a completion list (empty and incomplete as for ``inline_answer``)."""
    if served is None or not served.current:
        return lsp.CompletionList(is_incomplete=True, items=[])
    verdict = verdict_text(served.result, served.job.mode)
    return completion_list(
        served.doc, position, served.job.completion, served.request_id, verdict, served.result
    )


def defect_to_wire(record: Any) -> dict[str, Any]:
    """A defect record as JSON for ``cctest/defects`` (camelCase keys, like the settings)."""
    d = record.to_dict()
    return {
        "id": d["id"],
        "requestId": d["request_id"],
        "time": d["time"],
        "uri": d["uri"],
        "line": d["line"],
        "character": d["col"],
        "mode": d["mode"],
        "prompt": d["prompt"],
        "suffix": d["suffix"],
        "mutants": d["mutants"],
        "completions": d["completions"],
        "similarity": d["similarity"],
        "outliers": d["outliers"],
        "suspect": d["suspect"],
        "chosen": d["chosen"],
        "chosenCompletion": d["chosen_completion"],
        "originalCompletion": d["original_completion"],
        "model": d["model"],
        "settings": d["settings"],
        "timings": d["timings"],
        "accepted": d["accepted"],
        "acceptedTime": d["accepted_time"],
    }
