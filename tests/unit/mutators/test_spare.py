"""Renames that spare the code after the cursor (``generate_mutants(spare=...)``): where a renaming
scheme has a choice it takes a name that code does not use, else its usual one; the supply and the
schemes' spread stay as they were (``near=False``; with ``near``, the default, a rename that cannot
spare it is kept only as its family's first: test_near.py). The engine asks for it
(``spare_suffix``) only where the model reads that code before the prompt, and only for the part
of it the model is shown."""

from __future__ import annotations

import collections
import random
import sys
from pathlib import Path

import pytest

from cctest.backends.base import FimLayout
from cctest.backends.hf import HFBackend
from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.mutators import generate_mutants, nearest_the_cursor, used_names
from cctest.types import Mutant, Prompt

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from mutant_supply import stdlib_positions  # noqa: E402

PROMPT = (
    "def report(rows, width):\n"
    "    header = 'name'\n"
    "    total = 0\n"
    "    for row in rows:\n"
    "        total += row.size\n"
    "    line = header.ljust(width)\n"
    "    "
)
# uses width, total and line (the parameter and locals nearest the cursor), not rows, header or row
SUFFIX = "print(line)\n    return total, line, width\n"
RENAMING = ("REP_R", "REP_C", "REL_R", "REL_C")


def _touches(m: Mutant, text: str) -> bool:
    return bool(used_names(text) & set(m.renames.values()))


def _first_of_each(mutants: list[Mutant]) -> dict[str, Mutant]:
    first: dict[str, Mutant] = {}
    for m in mutants:
        first.setdefault(m.scheme, m)
    return first


def test_each_renaming_scheme_takes_a_name_the_suffix_does_not_use() -> None:
    usual = generate_mutants(PROMPT, k=4, context=SUFFIX, schemes=RENAMING).mutants
    spared = generate_mutants(PROMPT, k=4, context=SUFFIX, spare=SUFFIX, schemes=RENAMING).mutants
    # the schemes' own order renames what is nearest the cursor: names the suffix uses
    assert sorted(m.scheme for m in usual) == sorted(RENAMING)
    assert all(_touches(m, SUFFIX) for m in usual)
    # sparing, each scheme still supplies its mutant, now one that leaves the suffix alone
    assert sorted(m.scheme for m in spared) == sorted(RENAMING)
    assert not any(_touches(m, SUFFIX) for m in spared)
    assert {m.renames["Param1"] for m in spared if m.scheme == "REP_R"} == {"rows"}
    # of the locals the suffix does not use, the one first used nearest the cursor (near, the
    # default), else the schemes' own order
    assert {m.renames["LocalVar1"] for m in spared if m.scheme == "REL_R"} == {"row"}
    far = generate_mutants(PROMPT, k=4, context=SUFFIX, spare=SUFFIX, schemes=RENAMING, near=False).mutants
    assert {m.renames["LocalVar1"] for m in far if m.scheme == "REL_R"} == {"header"}
    # with more room, the names the suffix uses come after the others: nothing is lost
    usual10 = generate_mutants(PROMPT, k=10, context=SUFFIX, near=False).mutants
    spared10 = generate_mutants(PROMPT, k=10, context=SUFFIX, spare=SUFFIX, near=False).mutants
    assert len(spared10) == len(usual10) == 10
    assert collections.Counter(m.scheme for m in spared10) == collections.Counter(m.scheme for m in usual10)
    firsts = _first_of_each(spared10)
    assert not any(_touches(firsts[s], SUFFIX) for s in RENAMING)


def test_the_usual_choice_when_every_name_is_in_the_suffix() -> None:
    everything = "print(rows, width, header, total, row, line)\n"
    usual = generate_mutants(PROMPT, k=10, context=everything, near=False).mutants
    spared = generate_mutants(PROMPT, k=10, context=everything, spare=everything, near=False).mutants
    assert [m.text for m in spared] == [m.text for m in usual]
    assert any(m.renames for m in spared)


def test_only_the_spared_text_counts_not_the_context() -> None:
    # the context (a test file, say) may use every name; only ``spare`` steers the renames
    context = SUFFIX + "report(rows=[], width=3, header=1, row=2)\n"
    usual = generate_mutants(PROMPT, k=4, context=context, schemes=RENAMING).mutants
    spared = generate_mutants(PROMPT, k=4, context=context, spare="pass\n", schemes=RENAMING).mutants
    assert [m.text for m in spared] == [m.text for m in usual]


