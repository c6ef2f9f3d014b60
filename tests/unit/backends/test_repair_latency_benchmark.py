"""The repair-latency figure's script runs with the bundled model (no threshold asserted: the
figure is reported, not tested)."""

from __future__ import annotations

import re
import subprocess

import pytest
from run_benchmark_script import run_benchmark_script


def _run(*args: str, timeout: int, script: str = "repair_latency.py") -> subprocess.CompletedProcess[str]:
    return run_benchmark_script(script, *args, timeout=timeout)


def test_repair_latency_script_runs_on_two_positions() -> None:
    done = _run("--positions", "2", "--models", "bundled", "--max-new-tokens", "8", timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    rows = re.findall(r"(\d+) variants\s+wall\s+\d+ / +\d+ ms\s+([\d.]+)x\s+CPU", out)
    assert len(rows) == 2  # one line per position, each with its ratio
    assert all(1 <= int(n) <= 11 and float(r) > 0 for n, r in rows)
    # the per-variant-count lines account for every position
    per = re.findall(r"^\s+(\d+) variants\s+(\d+) positions", out, flags=re.M)
    assert sum(int(p) for _, p in per) == 2
    assert re.search(r"every position\s+2 positions\s+wall: median\s+[\d.]+x p90\s+[\d.]+x", out)


def test_repair_latency_script_measures_decide_after_values_side_by_side() -> None:
    done = _run(
        "--positions", "1", "--models", "bundled", "--max-new-tokens", "12", "--decide-after", "0,4",
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # one line for the position, with a ratio for each value
    (line,) = re.findall(r"^  \S+:\d+ .*$", out, flags=re.M)
    assert len(re.findall(r"decide_after +(\d+): +\d+ variants .*? ([\d.]+)x +CPU", line)) == 2
    assert len(re.findall(r"^ratio cctest / plain \(bundled, decide_after [04]\):", out, flags=re.M)) == 2
    assert re.search(r"decide_after 4: the same repaired completion as 0 at [01]/1 positions", out)


def test_repair_latency_script_measures_prefill_budgets_side_by_side_over_seeds() -> None:
    done = _run(
        "--positions", "1", "--models", "bundled", "--max-new-tokens", "4", "--prefill-budget", "0,2",
        "--seeds", "7919,104729", "--no-suffix", timeout=1500,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "left to right" in out and "seed 7919, 104729" in out
    # a line per position (one of each seed), with a ratio for each budget
    lines = re.findall(r"^  \S+:\d+ .*$", out, flags=re.M)
    assert len(lines) == 2
    assert all(len(re.findall(r"budget [02]: +\d+ variants .*? ([\d.]+)x +CPU", line)) == 2 for line in lines)
    for budget in ("0", "2"):
        assert f"ratio cctest / plain (bundled, decide_after 16, prefill_budget {budget}):" in out
    assert len(re.findall(r"^  seed (?:7919|104729):$", out, flags=re.M)) == 4  # per seed, per budget


@pytest.mark.parametrize(
    "bad",
    [["--positions", "0"], ["--decide-after", "8,x"], ["--decide-after", "-1"], ["--prefill-budget", "-1"]],
)
def test_repair_latency_script_rejects_bad_arguments(bad: list[str]) -> None:
    done = _run(*bad, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1


def test_repair_prefill_tokens_script_runs_on_two_positions() -> None:
    script = "repair_prefill_tokens.py"
    done = _run("--positions", "2", "--by-scheme", timeout=300, script=script)
    assert done.returncode == 0, done.stderr
    assert len(re.findall(r"^  \S+:\d+ ", done.stdout, flags=re.M)) == 2  # a line per position
    # the rows as the bundled model reads them: the renames in the usual order | sparing the suffix
    # | sparing it with near_sites | and the mutants chosen within prefill_budget (the defaults)
    assert "FIM starcoder-spm (spm)" in done.stdout
    cells = re.findall(
        r"plain +\d+ +([\d.]+)x \| +([\d.]+)x \| +([\d.]+)x \| +([\d.]+)x$", done.stdout, flags=re.M
    )
    assert len(cells) == 2
    for ratios in cells:
        assert all(float(r) >= 1 for r in ratios)  # the prompt is among the rows
    assert len(re.findall(r"(?:spare off|spare on|spare\+near|budget)\s+2 positions", done.stdout)) == 8
    # --by-scheme: per scheme, its rows and their own tokens under each of the four settings
    cell = r"(?:\d+ rows +\d+ tok \( *\d+: +\d+\)|-) *"
    rows = re.findall(rf"^    [A-Z_]+ +(?:{cell}){{4}}$", done.stdout, flags=re.M)
    assert rows and sum(int(n) for n in re.findall(r"(\d+) rows", "".join(rows))) == 2 * 4 * 10


def test_prefix_attention_script_runs_and_both_attentions_agree() -> None:
    """The attention figure's script on one position: a line for it, and the fused attention the
    backend uses gives the cascade's output (the script prints the largest difference)."""
    script = "prefix_attention.py"
    done = _run("--positions", "1", "--repeats", "1", "--max-new-tokens", "8", timeout=600, script=script)
    assert done.returncode == 0, done.stderr
    lines = re.findall(
        r"^  \S+:\d+ +\d+ variants +cascade +\d+ +fused +\d+ .*difference ([\d.e+-]+)\)",
        done.stdout,
        flags=re.M,
    )
    assert len(lines) == 1 and float(lines[0]) < 1e-4
    assert re.search(r"all positions: cascade \d+ ms, fused \d+ ms, [\d.]+x less", done.stdout)
    bad = _run("--positions", "0", timeout=120, script=script)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_grouped_decode_script_runs_and_the_layouts_agree() -> None:
    """The decoding figure's script on one position with a 2-layer model: a line for it, and the
    padded and grouped caches give the same logits (the script prints the largest difference)."""
    script = "grouped_decode.py"
    done = _run(
        "--positions", "1", "--steps", "1", "--layers", "2", "--threads", "1", timeout=600, script=script
    )
    assert done.returncode == 0, done.stderr
    lines = re.findall(
        r"^  \S+:\d+ +\d+ rows, own +\d+ tokens .*padded\+repeat +\d+ .*grouped +\d+ "
        r".*difference ([\d.e+-]+)\)",
        done.stdout,
        flags=re.M,
    )
    assert len(lines) == 1 and float(lines[0]) < 1e-3
    assert re.search(r"all positions: padded\+repeat \d+ ms, .*grouped/plain [\d.]+x", done.stdout)
    bad = _run("--steps", "0", timeout=120, script=script)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_keystroke_reuse_script_runs_on_one_position() -> None:
    """The keystroke-reuse figure's script on one position, two keystrokes: a line per keystroke
    with both ratios, the summary, and reuse repairs to the same completion as no reuse."""
    script = "keystroke_reuse.py"
    args = ("--positions", "1", "--models", "bundled", "--keystrokes", "2", "--max-new-tokens", "8")
    done = _run(*args, "--threads", "1", timeout=600, script=script)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    keys = re.findall(
        r"^    key \d .*reuse/no reuse +([\d.]+)x +reuse/plain +([\d.]+)x +reuse/plain\+reuse +[\d.]+x "
        r"+prefix tokens reused +(\d+) run",
        out,
        flags=re.M,
    )
    assert len(keys) == 2 and all(float(a) > 0 and float(b) > 0 for a, b, _ in keys)
    assert all(int(reused) > 0 for _, _, reused in keys)  # each keystroke reads the last one's prefix
    assert re.search(r"reuse / no reuse +2 keystrokes +wall: median +[\d.]+x p90", out)
    for label in ("reuse / plain", r"reuse / plain\+reuse", r"plain\+reuse / plain"):
        assert re.search(label + r" +2 keystrokes +wall: median +[\d.]+x p90", out)
    assert "the same repaired completion with and without reuse at 2/2 keystrokes" in out
    bad = _run("--keystrokes", "0", timeout=120, script=script)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_model_thread_script_times_a_request_alone_and_beside_a_team() -> None:
    script = "model_thread.py"
    done = _run("--positions", "1", "--repeats", "1", "--max-new-tokens", "6", timeout=600, script=script)
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"alone +(\d+) ms +beside a team +(\d+) ms +([\d.]+)x", done.stdout)
    assert len(rows) == 1 and all(int(a) > 0 and int(b) > 0 for a, b, _ in rows)
    summary = r"ratio beside / alone \(bundled\): median [\d.]+x p90 [\d.]+x over 1 positions"
    assert re.search(summary, done.stdout)
    assert _run("--positions", "0", timeout=120, script=script).returncode == 2


def test_settle_cost_script_times_the_answer_the_settling_and_the_next_request() -> None:
    script = "settle_cost.py"
    args = ("--positions", "2", "--max-new-tokens", "12", "--decide-after", "3", "-k", "4")
    done = _run(*args, timeout=600, script=script)
    assert done.returncode == 0, done.stderr
    rows = re.findall(
        r"plain +(\d+) +answer +(\d+) +settle +(\d+) +next alone +(\d+) +while settling +(\d+) ms",
        done.stdout,
    )
    cut = len(rows)
    assert cut + done.stdout.count("nothing cut") == 2 and cut >= 1
    assert all(int(x) > 0 for row in rows for x in row)
    for label in ("answer / plain", "settle / plain", "next while settling / next alone"):
        assert re.search(
            rf"{label} \(bundled\): median [\d.]+x p90 [\d.]+x over {cut} positions", done.stdout
        )
    bad = _run("--decide-after", "0", timeout=120, script=script)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
