"""Cursor locations and safe reading of source files."""

from __future__ import annotations

import pytest

from cctest.document import offset_of, parse_location, prompt_at, read_source
from cctest.errors import InputError, PositionError


def test_one_based_cursor_before_the_character_at_col():
    text = "def f(a):\n    return a\n"
    p = prompt_at(text, 2, 5)
    assert p.text == "def f(a):\n    " and p.suffix == "return a\n"
    assert prompt_at(text, 2, 13).text == text.rstrip("\n")  # COL = length + 1: end of line
    assert offset_of(text, 3, 1) == len(text)


@pytest.mark.parametrize("line,col", [(0, 1), (4, 1), (1, 11), (2, 14)])
def test_positions_outside_the_document(line, col):
    with pytest.raises(PositionError):
        offset_of("def f(a):\n    return a\n", line, col)


@pytest.mark.parametrize("spec", ["a.py", "a.py:1", "a.py:x:2", "a.py:0:1"])
def test_bad_location_specs(spec):
    with pytest.raises(InputError):
        parse_location(spec)


def test_windows_paths_and_colons_in_names():
    assert parse_location("C:/src/a:b.py:3:4") == ("C:/src/a:b.py", 3, 4)


def test_read_source_errors(tmp_path):
    (tmp_path / "bin.py").write_bytes(b"\x00\x01abc")
    (tmp_path / "latin.py").write_bytes("x = 'é'\n".encode("latin-1"))
    (tmp_path / "crlf.py").write_bytes(b"a = 1\r\nb = 2\r\n")
    for name, fragment in [
        ("missing.py", "no such file"),
        ("bin.py", "binary"),
        ("latin.py", "UTF-8"),
        (".", "directory"),
    ]:
        with pytest.raises(InputError, match=fragment):
            read_source(tmp_path / name)
    assert read_source(tmp_path / "crlf.py") == "a = 1\nb = 2\n"
