"""``cctest serve`` lays a batch out around the prompt that has the most in common with the others
(``serve.lead_request``): a repair's rows come as requests of their own, in any order, and the
HF backend shares the first row's key/value cache with each row as far as it has tokens in common
with it. A mutant changed at the top of the window, arriving first, made every other row prefill
nearly all of its tokens."""

from __future__ import annotations

import asyncio

import aiohttp
from hypothesis import given, settings
from hypothesis import strategies as st
from serve_helpers import running

from cctest.backends.hf import HFBackend
from cctest.serve import common_chars, lead_request

BODY = "".join(
    f"def helper_{i}(values, factor):\n    total = 0\n    for v in values:\n        total += v * factor\n"
    f"    return total\n\n\n"
    for i in range(8)
)
PROMPT = "import os\n\n\n" + BODY + "def scale(values, factor):\n    "
EARLY = "import sys\n\n\n" + BODY + "def scale(values, factor):\n    "  # changed at the top
LATE = "import os\n\n\n" + BODY + "def scale(vals, factor):\n    "  # changed near the cursor


def test_the_request_sharing_most_with_the_batch_leads_it() -> None:
    assert lead_request([[EARLY], [LATE], [PROMPT], [LATE + "x"]]) == 1  # the first of the best
    assert lead_request([[EARLY], [LATE]]) == 0  # two rows: nothing to gain
    # a request of several prompts is judged by its first one in this batch
    assert lead_request([[EARLY], [LATE + "x", PROMPT], [LATE]]) == 1
    assert lead_request([[EARLY], [PROMPT, LATE + "x"], [LATE]]) == 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text("ab", max_size=12), min_size=1, max_size=3), min_size=3, max_size=8))
def test_the_choice_is_the_one_every_pair_compared_would_make(requests: list[list[str]]) -> None:
    """Scored through the sorted prompts' neighbours, each request's first prompt gets what it has
    in common with every other prompt of the batch, pair by pair: the same request leads."""
    texts = [p for prompts in requests for p in prompts]
    firsts, at = [], 0
    for prompts in requests:
        firsts.append(at)
        at += len(prompts)
    scores = [sum(common_chars(texts[i], t) for j, t in enumerate(texts) if j != i) for i in firsts]
    assert lead_request(requests) == max(range(len(requests)), key=scores.__getitem__)


async def test_a_batch_whose_first_request_is_an_early_mutant_is_laid_out_around_the_prompt(
    model: HFBackend,
) -> None:
    """The early mutant is asked first, the prompt and a late mutant 50 and 100 ms after, all in
    one batch. The batch's first row's prefix is what the model keeps for the next call
    (``reuse_prefix``): a plain request for the prompt afterwards reuses nearly all of its tokens,
    which it could not had the early mutant led the batch. Each answer is its own prompt's."""
    budget = 8
    async with running(model, wait_ms=300) as (url, batcher):
        async with aiohttp.ClientSession() as session:

            async def ask(prompt: str, delay: float) -> str:
                await asyncio.sleep(delay)
                body = {"prompt": prompt, "max_tokens": budget, "temperature": 0}
                async with session.post(f"{url}/v1/completions", json=body) as r:
                    return str((await r.json())["choices"][0]["text"])

            together = await asyncio.gather(ask(EARLY, 0), ask(PROMPT, 0.05), ask(LATE, 0.1))
            assert batcher.stats.sizes == [3]
            reused, run = model.loaded.prefix_tokens
            alone = await ask(PROMPT, 0)
            reused_now = model.loaded.prefix_tokens[0] - reused
            tokens = len(model.tokenizer(PROMPT)["input_ids"])
            assert reused_now >= tokens - 8, (reused_now, tokens)  # the prompt's prefix was kept
            others = [await ask(p, 0) for p in (EARLY, LATE)]
    assert together == [others[0], alone, others[1]]
