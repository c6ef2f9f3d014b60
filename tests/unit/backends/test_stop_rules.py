"""Where completions end: the boundary and stop-sequence rules shared by the HF and HTTP backends."""

from __future__ import annotations

import pytest

from cctest.backends._stop import BoundaryStopper, block_floor, indent_width, trim_completion


@pytest.mark.parametrize(
    ("prompt", "floor"),
    [
        ("def f(x):\n    return ", 4),  # mid-line in a body
        ("def f(x):\n", 1),  # a body starts next: anything at column 0 leaves it
        ("def f(x):\n    y = 1\n", 4),  # after a statement of the body
        ("class A:\n    def m(self):\n        ", 8),  # the user typed the indentation
        ("import os\n\n", 0),  # top level
        ("def f(x):\n    if x:  # why\n", 5),  # a block opener with a comment
        ("", 0),
        ("def f():\n\tx = 1\n", 8),  # a tab is 8 columns
    ],
)
def test_block_floor(prompt: str, floor: int) -> None:
    assert block_floor(prompt) == floor


def test_indent_width_expands_tabs_like_python() -> None:
    assert indent_width("\t x") == 9
    assert indent_width("  \tx") == 8
    assert indent_width("x") == 0


@pytest.mark.parametrize(
    ("prompt", "raw", "expected"),
    [
        # the rest of a return line, then the next top-level function: cut, blank lines dropped
        ("def f(x):\n    return ", "x + 1\n\n\ndef g():\n    pass\n", "x + 1\n"),
        # a body written from column 0 of an empty line, then module code: cut at the dedent
        ("def f(x):\n", "    y = x\n    return y\nprint(f(1))\n", "    y = x\n    return y\n"),
        # inside a method: the next method (indent 4) leaves the method body (indent 8)
        (
            "class A:\n    def m(self):\n        ",
            "return 1\n\n    def n(self):\n        return 2\n",
            "return 1\n",
        ),
        # nested blocks deeper than the cursor's are kept
        (
            "def f(xs):\n    for x in xs:\n",
            "        if x:\n            print(x)\n        else:\n            pass\n    return xs\n",
            "        if x:\n            print(x)\n        else:\n            pass\n",
        ),
        # a completion that starts a top-level function keeps it whole, up to the next one
        (
            "import os\n\n",
            "def main():\n    return 0\n\n\nclass B:\n    pass\n",
            "def main():\n    return 0\n",
        ),
        # a decorator opens the next definition too
        ("x = ", "1\n\n@cache\ndef g():\n    pass\n", "1\n"),
        # ... but decorators written first belong to the definition being written
        (
            "import functools\n\n",
            "@functools.cache\ndef g():\n    return 1\n\ndef h",
            "@functools.cache\ndef g():\n    return 1\n",
        ),
        # async def at column 0 is a boundary too
        ("def f():\n    return ", "1\n\nasync def g():\n    pass", "1\n"),
        # no boundary: the text comes back untouched (no trailing-whitespace surgery)
        ("def f(x):\n    return ", "x + 1  ", "x + 1  "),
        # an immediate dedent leaves nothing
        ("def f(x):\n", "print(1)\n", ""),
        # blank lines are never a boundary by themselves
        ("def f(x):\n    a = 1\n", "\n    b = 2\n", "\n    b = 2\n"),
    ],
)
def test_trim_boundaries(prompt: str, raw: str, expected: str) -> None:
    assert trim_completion(prompt, raw) == expected


def test_stop_sequences_cut_before_the_first_match() -> None:
    assert trim_completion("x = ", "foo(1)  # END more\n", stop=["# END"]) == "foo(1)"
    assert trim_completion("x = ", "a; b; c", stop=["c", "; b"]) == "a"
    # a stop sequence inside the cursor's block wins over a later boundary
    prompt = "def f(x):\n    return "
    assert trim_completion(prompt, "x\n    # stop\n    y\ndef g", stop=["# stop"]) == "x\n"
    # and an earlier boundary wins over a later stop sequence
    assert trim_completion(prompt, "x\ndef g():\n    # stop", stop=["# stop"]) == "x\n"


def test_boundaries_can_be_switched_off() -> None:
    raw = "x + 1\n\ndef g():\n    pass\n"
    assert trim_completion("def f(x):\n    return ", raw, boundaries=False) == raw
    assert trim_completion("def f(x):\n    return ", raw, stop=["def"], boundaries=False) == "x + 1\n\n"


@pytest.mark.parametrize(
    ("prompt", "raw"),
    [
        ("def f(x):\n    return ", "x + 1\n\n\ndef g():\n    pass\n"),
        ("class A:\n    def m(self):\n        ", "return 1\n\n    def n(self):\n        return 2\n"),
        ("import os\n\n", "def main():\n    return 0\n\n\nclass B:\n    pass\n"),
        (
            "x = ",
            "foo(1)  # END\n",
        ),
    ],
)
def test_streaming_stop_index_never_changes_its_mind(prompt: str, raw: str) -> None:
    """The HF backend checks each row after every token: a cut found on a prefix of the text
    must be the cut of the whole text, so stopping early never changes the result."""
    stopper = BoundaryStopper(prompt, ["# END"])
    final = stopper.stop_index(raw)
    assert final is not None
    seen = [stopper.stop_index(raw[:k]) for k in range(len(raw) + 1)]
    found = [s for s in seen if s is not None]
    assert found and all(s == final for s in found)
    assert seen[final] is None  # the cut is only known once the boundary line has started
