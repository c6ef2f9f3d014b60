"""The same mutant choice everywhere (``prefill_budget``, docs/mutators.md): ``cctest proxy`` sends
upstream exactly the rows the engine prepares in-process with the http backend, at a cursor where
the budget changes the choice (the schemes' own first k cost more than it allows)."""

from __future__ import annotations

from pathlib import Path

import openai
from proxy_helpers import Seen, openai_app, proxying, serving

from cctest.backends.http import HTTPBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.types import Prompt

FILLER = "".join(
    f"def helper_{i}(values):\n    total = 0\n    for value in values:\n        total += value * {i}\n"
    "    return total\n\n\n"
    for i in range(30)
)
BODY = "".join(f"    step_{i} = scale + offset * {i} - len(items)\n" for i in range(40))
BEFORE = (
    FILLER + "def summarize(items, scale, offset):\n    count = len(items)\n" + BODY + "    result = count + "
)


async def test_the_proxy_completes_the_rows_the_engine_chooses_within_the_budget(tmp_path: Path) -> None:
    seen = Seen()
    settings = Settings(decide_after=0, defect_log=str(tmp_path / "d.sqlite3"))
    async with serving(openai_app(seen, odd=set())) as up:
        async with proxying(up, settings=settings) as (url, proxy):
            client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0)
            await client.completions.create(model="m", prompt=BEFORE, max_tokens=16, temperature=0)
            await proxy.drain()
        async with HTTPBackend(up) as http:
            chosen = Engine(http, settings).prepare(Prompt(BEFORE))
            unbounded = Engine(http, settings.replace(prefill_budget=0)).prepare(Prompt(BEFORE))
    (body,) = seen.bodies("/v1/completions")
    assert body["prompt"] == list(chosen.texts) and len(chosen.texts) == 1 + settings.mutants
    assert chosen.texts != unbounded.texts  # the budget changed the choice at this cursor
