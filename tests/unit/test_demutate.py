"""De-mutation: invented identifiers mapped back in completions that need not parse."""

from __future__ import annotations

import pytest

from cctest.demutate import demutate, rename, uses_any

R = {"Param1": "b", "LocalVar1": "res"}


@pytest.mark.parametrize(
    "completion,expected",
    [
        ("Param1 + 1", "b + 1"),  # mid-line start
        (" LocalVar1 + Param1\n    return LocalVar1", " res + b\n    return res"),
        ("obj.Param1 + Param1", "obj.Param1 + b"),  # attribute names are not variables
        ("f(Param1=Param1)", "f(Param1=b)"),  # a keyword names f's parameter
        ("x == Param1", "x == b"),  # comparison, not a keyword
        ("'Param1' + \"Param1\" + Param1", "'Param1' + \"Param1\" + b"),
        ("Param1  # uses Param1", "b  # uses Param1"),
        ('f"{Param1!r:>{LocalVar1}} {{Param1}}"', 'f"{b!r:>{res}} {{Param1}}"'),
        ("Param10 + Param1_ + xParam1", "Param10 + Param1_ + xParam1"),  # whole identifiers only
        ("'unterminated Param1\nParam1", "'unterminated Param1\nb"),
        ('"""open triple Param1', '"""open triple Param1'),
        ("(Param1,\n   LocalVar1", "(b,\n   res"),  # unclosed bracket
        ("1e5 + Param1", "1e5 + b"),
        ("", ""),
    ],
)
def test_demutate(completion, expected):
    assert demutate(completion, R) == expected


def test_demutate_without_renames_is_identity():
    assert demutate("anything Param1", {}) == "anything Param1"


def test_rename_is_the_inverse_direction():
    assert rename("return b + obj.b + f(b=b)", {"b": "Param1"}) == "return Param1 + obj.b + f(b=Param1)"


def test_uses_any():
    assert uses_any("x = TempVar + 1", {"TempVar"})
    assert not uses_any("x = obj.TempVar + 'TempVar'  # TempVar", {"TempVar"})
    assert not uses_any("x", [])
