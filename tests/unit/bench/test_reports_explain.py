"""Reports of degenerate runs say why instead of showing empty tables and plots, thresholds that
cannot fire are left out, ``auto`` shows what it became, comparisons mark what differs; each on a
real small run (the rules backend or a scripted model server on 127.0.0.1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from report_runs import SMALL_TASKS, bench_run, operational_run, run_cli, scripted_server


def _svg_of(page: str, title: str) -> str:
    """The inline SVG of the figure named ``title``."""
    found = re.search(rf'<figure class="plot" aria-label="{re.escape(title)}">(.*?)</figure>', page, re.S)
    assert found, title
    return found.group(1)


def test_thresholds_that_cannot_fire_for_k_are_left_out_with_a_note(tmp_path: Path) -> None:
    out = bench_run(tmp_path / "run", k=4)  # the default T = 1,3,5,7,9; 5 completions a prompt
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert list(summary["outliers_per_T"]) == ["1", "3"] and list(summary["flag_vs_failure"]) == ["1", "3"]
    assert summary["thresholds_dropped"] == {"thresholds": ["5", "7", "9"], "k": 4}
    note = "T=5, 7, 9 left out: with k=4 mutants a completion has at most 4 similarities"
    assert note in out and "T=5" not in out.replace("T=5, 7, 9 left out", "")
    page = (tmp_path / "run" / "report.html").read_text()
    assert note in page and "repaired T=5" not in page and "T=7" not in _svg_of(page, "Outliers per T")


def test_an_operational_run_whose_every_original_failed_says_so(tmp_path: Path) -> None:
    with scripted_server(always_wrong=True) as url:
        out = operational_run(tmp_path / "run", url)
    why = "Every original answer failed, so no paraphrase was asked."
    # the terminal: the sentence where each empty table would be, no header without rows
    assert out.count(why) == 2 and "metric  Rᵒ" not in out and "uniqueness" not in out
    page = (tmp_path / "run" / "report.html").read_text()
    assert page.count(why) == 3  # Rᵒ/R*, distinguishability, and the figure's place
    assert "<svg" not in page and "Distance to the first failure</h2><p class='note'>" + why in page


def test_auto_mode_shows_what_it_became(tmp_path: Path) -> None:
    with scripted_server() as url:
        argv = ["bench", "tasks", "--tasks", str(SMALL_TASKS), "--backend", "http", "--model", url]
        out = run_cli([*argv, "--inputs", "5", "--no-progress", "--out", str(tmp_path / "run")])
    assert json.loads((tmp_path / "run" / "config.json").read_text())["mode"] == "auto"
    assert " · auto (completion) · " in out.splitlines()[0]
    page = (tmp_path / "run" / "report.html").read_text()
    assert "<tr><td>mode</td><td>auto (completion)</td></tr>" in page and " · auto (completion) · " in page


def test_compare_marks_the_settings_that_differ_first_and_names_every_run(tmp_path: Path) -> None:
    bench_run(tmp_path / "a", k=4)
    bench_run(tmp_path / "b", k=6)
    out = run_cli(["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path)])
    assert "T=5, 7, 9 left out" in (tmp_path / "compare.html").read_text() and "k " in out
    page = (tmp_path / "compare.html").read_text()
    rows = re.findall(
        r"<tr( class='differs')?><td>([^<]+)</td>", page.split("<h2>Settings</h2>")[1].split("</table>")[0]
    )
    assert rows[0] == (" class='differs'", "k") and sum(bool(marked) for marked, _ in rows) == 1
    assert "1 of " in page and "settings differ (marked, first)" in page
    outliers = _svg_of(page, "Outliers per T")
    for run in ("a", "b"):
        assert f"{run}: original flagged" in outliers and f"{run}: all completions" in outliers
    assert "a: original" in _svg_of(page, "Scores before and after repair")
    assert "b: original" in _svg_of(page, "Scores before and after repair")


def _run_chat_suite(argv: list[str], url: str, out: Path) -> None:
    """A natural-language suite asked in chat of the scripted server, 5 inputs per answer."""
    run_cli([*argv, "--inputs", "5", "--backend", "http", "--model", url, "--chat", "--out", str(out)])


def test_a_syntactic_run_of_one_distance_has_one_integer_tick_and_no_reduced_note(tmp_path: Path) -> None:
    with scripted_server() as url:
        argv = ["bench", "syntactic", "--equations", "linear", "--distances", "2", "--variants", "3"]
        _run_chat_suite(argv, url, tmp_path / "r")
    svg = _svg_of(
        (tmp_path / "r" / "report.html").read_text(), "Robustness degree against syntactic distance"
    )
    x_ticks = re.findall(r'id="[^"]*-xtick_\d+">.*?<text[^>]*>([^<]*)</text>', svg, re.S)
    assert x_ticks == ["2"]
    assert "dashed: reduced" not in svg and "all (plain)" not in svg and ">all<" in svg


def test_the_turbulence_histogram_has_a_title_and_an_axis_label(tmp_path: Path) -> None:
    with scripted_server() as url:
        argv = ["bench", "turbulence", "--templates", "1", "--instances", "2", "--rounds", "1"]
        _run_chat_suite(argv, url, tmp_path / "r")
    svg = _svg_of((tmp_path / "r" / "report.html").read_text(), "CorrSc histogram (Figure 3)")
    assert ">CorrSc histogram (Figure 3)<" in svg and ">CorrSc (share of correct answers)<" in svg
