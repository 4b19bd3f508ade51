"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and a
#fragment names a heading of that file (GitHub's anchor for it). The README stays short
enough to read first, and links every docs page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def prose(text: str) -> str:
    """The page without its fenced code blocks and inline code (a link there is an example)."""
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(kept)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in page.read_text().splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced and (match := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)):
            base = anchor(match.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")  # GitHub numbers repeated headings
    return found


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(prose(page.read_text()))]


def relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)  # http:, https:, mailto: …


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_and_heading(page):
    broken = []
    for target in filter(relative, links(page)):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading with that anchor in {file.name}")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_the_readme_links_every_docs_page_and_stays_short():
    readme = ROOT / "README.md"
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(readme) if relative(t) and t.partition("#")[0]}
    unlinked = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert unlinked == [], f"docs pages the README does not link: {unlinked}"
    assert len(readme.read_text().splitlines()) <= 200


def test_the_checker_sees_a_broken_link_and_a_missing_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Two words\n\n[a](page.md#two-words) [b](gone.md) [c](#nowhere)\n")
    assert anchors(page) == {"title", "two-words"}
    assert links(page) == ["page.md#two-words", "gone.md", "#nowhere"]
    assert anchor("Design notes: whose memory is it") == "design-notes-whose-memory-is-it"
    assert anchor("Limits: what an interactions-only bot can and cannot see") == (
        "limits-what-an-interactions-only-bot-can-and-cannot-see"
    )
