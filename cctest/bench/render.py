"""The pieces every kind of run's report is drawn with: numbers as table cells, text tables,
matplotlib figures as inline SVG, and the self-contained HTML page.

Figures are drawn with the Agg backend (no display needed); labels are plain text (a run named
``$x$`` is not read as mathtext); an SVG's ids are prefixed so that several figures share a page.
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from typing import Any

# ------------------------------------------------------------------ formatting


def fmt(x: Any, digits: int = 3) -> str:
    """A number for a table: '—' for None, percentages stay as given."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def pct(x: float | None) -> str:
    """A share as a percentage with one decimal; '—' for None."""
    return "—" if x is None else f"{100 * x:.1f}%"


def ratio(x: float | None) -> str:
    """A relative change as a signed percentage; 'undefined' for None."""
    return "undefined" if x is None else f"{100 * x:+.1f}%"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [
        max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
        for i, h in enumerate(headers)
    ]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


# ------------------------------------------------------------------ figures


def pyplot():  # type: ignore[no-untyped-def]
    """``matplotlib.pyplot``, set up for the reports (Agg, plain-text labels, stable SVG)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: render to memory
    matplotlib.rcParams["text.parse_math"] = False  # a label is text: "$x$" in a run's name is no formula
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: small, searchable, selectable
    matplotlib.rcParams["svg.hashsalt"] = "cctest"  # the same figure gives the same file
    import matplotlib.pyplot as plt

    return plt


class Note(str):
    """A figure that cannot be drawn, as the one sentence saying why (the report prints it in
    the figure's place)."""


def why_empty(ax: Any, sentence: str) -> None:
    """Write ``sentence`` across ``ax``, a panel with nothing to draw, so it is not an empty plot."""
    ax.text(
        0.5,
        0.5,
        sentence,
        ha="center",
        va="center",
        wrap=True,
        fontsize=8,
        transform=ax.transAxes,
        gid="cc-why-empty",
    )


def figure_legend(fig: Any, ax: Any, **kwargs: Any) -> None:
    """A legend of ``ax``'s series for the whole figure (outside every panel)."""
    handles, labels = ax.get_legend_handles_labels()
    legend = fig.legend(handles, labels, **kwargs)
    legend.cc_handles = handles  # for _tag_series: a figure's legend keeps no link to its series


def _tag_series(fig: Any) -> None:
    """Name every drawn artist in the SVG: ``cc-series-KIND-N-J`` for the artists of legend entry
    N (its text ``cc-legend-N``), ``cc-data-KIND-J`` for the rest (KIND: line or patch), so a
    reader (the browser test) can tell an empty plot and a legend entry without a series."""
    from matplotlib.container import Container
    from matplotlib.lines import Line2D

    def kind(a: Any) -> str:
        return "line" if isinstance(a, Line2D) else "patch"

    n = j = 0
    legends = [(legend, getattr(legend, "cc_handles", [])) for legend in fig.legends]
    legends += [(ax.get_legend(), ax.get_legend_handles_labels()[0]) for ax in fig.axes if ax.get_legend()]
    for legend, handles in legends:
        texts = legend.get_texts()
        if len(texts) == len(handles):
            for handle, text in zip(handles, texts, strict=True):
                n += 1
                text.set_gid(f"cc-legend-{n}")
                for a in list(handle) if isinstance(handle, Container) else [handle]:
                    j += 1
                    a.set_gid(f"cc-series-{kind(a)}-{n}-{j}")
    for ax in fig.axes:
        for a in [*ax.lines, *ax.patches, *ax.collections]:
            if a.get_gid() is None:
                j += 1
                a.set_gid(f"cc-data-{kind(a)}-{j}")


def svg_of(fig: Any) -> str:
    """``fig`` as an inline ``<svg>`` element, its ids prefixed so that several figures share a page."""
    import hashlib
    import re

    _tag_series(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    pyplot().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    prefix = "f" + hashlib.sha1(text.encode()).hexdigest()[:8] + "-"
    text = re.sub(r'\bid="', f'id="{prefix}', text)
    text = re.sub(r'(url\(#|href="#)', lambda m: m.group(1) + prefix, text)
    return text


# ------------------------------------------------------------------ HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem}
h1{font-size:1.5rem} h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .6rem;text-align:right}
th:first-child,td:first-child{text-align:left} th{background:#f4f6f8}
.meta td{text-align:left} .meta td:first-child{white-space:nowrap} img,svg{max-width:100%;height:auto}
figure{margin:.5rem 0} table{max-width:100%} td+td{overflow-wrap:anywhere}
pre{background:#f7f7f7;padding:.5rem;overflow:auto;font-size:.8rem;margin:.2rem 0;max-width:100%;
white-space:pre-wrap;overflow-wrap:anywhere}
.ex{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:.5rem} .ex>div{min-width:0}
.note{color:#555;font-size:.85rem}
tr.differs td{background:#fff4d6} tr.differs td:first-child{font-weight:bold}
"""


def html_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "", marked: Sequence[bool] = ()
) -> str:
    """A table; the rows whose ``marked`` is true get the class ``differs``."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join(
        ("<tr class='differs'>" if i < len(marked) and marked[i] else "<tr>")
        + "".join(f"<td>{html.escape(str(c))}</td>" for c in r)
        + "</tr>"
        for i, r in enumerate(rows)
    )
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def html_page(title: str, body: str) -> str:
    """A whole self-contained HTML page (inline CSS)."""
    head = f'<meta charset="utf-8"><title>{html.escape(title)}</title><style>{_CSS}</style>'
    return f'<!doctype html><html lang="en"><head>{head}</head><body>{body}</body></html>\n'