def test_supply_and_spread_unchanged_at_stdlib_positions() -> None:
    changed = 0
    for _, before, after in stdlib_positions(8, random.Random(20231116)):
        shown = after[:1000]  # about what the bundled model is shown of it
        usual = generate_mutants(before, k=10, context=after, near=False).mutants
        spared = generate_mutants(before, k=10, context=after, spare=shown, near=False).mutants
        assert len(spared) == len(usual)
        assert collections.Counter(m.scheme for m in spared) == collections.Counter(m.scheme for m in usual)
        # each scheme's first mutant touches the shown suffix only where the usual one did too
        firsts, usual_firsts = _first_of_each(spared), _first_of_each(usual)
        for scheme, m in firsts.items():
            assert not _touches(m, shown) or _touches(usual_firsts[scheme], shown)
        changed += sum(_touches(m, shown) for m in usual) > sum(_touches(m, shown) for m in spared)
    assert changed >= 2  # the preference had a choice to make at some of them, and made it


def test_nearest_the_cursor_puts_renames_of_spared_names_last() -> None:
    pool = generate_mutants(PROMPT, k=20, context=SUFFIX).mutants
    assert any(_touches(m, SUFFIX) for m in pool) and len(pool) > 6
    plain = nearest_the_cursor(PROMPT, pool, 6)
    spared = nearest_the_cursor(PROMPT, pool, 6, SUFFIX)
    assert any(_touches(m, SUFFIX) for m in plain)  # nearest the cursor: names the suffix uses
    assert len(spared) == 6 and not any(_touches(m, SUFFIX) for m in spared)
    families = {m.scheme.split("_")[0] for m in plain}
    assert {m.scheme.split("_")[0] for m in spared} == families


@pytest.fixture(scope="module")
def spm() -> HFBackend:
    """The bundled model: it declares starcoder-spm, so it reads the code after the cursor first."""
    return HFBackend(None, threads=1)


def test_renames_spare_the_suffix_only_where_the_model_reads_it_first(spm: HFBackend) -> None:
    psm, ltr = spm.with_options(fim="starcoder"), spm.with_options(fim="off")
    assert spm.reads_suffix_first and not psm.reads_suffix_first and not ltr.reads_suffix_first
    assert not isinstance(RuleBackend(), FimLayout)  # left to right: no layout to ask
    prompt = Prompt(text=PROMPT, suffix=SUFFIX)
    settings = Settings(mutants=4, schemes=RENAMING)

    texts, suffixes = Engine(spm, settings).rows(prompt)
    assert len(texts) == 5 and suffixes == [SUFFIX] * 5  # every row keeps the prompt's suffix
    usual = Engine(RuleBackend(), settings).rows(prompt)
    assert sum(s != SUFFIX for s in usual[1]) == 4  # the usual names are all used after the cursor
    # prefix first, left to right, or the setting off: the schemes' own order
    for backend, spare in ((psm, True), (ltr, True), (spm, False)):
        assert Engine(backend, settings.replace(spare_suffix=spare)).rows(prompt) == usual
    # in the rows the SPM model reads, the mutants now share the suffix and the prompt's start
    fim = spm.fim_inputs(texts, suffixes, 32)
    assert fim is not None and all(row.startswith(fim[0][: fim[0].index("def report")]) for row in fim)


def test_only_the_part_of_the_suffix_the_model_is_shown_is_spared(spm: HFBackend) -> None:
    far = "pass\n" * 4 * spm.context + SUFFIX  # the names used only beyond what fits
    shown = spm.suffix_shown(PROMPT, far)
    assert 0 < len(shown) < len(far) and far.startswith(shown)
    fim = spm.fim_inputs([PROMPT], [far], spm.options.max_new_tokens)
    assert fim is not None and "<fim_suffix>" + shown + "<fim_middle>" in fim[0]
    settings = Settings(mutants=4, schemes=RENAMING)
    prompt = Prompt(text=PROMPT, suffix=far)
    # nothing the model reads uses a renamed name: the usual choice, though the far end changes
    assert Engine(spm, settings).rows(prompt) == Engine(RuleBackend(), settings).rows(prompt)
