"""The code after the cursor reaches the backend in each mutant's own names."""

from __future__ import annotations

from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.types import Prompt


class SuffixRecorder(RuleBackend):
    """The rule backend, also keeping the suffixes each batch came with."""

    def __init__(self) -> None:
        super().__init__()
        self.suffixes: list[list[str] | None] = []

    async def complete(self, prompts, *, suffixes=None):  # type: ignore[no-untyped-def]
        self.suffixes.append(None if suffixes is None else list(suffixes))
        return await super().complete(prompts, suffixes=suffixes)


async def test_renamed_mutants_get_renamed_suffixes():
    prompt = Prompt(
        text="def scale(values):\n    factor = 2\n    ", suffix="\n    return [v * factor for v in values]\n"
    )
    backend = SuffixRecorder()
    result = await Engine(backend, Settings(schemes=("REL_R", "REL_C"), mutants=4)).run(prompt)
    assert result.mutants
    [suffixes] = backend.suffixes
    assert suffixes is not None and suffixes[0] == prompt.suffix
    for m, s in zip(result.mutants, suffixes[1:], strict=True):
        ((new, old),) = m.renames.items()
        assert old == "factor"
        assert s == prompt.suffix.replace("factor", new)


async def test_no_suffix_sends_none():
    backend = SuffixRecorder()
    await Engine(backend, Settings(mutants=2)).run("def f(x):\n    y = x\n    ")
    assert backend.suffixes == [None]
