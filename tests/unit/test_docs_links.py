"""Every relative link in README.md and docs/*.md reaches a file that exists, and every `#anchor`
a heading of that file (GitHub's slugs), so moving text between pages cannot leave a link behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped but '-' and '_', spaces '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in _prose_headings(path.read_text(encoding="utf-8")):
        base = slug(line)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def _prose_headings(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            out.append(m.group(1))
    return out


def links(path: Path) -> list[str]:
    return [m.group(1) for line in _prose(path.read_text(encoding="utf-8")) for m in _LINK.finditer(line)]


def test_slug_follows_github() -> None:
    assert slug("`http`: a completion server") == "http-a-completion-server"
    assert slug("Renames that spare the code") == "renames-that-spare-the-code"
    assert slug("What a backend has: a core and capabilities") == "what-a-backend-has-a-core-and-capabilities"
    assert slug("The bundled model: `cctest-code-small`") == "the-bundled-model-cctest-code-small"
    assert slug("Chat (instruction) models") == "chat-instruction-models"


def test_links_in_code_are_not_links() -> None:
    assert _prose("a\n```\n[x](nowhere.md)\n```\n`[y](nowhere.md)` b") == ["a", " " * 17 + " b"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_exists(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, vscode: …
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with the anchor #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
