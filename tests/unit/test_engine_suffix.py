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


# renames spare the code after the cursor where the model reads it first (spare_suffix)
SPARE_PROMPT = (
    "def report(rows, width):\n"
    "    header = 'name'\n"
    "    total = 0\n"
    "    for row in rows:\n"
    "        total += row.size\n"
    "    line = header.ljust(width)\n"
    "    "
)
SPARE_SUFFIX = "print(line)\n    return total, line, width\n"
RENAMING = ("REP_R", "REP_C", "REL_R", "REL_C")


def test_renames_spare_the_suffix_only_where_the_model_reads_it_first() -> None:
    from cctest.backends.hf import HFBackend

    spm = HFBackend(None, threads=1)  # the bundled model declares starcoder-spm
    psm, ltr = spm.with_options(fim="starcoder"), spm.with_options(fim="off")
    assert spm.reads_suffix_first and not psm.reads_suffix_first and not ltr.reads_suffix_first
    assert not RuleBackend().reads_suffix_first
    prompt = Prompt(text=SPARE_PROMPT, suffix=SPARE_SUFFIX)
    settings = Settings(mutants=4, schemes=RENAMING)

    texts, suffixes = Engine(spm, settings).rows(prompt)
    assert len(texts) == 5 and suffixes == [SPARE_SUFFIX] * 5  # every row keeps the prompt's suffix
    usual = Engine(RuleBackend(), settings).rows(prompt)
    assert sum(s != SPARE_SUFFIX for s in usual[1]) == 4  # the usual names are all used after the cursor
    # prefix first, left to right, or the setting off: the schemes' own order
    for backend, spare in ((psm, True), (ltr, True), (spm, False)):
        assert Engine(backend, settings.replace(spare_suffix=spare)).rows(prompt) == usual
    # in the rows the SPM model reads, the mutants now share the suffix and the prompt's start
    fim = spm.fim_inputs(texts, suffixes, 32)
    assert fim is not None and all(row.startswith(fim[0][: fim[0].index("def report")]) for row in fim)


def test_only_the_part_of_the_suffix_the_model_is_shown_is_spared() -> None:
    from cctest.backends.hf import HFBackend

    spm = HFBackend(None, threads=1)
    far = "pass\n" * 4 * spm.context + SPARE_SUFFIX  # the names used only beyond what fits
    shown = spm.suffix_shown(SPARE_PROMPT, far)
    assert 0 < len(shown) < len(far) and far.startswith(shown)
    fim = spm.fim_inputs([SPARE_PROMPT], [far], spm.options.max_new_tokens)
    assert fim is not None and "<fim_suffix>" + shown + "<fim_middle>" in fim[0]
    settings = Settings(mutants=4, schemes=RENAMING)
    prompt = Prompt(text=SPARE_PROMPT, suffix=far)
    # nothing the model reads uses a renamed name: the usual choice, though the far end changes
    assert Engine(spm, settings).rows(prompt) == Engine(RuleBackend(), settings).rows(prompt)
