"""``Engine.prepare``: the rows a run sends and the mutants they come from, for a caller that maps
a row's text back itself (``cctest proxy`` streaming the chosen row)."""

from __future__ import annotations

import asyncio

from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.demutate import demutate
from cctest.engine import Engine
from cctest.types import Prompt

PROMPT = Prompt("def count(items):\n    total = 0\n    for item in items:\n        ", "\n    return total\n")


def test_prepare_gives_the_rows_and_mutants_run_uses() -> None:
    engine = Engine(RuleBackend(), Settings(mutants=3))
    prepared = engine.prepare(PROMPT)
    result = asyncio.run(engine.run(PROMPT))
    assert prepared.texts[0] == PROMPT.text and prepared.suffixes[0] == PROMPT.suffix
    assert prepared.mutants == result.mutants and len(prepared.texts) == len(result.completions)
    assert (list(prepared.texts), list(prepared.suffixes)) == engine.rows(PROMPT)
    assert prepared.renames(0) == {}
    for i, m in enumerate(prepared.mutants, start=1):
        assert prepared.texts[i] == m.text and prepared.renames(i) == dict(m.renames)
        c = result.completions[i]
        if c.is_result:
            assert demutate(c.raw, prepared.renames(i)) == c.text
