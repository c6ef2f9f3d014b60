"""The command line's options as a new user meets them: one name per meaning (old spellings still
work, with one line saying which name to use), each suite's ``--help`` led by its own options,
"did you mean" for a mistyped option, and a hub id given as ``--model``."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from cctest.cli import build_parser
from cctest.config import missing_model_dir

ROOT = Path(__file__).resolve().parents[2]
CCTEST = Path(sys.executable).parent / "cctest"
SAMPLE = ROOT / "tests" / "data" / "mutators" / "sample.py"


def cctest_run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CCTEST), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_a_hub_id_as_model_says_cctest_does_not_download_and_how_to(tmp_path: Path) -> None:
    r = cctest_run("complete", f"{SAMPLE}:12:5", "--model", "Qwen/Qwen2.5-Coder-0.5B", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "cctest loads local directories only (it never downloads)" in r.stderr
    assert (
        "huggingface-cli download Qwen/Qwen2.5-Coder-0.5B --local-dir models/Qwen2.5-Coder-0.5B" in r.stderr
    )
    assert r.stderr.rstrip().endswith("then pass --model models/Qwen2.5-Coder-0.5B.")


@pytest.mark.parametrize("model", ["./missing", "/no/such/dir", "~/no-such-model", "a/b/c", "../x"])
def test_a_missing_path_that_is_no_hub_id_is_only_missing(model: str) -> None:
    assert missing_model_dir(model) == f"the model directory {Path(model).expanduser()} does not exist."


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_paraphrase_order_is_order_and_the_old_spellings_still_work_with_one_line(capsys) -> None:
    args = parse("bench", "operational", "--order", "3", "--widen-order", "2")
    assert (args.order, args.widen_order) == (3, 2) and capsys.readouterr().err == ""
    args = parse("bench", "operational", "--k", "3", "--widen-k", "2")
    assert (args.order, args.widen_order) == (3, 2)
    assert capsys.readouterr().err.splitlines() == [
        "cctest: warning: --k is deprecated and will be removed; use --order.",
        "cctest: warning: --widen-k is deprecated and will be removed; use --widen-order.",
    ]
    assert parse("bench", "operational").order == 5  # the default, the alias given or not
    help_text = cctest_run("bench", "operational", "--help").stdout
    assert "--order K" in help_text and "--k " not in help_text and "--widen-k" not in help_text


def test_k_is_the_number_of_mutants_wherever_it_is_an_option() -> None:
    for argv in (["mutate", "f.py:1:1"], ["complete", "f.py:1:1"], ["bench", "--dataset", "humaneval"]):
        assert parse(*argv, "-k", "4").mutants == parse(*argv, "--mutants", "4").mutants == 4


@pytest.mark.parametrize("suite", ["tasks", "syntactic", "turbulence", "operational"])
def test_a_suites_help_leads_with_its_own_options_then_the_shared_groups(suite: str) -> None:
    r = cctest_run("bench", suite, "--help")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == f"usage: cctest bench {suite} [options]"
    headings = [line[:-1] for line in lines if line.endswith(":") and not line.startswith(" ")]
    assert headings[0] == f"cctest bench {suite}"
    assert headings[-4:] == ["tasks and the oracle (every task suite)", "run", "test execution", "model"]
    own = lines[lines.index(f"cctest bench {suite}:") + 1 :]
    assert own[0].split()[:2] == ["-h,", "--help"]
    # the completion benchmark's options are not this suite's; the whole help fits a screen or two
    assert "--mutants" not in r.stdout and "--thresholds" not in r.stdout and len(lines) < 150


def test_the_benchmarks_help_lists_the_suites_and_actions() -> None:
    out = cctest_run("bench", "--help").stdout
    assert "{tasks,syntactic,turbulence,operational,evaluate,compare,report,export}" in out
    assert "-k MUTANTS, --mutants MUTANTS" in out and "--equations" not in out


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        (
            ["complete", f"{SAMPLE}:12:5", "--modle", "foo"],
            "Unrecognized arguments: --modle foo; did you mean --model?",
        ),
        (
            ["bench", "syntactic", "--equatoins=linear"],
            "Unrecognized arguments: --equatoins=linear; did you mean --equations?",
        ),
        (["bench", "syntactic", "--modle", "x"], "Unrecognized arguments: --modle x; did you mean --model?"),
        (["bench", "syntactic", "-k", "3"], "Unrecognized arguments: -k 3."),
        (["mutate", f"{SAMPLE}:12:5", "--zzzzzz"], "Unrecognized arguments: --zzzzzz."),
        (["bnech"], "did you mean bench?"),
        (["bench", "syntatic"], "did you mean syntactic?"),
    ],
)
def test_a_mistyped_option_or_command_is_one_sentence_with_a_did_you_mean(
    argv: list[str], sentence: str, tmp_path: Path
) -> None:
    r = cctest_run(*argv, cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr.count("\n")) == (2, "", 1), r.stderr
    assert r.stderr.startswith("cctest: ") and r.stderr.rstrip().endswith(sentence), r.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_deprecated_spelling_is_never_suggested() -> None:
    r = cctest_run("bench", "operational", "--kk", "3")
    assert r.returncode == 2 and "did you mean --k?" not in r.stderr


def test_shared_options_before_the_suites_name_are_kept() -> None:
    args = parse("bench", "--backend", "rules", "--seed", "7", "--out", "r", "syntactic", "--variants", "3")
    assert (args.action, args.backend, args.seed, args.out, args.variants) == (
        "syntactic",
        "rules",
        7,
        "r",
        3,
    )
    args = parse("bench", "syntactic", "--backend", "rules", "--seed", "7")
    assert (args.backend, args.seed, args.out, args.limit, args.workers) == ("rules", 7, None, None, 2)
    assert parse("bench", "--dataset", "syntactic", "operational").dataset == "syntactic"
    assert parse("bench", "operational", "--dataset", "syntactic").dataset == "syntactic"
    assert parse("bench", "compare", "a", "b", "--out", "c").out == "c"
    assert parse("bench", "--out", "c", "compare", "a", "b").out == "c"
    assert not any(name.startswith("_cctest") for name in vars(parse("bench", "syntactic")))


def test_a_benchmark_option_before_a_suites_name_is_refused(tmp_path: Path) -> None:
    r = cctest_run("bench", "-k", "4", "syntactic", "--backend", "rules", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "cctest: -k is an option of cctest bench --dataset, not of cctest bench syntactic.\n"
    assert list(tmp_path.iterdir()) == []
