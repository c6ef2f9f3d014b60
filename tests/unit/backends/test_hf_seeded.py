"""The local backend samples each prompt by a seed of its own (``SeedsEachRequest``, issue 29
item 7): a prompt's answer for a seed is the same alone, inside a batch of other prompts and
seeds, and in another order; other seeds give other answers; greedy answers ignore the seed."""

from __future__ import annotations

from backend_prompts import OTHERS

from cctest.backends.base import GenerationOptions, SeedsEachRequest
from cctest.backends.hf import HFBackend

SAMPLED = GenerationOptions(max_new_tokens=16, temperature=0.8, top_p=0.95)
CHAT = [[{"role": "user", "content": "Write a Python function that reverses a list."}]]


async def test_an_answer_depends_on_its_prompt_and_seed_alone(hf_model: HFBackend) -> None:
    backend = hf_model.with_options(SAMPLED)
    assert isinstance(backend, SeedsEachRequest)
    prompt, other = OTHERS[0], OTHERS[1]
    alone = await backend.complete_seeded([prompt], [11])
    batched = await backend.complete_seeded([other, prompt, prompt, other], [5, 11, 12, 11])
    reordered = await backend.complete_seeded([prompt, other, prompt], [12, 5, 11])
    assert isinstance(alone[0], str)
    assert batched[1] == reordered[2] == alone[0]
    assert batched[2] == reordered[0] and batched[0] == reordered[1]
    # the backend's own --seed does not enter a seeded answer
    assert await hf_model.with_options(SAMPLED, seed=99).complete_seeded([prompt], [11]) == alone
    # different seeds give different answers (at least sometimes)
    many = await backend.complete_seeded([prompt] * 6, list(range(6)))
    assert len(set(many)) > 1


async def test_chats_are_sampled_by_their_own_seeds(hf_model: HFBackend) -> None:
    backend = hf_model.with_options(SAMPLED)
    alone = await backend.chat_seeded(CHAT, [3])
    batched = await backend.chat_seeded([*CHAT, *CHAT, *CHAT], [4, 3, 5])
    assert isinstance(alone[0], str) and batched[1] == alone[0]
    assert await backend.chat_seeded([], []) == []


async def test_greedy_answers_are_one_batch_and_ignore_the_seed(hf_model: HFBackend) -> None:
    backend = hf_model.with_options(GenerationOptions(max_new_tokens=16))
    plain = await backend.complete(OTHERS[:2])
    assert await backend.complete_seeded(OTHERS[:2], [1, 2]) == plain
    assert await backend.complete_seeded(OTHERS[:2], [7, 7]) == plain
