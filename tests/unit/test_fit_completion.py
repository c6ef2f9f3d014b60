"""A completion fitted to the code after the cursor (the repeat cut) and to the completion scope,
on its own and through the engine."""

from __future__ import annotations

import asyncio

import pytest

from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.fit import cut_repeat, fit_completion
from cctest.types import Prompt

BODY = "def area(r):\n    "
BELOW = "\n\n\ndef volume(r, h):\n    return area(r) * h\n"


@pytest.mark.parametrize(
    ("prompt", "text", "suffix", "expected"),
    [
        # the model wrote the next function, which is already below the cursor
        (
            BODY,
            "return 3.14 * r * r\n\n\ndef volume(r, h):\n    return area(r) * h\n",
            BELOW,
            "return 3.14 * r * r\n",
        ),
        # ... and stopped after its first line: a single line that ends the completion counts
        (BODY, "return 3.14 * r * r\n\n\ndef volume(r, h):", BELOW, "return 3.14 * r * r\n"),
        # the rest of the cursor's line written again at the end of the first line
        ("total = area(", "2) * 3)", ") * 3)\n", "2"),
        # at column 0: the line under the cursor repeated
        ("def f(x):\n", "    y = x + 1\n    return y\n", "    return y\n", "    y = x + 1\n"),
        # no repeat: nothing cut (one matching line in the middle of more code is no repeat)
        (
            BODY,
            "x = r * r\n    return x\n    y = 1",
            "\n    return x\n\n\nprint(1)\n",
            "x = r * r\n    return x\n    y = 1",
        ),
        (BODY, "return r\n", "\n\nprint(area(2))\n", "return r\n"),
        (BODY, "return r\n", "   \n", "return r\n"),
    ],
)
def test_a_completion_is_cut_where_it_repeats_the_code_after_the_cursor(
    prompt: str, text: str, suffix: str, expected: str
) -> None:
    assert cut_repeat(prompt, text, suffix) == expected


def test_the_completion_scope() -> None:
    block = "a = r * r\n    return a\n"
    assert fit_completion(BODY, block, "", "block") == block
    assert fit_completion(BODY, block, "", "line") == "a = r * r"
    assert fit_completion(BODY, block, "", "auto") == block  # an empty line: a block
    assert fit_completion("    x = area(", "2)\n    y = 3\n", "", "auto") == "2)"  # inside a line: one
    assert fit_completion("def f():\n", "\n    return 1\n", "", "line") == "    return 1"
    settings, errors = Settings.from_mapping({"completionScope": "word"})
    assert settings.completion_scope == "block" and len(errors) == 1


def test_the_engine_fits_every_completion() -> None:
    backend = RuleBackend.from_spec(None)
    prompt = Prompt(text="def add(a, b):\n    ", suffix="\n\nprint(add(1, 2))\n")
    block = asyncio.run(Engine(backend, mutants=2).run(prompt))
    line = asyncio.run(Engine(backend, mutants=2, completion_scope="line").run(prompt))
    assert block.completions[0].text == "return a + b\n"
    assert [c.text for c in line.completions] == [c.text.split("\n")[0] for c in block.completions]
    # the suffix repeated: the engine cuts it from the completion
    repeating = Prompt(text="def add(a, b):\n", suffix="    return a + b\n")
    result = asyncio.run(Engine(backend, mutants=0).run(repeating))
    assert "return a + b" not in result.completions[0].text
