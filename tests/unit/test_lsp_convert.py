"""lsp_server.convert and lsp_server.settings: prompts at LSP positions, edit ranges, verdict lines,
and the wire settings (every Settings field described for clients)."""

from __future__ import annotations

import dataclasses

import pytest
from lsprotocol import types as lsp
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from cctest.config import Settings
from cctest.types import Completion, EngineResult, Prompt, Verdict
from lsp_server import convert
from lsp_server import settings as wire


def doc(text: str, encoding: lsp.PositionEncodingKind = lsp.PositionEncodingKind.Utf16) -> TextDocument:
    return TextDocument("file:///t.py", text, version=1, position_codec=PositionCodec(encoding))


def pos(line: int, character: int) -> lsp.Position:
    return lsp.Position(line=line, character=character)


def test_prompt_splits_at_the_cursor() -> None:
    p = convert.prompt_at(doc("ab\ncd\n"), pos(1, 1))
    assert (p.text, p.suffix, p.line, p.col) == ("ab\nc", "d\n", 2, 2)
    # UTF-16: the emoji counts twice, so character 3 is after it
    p = convert.prompt_at(doc("x😋y\n"), pos(0, 3))
    assert (p.text, p.suffix, p.col) == ("x😋", "y\n", 3)


def test_edit_inserts_at_the_cursor_without_the_trailing_newline() -> None:
    d = doc("def f(a):\n    \n")
    rng, text = convert.edit_for(d, pos(1, 4), "return a\n")
    assert text == "return a" and rng == lsp.Range(start=pos(1, 4), end=pos(1, 4))


def test_edit_replaces_text_the_completion_repeats() -> None:
    d = doc("def f(a):\n    ret\n")
    rng, text = convert.edit_for(d, pos(1, 7), "    return a\n")
    assert text == "    return a" and rng == lsp.Range(start=pos(1, 0), end=pos(1, 7))
    # a plain continuation is not mistaken for a repeat
    rng, text = convert.edit_for(d, pos(1, 7), "urn a\n")
    assert text == "urn a" and rng.start == pos(1, 7)


def test_edit_covers_the_rest_of_the_line_it_ends_with() -> None:
    d = doc("x = add(😋)\n")  # cursor after the emoji: UTF-16 character 10; the rest is ")"
    rng, text = convert.edit_for(d, pos(0, 10), ", 2)")
    assert text == ", 2)" and rng == lsp.Range(start=pos(0, 10), end=pos(0, 11))


def _result(original: str, others: list[str], outliers: tuple[int, ...], chosen: int | None) -> EngineResult:
    comps = tuple(
        Completion("original" if i == 0 else f"mutant:{i}:X", t, t) for i, t in enumerate([original, *others])
    )
    n = len(comps)
    return EngineResult(
        prompt=Prompt("p"),
        mutants=(),
        dropped_mutants=(),
        completions=comps,
        similarity=tuple(tuple(1.0 for _ in range(n)) for _ in range(n)),
        verdict=Verdict(
            outliers=outliers,
            chosen=chosen,
            no_results=tuple(i for i, c in enumerate(comps) if not c.text),
            counts=(0,) * n,
            threshold=1.0,
        ),
        timings_ms={},
    )


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (_result("a", ["a", "a"], (), 0), "cctest: 0/3 outliers · consistent"),
        (_result("x", ["a", "a", "a"], (0,), 1), "cctest: 1/4 outliers · repaired"),
        (_result("", ["a", "a"], (), 1), "cctest: 0/3 outliers · repaired (the original gave no result)"),
        (_result("", ["", ""], (), None), "cctest: 0/3 outliers · no result"),
    ],
)
def test_verdict_lines(result: EngineResult, text: str) -> None:
    assert convert.verdict_text(result, "repair") == text


def test_items_carry_the_acceptance_command() -> None:
    d = doc("def f(a):\n    \n")
    res = _result("x", ["return a\n", "return a\n"], (0,), 1)
    [item] = convert.completion_list(d, pos(1, 4), "return a\n", "rid", "v", res).items
    assert item.command.arguments == ["rid"] and item.text_edit.new_text == "return a" and item.detail == "v"
    assert "Original completion (replaced)" in item.documentation.value
    [inline] = convert.inline_completion(d, pos(1, 4), "return a\n", "rid").items
    assert inline.command.command == "cctest.accepted" and inline.insert_text == "return a"
    assert convert.inline_completion(d, pos(1, 4), "  \n", "rid").items == []


def test_every_setting_is_described_for_clients() -> None:
    names = [o.name for o in wire.OPTIONS]
    assert names == [wire.wire_name(f.name) for f in dataclasses.fields(Settings)]
    assert all(o.description and o.type for o in wire.OPTIONS)
    s, errors = Settings.from_mapping({o.name: o.default for o in wire.OPTIONS})
    assert errors == [] and s == Settings()  # the advertised defaults are the real ones


def test_unwrap_and_backend_key() -> None:
    assert wire.unwrap({"cctest": {"mode": "off"}}) == ({"mode": "off"}, [])
    assert wire.unwrap({"mode": "off"}) == ({"mode": "off"}, [])
    assert wire.unwrap(None) == ({}, [])
    assert wire.unwrap(3)[1] and wire.unwrap({"cctest": 3})[1]
    base = Settings(backend="rules")
    assert wire.backend_key(base) == wire.backend_key(base.replace(mode="monitor", mutants=3))
    assert wire.backend_key(base) != wire.backend_key(base.replace(max_new_tokens=8))
