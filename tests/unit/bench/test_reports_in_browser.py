"""Every kind of report (bench, compare, tasks, syntactic, turbulence, operational; and an
operational run whose every original answer failed), made by a real small run, rendered in
headless Chromium at 1,400 and 900 px: no horizontal overflow, no empty plot, no legend entry
without a drawn series.

Chromium runs with ``--dump-dom`` on a copy of the report with a script appended that measures
the layout and the inline SVG figures and writes what it found into the DOM. Without Chromium the
test fails under CI (``CI=true``: ``make test`` installs it) and is skipped elsewhere.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from report_runs import make_runs

WIDTHS = (1400, 900)
KINDS = (
    "bench",
    "compare",
    "tasks",
    "syntactic",
    "turbulence",
    "operational",
    "operational, every original failing",
)

# Runs in the page once it is parsed; writes {"problems": [...], "figures": N} into <pre id="cc-check">.
CHECK = r"""
<script>
(function () {
  const problems = [];
  const de = document.documentElement;
  if (de.scrollWidth > de.clientWidth) {
    problems.push(`the page scrolls sideways: ${de.scrollWidth} px of content in ${de.clientWidth} px`);
  }
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    ` "${(el.textContent || "").trim().slice(0, 40)}"`;
  for (const el of document.body.querySelectorAll("*")) {
    if (!(el instanceof HTMLElement) || el.closest("svg")) continue;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > de.clientWidth + 1) {
      problems.push(`${name(el)} reaches ${Math.round(r.right)} px, past the window's ${de.clientWidth}`);
    }
    const style = getComputedStyle(el);
    if (el.clientWidth > 0 && style.overflowX === "visible" && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${name(el)} overflows its box: ${el.scrollWidth} px in ${el.clientWidth}`);
    }
  }
  for (const img of document.querySelectorAll("img")) {
    if (!img.complete || img.naturalWidth === 0) problems.push(`an image draws nothing: ${img.alt}`);
  }
  const idOf = (el) => el.getAttribute("id") || "";
  const drawn = (el) => {
    const b = el.getBBox();
    if (/cc-(series|data)-line-/.test(idOf(el))) return b.width > 0 || b.height > 0;
    // a bar: an area, or (a bar of 0) its outline
    const stroked = [...el.querySelectorAll("path")].some((p) => getComputedStyle(p).stroke !== "none");
    return b.width > 0 && (b.height > 0 || stroked);
  };
  const figures = document.querySelectorAll("figure.plot svg");
  figures.forEach((svg, f) => {
    const title = svg.closest("figure").getAttribute("aria-label");
    const all = [...svg.querySelectorAll("g[id]")];
    for (const ax of all.filter((g) => /-axes_\d+$/.test(idOf(g)))) {
      const series = [...ax.querySelectorAll("g[id]")].filter((g) => /cc-(series|data)-/.test(idOf(g)));
      const why = [...ax.querySelectorAll("g[id]")].some((g) => /cc-why-empty$/.test(idOf(g)));
      if (!why && !series.some(drawn)) problems.push(`"${title}": a plot with nothing drawn (${idOf(ax)})`);
    }
    for (const legend of all.filter((g) => /-legend_\d+$/.test(idOf(g)))) {
      for (const text of legend.querySelectorAll("text")) {
        const entry = text.closest("g[id]");
        const m = /cc-legend-(\d+)$/.exec(idOf(entry));
        if (!m) {
          problems.push(`"${title}": legend entry "${text.textContent}" is tied to no series`);
          continue;
        }
        const own = all.filter((g) => new RegExp(`cc-series-(line|patch)-${m[1]}-\\d+$`).test(idOf(g)));
        if (!own.some(drawn)) {
          problems.push(`"${title}": legend entry "${text.textContent}" has no drawn series`);
        }
      }
    }
  });
  const out = document.createElement("pre");
  out.id = "cc-check";
  out.textContent = JSON.stringify({problems: problems, figures: figures.length});
  document.body.appendChild(out);
})();
</script>
"""


def chromium() -> str:
    """The Chromium binary; its absence fails under CI and skips elsewhere."""
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found:
        return found
    why = "Chromium is not installed (scripts/setup-e2e.sh installs it: apt-get install chromium)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}; the reports cannot be checked in a browser.")
    pytest.skip(why)


def check_in_browser(page: Path, width: int) -> dict[str, object]:
    """``page`` rendered at ``width`` px: what the CHECK script found."""
    browser = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / page.name
        copy.write_text(
            page.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8"
        )
        argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        argv += [f"--user-data-dir={tmp}/profile", f"--window-size={width},1000", "--dump-dom", copy.as_uri()]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    found = re.search(r'<pre id="cc-check">(.*?)</pre>', done.stdout, re.S)
    assert found, f"Chromium printed no result (exit {done.returncode}): {done.stderr[-2000:]}"
    result: dict[str, object] = json.loads(html.unescape(found.group(1)))
    return result


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    chromium()  # before the runs: no time spent on runs that cannot be looked at
    return make_runs(tmp_path_factory.mktemp("runs"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_report_renders_without_overflow_empty_plots_or_dangling_legends(
    reports: dict[str, Path], kind: str
) -> None:
    for width in WIDTHS:
        result = check_in_browser(reports[kind], width)
        assert result["problems"] == [], f"{kind} at {width} px"
    if kind not in ("tasks", "operational, every original failing"):  # no figure there
        assert isinstance(result["figures"], int) and result["figures"] >= 1, kind


def test_the_check_sees_overflow_an_empty_plot_and_a_dangling_legend(tmp_path: Path) -> None:
    """The browser check itself: a page with each fault is caught (so a green run means something)."""
    from cctest.bench.render import html_page, pyplot, svg_of

    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [float("nan")] * 2, label="never drawn")
    ax.plot([0, 1], [1, 2], label="drawn")
    ax.legend()
    dangling = svg_of(fig)
    fig, ax = plt.subplots()
    empty = svg_of(fig)
    body = f"<figure class='plot' aria-label='a'>{dangling}</figure>"
    body += f"<figure class='plot' aria-label='b'>{empty}</figure>"
    body += "<div style='width:3000px'>wide</div>"
    page = tmp_path / "faults.html"
    page.write_text(html_page("faults", body))
    problems = "\n".join(map(str, check_in_browser(page, 900)["problems"]))  # type: ignore[call-overload]
    assert "scrolls sideways" in problems
    assert 'legend entry "never drawn" has no drawn series' in problems and '"drawn"' not in problems
    assert '"b": a plot with nothing drawn' in problems and '"a": a plot with nothing drawn' not in problems
