"""Every relative link of the project's Markdown resolves.

For each Markdown file of the repository (README.md, docs/**/*.md and any other *.md outside the virtual
environment, run outputs, data, caches and hidden directories), every relative link ``[text](path)`` or
``[text](path#anchor)`` (images and reference definitions too) must name an existing file, and every
``#anchor`` (also a same-page ``(#anchor)``) must name a heading of the target file under GitHub's anchor rules:
lowercase; punctuation dropped except hyphens, underscores and spaces; spaces to hyphens; a repeated heading gets
-1, -2, ... Links to http(s), mailto and other schemes, and anything inside code (fenced blocks, indented blocks,
inline spans) are not checked.
"""

from __future__ import annotations

import os
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
# Not part of the documentation: the virtual environment, run outputs, data, caches and build products.
SKIP_DIRS = {"outputs", "multirun", "data", "build", "dist", "node_modules", "__pycache__"}

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# The destination of an inline link or image: what follows "](", up to an optional title and ")".
INLINE_DEST = re.compile(r"\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")
HTML_ANCHOR = re.compile(r"""<a\s[^>]*\b(?:name|id)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
HTML_ID = re.compile(r"""<[a-z][^>]*\bid\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


def markdown_files() -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = Path(dirpath).relative_to(ROOT)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and not d.endswith(".egg-info") and not (rel == Path(".") and d in SKIP_DIRS)
        )
        found += [Path(dirpath) / f for f in sorted(filenames) if f.lower().endswith(".md")]
    return found


def prose_lines(text: str):
    """(line number, line) of every line outside fenced and indented code blocks, inline code spans removed."""
    fence = None
    in_indented = False
    previous_blank = True
    last_prose = ""  # the last non-blank prose line: an indented line after a list item continues the item
    for number, line in enumerate(text.split("\n"), start=1):
        match = FENCE.match(line)
        if fence is not None:
            if (
                match
                and match.group(1)[0] == fence[0]
                and len(match.group(1)) >= len(fence)
                and not line.strip()[len(match.group(1)) :].strip()
            ):
                fence = None
            previous_blank = False
            continue
        if match:
            fence = match.group(1)
            previous_blank = False
            continue
        blank = not line.strip()
        indented = line.startswith("    ") or line.startswith("\t")
        in_list = bool(LIST_ITEM.match(last_prose)) or last_prose.startswith((" ", "\t"))
        if indented and not blank and (in_indented or (previous_blank and not in_list)):
            in_indented = True
            previous_blank = False
            continue
        if not blank:
            in_indented = False
            last_prose = line
        previous_blank = blank
        yield number, CODE_SPAN.sub("", line)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text (before any -1, -2 suffix)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link or image: its text
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    text = text.replace("`", "").strip().lower()
    kept = "".join(c for c in text if c in " -_" or c.isalnum() or unicodedata.category(c).startswith(("L", "M", "N")))
    return kept.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors_of(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    anchors = set()
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if match:
            slug = github_slug(match.group(2) or "")
            if slug in seen:
                while True:
                    seen[slug] += 1
                    candidate = f"{slug}-{seen[slug]}"
                    if candidate not in seen:
                        break
                slug = candidate
            seen[slug] = 0
            anchors.add(slug)
    anchors.update(HTML_ANCHOR.findall(text))
    anchors.update(HTML_ID.findall(text))
    return frozenset(anchors)


def links_of(text: str):
    for number, line in prose_lines(text):
        for match in INLINE_DEST.finditer(line):
            yield number, match.group(1).strip("<>")
        match = REF_DEF.match(line)
        if match:
            yield number, match.group(1).strip("<>")


def broken_links(path: Path) -> list[str]:
    broken = []
    rel = path.relative_to(ROOT).as_posix()
    for number, dest in links_of(path.read_text(encoding="utf-8")):
        if not dest or SCHEME.match(dest):
            continue
        target_part, _, anchor = dest.partition("#")
        target_part = unquote(target_part.split("?", 1)[0])
        if not target_part:
            target = path
        elif target_part.startswith("/"):
            target = ROOT / target_part.lstrip("/")
        else:
            target = (path.parent / target_part).resolve()
        if not target.exists():
            broken.append(f"{rel}:{number}: {dest} (no such file)")
            continue
        if anchor:
            if target.is_dir():
                target = target / "README.md"
            if target.suffix.lower() != ".md" or not target.is_file():
                broken.append(f"{rel}:{number}: {dest} (an anchor into a file that is not Markdown)")
            elif unquote(anchor) not in anchors_of(target):
                broken.append(f"{rel}:{number}: {dest} (no heading with this anchor)")
    return broken


def test_github_anchor_rules():
    assert github_slug("A region that stops dead: the `stopped` level") == "a-region-that-stops-dead-the-stopped-level"
    assert (
        github_slug('Tie-calibrated accuracy (MonetBench tau*, VideoAlign "w/ ties")')
        == "tie-calibrated-accuracy-monetbench-tau-videoalign-w-ties"
    )
    assert github_slug("Scoring many files: `phyprobe score`") == "scoring-many-files-phyprobe-score"
    assert github_slug("Loss ablations (the paper's shape)") == "loss-ablations-the-papers-shape"
    assert github_slug("Spatial max pooling of the frame map") == "spatial-max-pooling-of-the-frame-map"
    assert github_slug("no_cal arm") == "no_cal-arm"


def test_duplicate_headings_get_numbered_anchors(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Notes\n\n## Figures\n\n```\n# not a heading\n```\n\n## Figures\n\n### Figures\n", encoding="utf-8"
    )
    assert anchors_of(page) == {"notes", "figures", "figures-1", "figures-2"}


def test_code_is_not_read_for_links():
    text = "[a](x.md)\n\n```\n[b](y.md)\n```\n\n    [c](z.md)\n\n`[d](w.md)` and [e](v.md#s)\n"
    assert [dest for _, dest in links_of(text)] == ["x.md", "v.md#s"]


def test_every_relative_link_of_the_markdown_resolves():
    files = markdown_files()
    assert ROOT / "README.md" in files
    broken = [entry for path in files for entry in broken_links(path)]
    assert not broken, f"{len(broken)} broken link(s) in the Markdown:\n" + "\n".join(broken)
