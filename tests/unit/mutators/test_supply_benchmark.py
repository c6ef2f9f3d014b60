"""The mutant-supply figure's script runs (no threshold asserted: the figure is reported, not tested)."""

from __future__ import annotations

import re
import subprocess

from run_benchmark_script import run_benchmark_script


def supply(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """benchmarks/mutant_supply.py run with ``args``, this checkout's code on the path."""
    return run_benchmark_script("mutant_supply.py", *args, timeout=timeout)


def test_mutant_supply_script_runs_with_ten_positions() -> None:
    done = supply("--positions", "10")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "stdlib (24 modules" in out and "10 positions" in out
    # every figure is printed for both samples, and the histogram accounts for every position
    assert len(re.findall(r"all 10 mutants\s+\d+\s+[\d.]+%", out)) == 2
    assert len(re.findall(r">= 3 scheme families\s+\d+", out)) == 2
    hist = re.search(r"histogram \(mutants: positions\):\n\s+(.*)", out)
    assert hist is not None
    assert sum(int(n) for n in re.findall(r"\d+: (\d+)", hist[1])) == 10


def test_mutant_supply_script_rejects_a_bad_count() -> None:
    done = supply("--positions", "0", timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1


def test_mutant_supply_script_names_the_mutants_k_as_the_cli_does() -> None:
    done = supply("--mutants", "0", timeout=60)
    assert (done.returncode, done.stderr) == (2, "--positions and -k/--mutants must be at least 1.\n")
    done = supply("--k", "0", timeout=60)  # the old spelling: still read, with one line naming the new
    assert done.returncode == 2
    assert (
        done.stderr.splitlines()[0]
        == "cctest: warning: --k is deprecated and will be removed; use --mutants."
    )


def test_mutant_supply_script_measures_the_named_schemes_only() -> None:
    done = supply("--positions", "3", "--scheme", "gra_c", "--scheme", "Fmt")
    assert done.returncode == 0, done.stderr
    assert "schemes: GRA_C, FMT\n" in done.stdout
    # per-scheme presence is printed for exactly the named schemes, in both samples
    rows = re.findall(r"per scheme .*:\n\s+(.*)", done.stdout)
    assert len(rows) == 2
    for row in rows:
        assert re.fullmatch(r"GRA_C \d+%  FMT \d+%", row), row


def test_mutant_supply_script_rejects_an_unknown_scheme_as_the_cli_does() -> None:
    done = supply("--scheme", "nope", timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("unknown mutation scheme 'nope'") and done.stderr.count("\n") == 1


def _figures(out: str) -> list[str]:  # all but the header and the per-call time
    return [re.sub(r"\(\d+ ms per call\)", "", line) for line in out.splitlines()[1:]]


def test_sparing_the_suffix_changes_no_supply_figure() -> None:
    """``--spare-suffix`` (the engine's spare_suffix with the bundled model) only reorders names:
    every count and share is the one without it (near_sites off)."""
    plain = supply("--positions", "10", "--no-near-sites")
    spared = supply("--positions", "10", "--spare-suffix", "--no-near-sites")
    assert plain.returncode == 0 and spared.returncode == 0, plain.stderr + spared.stderr
    assert "renames spare the suffix" in spared.stdout and "near_sites off" in spared.stdout
    assert _figures(spared.stdout) == _figures(plain.stdout)


def test_near_sites_change_no_count_only_which_schemes() -> None:
    """With near_sites (the default) a rename that cannot spare the suffix is kept only as its
    family's first: the counts, the families and the histogram stay; a share per scheme may not."""
    far = supply("--positions", "10", "--spare-suffix", "--no-near-sites")
    near = supply("--positions", "10", "--spare-suffix")
    assert far.returncode == 0 and near.returncode == 0, far.stderr + near.stderr
    scheme_rows = [i for i, line in enumerate(_figures(far.stdout)) if line.startswith("    REP_R")]
    assert len(scheme_rows) == 2
    kept = [line for i, line in enumerate(_figures(far.stdout)) if i not in scheme_rows]
    assert kept == [line for i, line in enumerate(_figures(near.stdout)) if i not in scheme_rows]
    assert any("families" in line for line in kept) and any("histogram" in line for line in kept)


def test_mutant_supply_script_reports_several_seeds_together() -> None:
    done = supply("--positions", "3", "--seeds", "7919,104729")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "seed 7919)" in out and "seed 104729)" in out
    # one table row per seed: all k, 3 families, mean, and the share within the distance bound
    rows = re.findall(r"^  seed (\d+) +([\d.]+)% \| +([\d.]+)% \| +([\d.]+) \| +([\d.]+)%$", out, flags=re.M)
    assert [r[0] for r in rows] == ["7919", "104729"]
    assert all(0 <= float(r[4]) <= 100 for r in rows)
    assert len(re.findall(r"distance <= 0\.1\s+\d+\s+[\d.]+% of \d+ made", out)) == 3  # two seeds, HumanEval
    assert supply("--seeds", "x", timeout=60).returncode == 2
