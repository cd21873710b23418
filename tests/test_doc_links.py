"""Every link in the repository's markdown points at something that exists.

README.md, docs/*.md, bench/README.md and bench/HISTORY.md: a relative link must name a
file or directory inside the repository, and a ``#fragment`` must be a heading (GitHub's
slug) or an explicit ``id``/``name`` anchor of the markdown file it points into. External
links (``http:``, ``https:``, ``mailto:``) are not fetched. The markdown is parsed with
markdown-it-py, so text that only looks like a link (in a code span, a fenced block or an
HTML comment) is not checked, and reference-style links are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[1]
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
HTML_TARGET = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
HTML_ANCHOR = re.compile(r"""\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


def documents() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "bench" / "README.md",
        ROOT / "bench" / "HISTORY.md",
    ]


def _tokens(text: str) -> list[Token]:
    # CommonMark plus GitHub's tables: most of the README's links sit in table cells.
    return MarkdownIt("commonmark").enable("table").parse(text)


def _flat(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from token.children or ()


def _html(token: Token) -> str:
    return HTML_COMMENT.sub("", token.content) if token.type.startswith("html") else ""


def link_targets(text: str) -> list[str]:
    """Every link and image target, as written (percent-escapes undone)."""
    targets: list[str] = []
    for token in _flat(_tokens(text)):
        if token.type in ("link_open", "image"):
            attr = token.attrGet("href" if token.type == "link_open" else "src")
            targets.append(unquote(str(attr or "")))
        targets.extend(unquote(t) for t in HTML_TARGET.findall(_html(token)))
    return targets


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's rendered text: lowercase, punctuation dropped (word
    characters, '-' and ' ' stay), each space a '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(doc: Path) -> frozenset[str]:
    """The fragments a link into ``doc`` may name; a repeated heading gets -1, -2, ..."""
    found: set[str] = set()
    tokens = _tokens(doc.read_text())
    for opening, inline in pairwise(tokens):
        if opening.type == "heading_open":
            text = "".join(
                child.content
                for child in inline.children or ()
                if child.type in ("text", "code_inline")
            )
            base, n = slug(text), 0
            while (candidate := base if n == 0 else f"{base}-{n}") in found:
                n += 1
            found.add(candidate)
    for token in _flat(tokens):
        found.update(HTML_ANCHOR.findall(_html(token)))
    return frozenset(found)


def broken_links(doc: Path, root: Path = ROOT) -> list[str]:
    """One line per link of ``doc`` that points at nothing, or outside ``root``."""
    problems: list[str] = []
    for target in link_targets(doc.read_text()):
        if SCHEME.match(target):
            continue  # external: not fetched
        path_part, _, fragment = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc.resolve()
        if not dest.is_relative_to(root.resolve()):
            problems.append(f"{doc.name}: {target}: points outside the repository")
        elif not dest.exists():
            problems.append(f"{doc.name}: {target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            problems.append(f"{doc.name}: {target}: no heading #{fragment} in {dest.name}")
    return problems


def test_the_documents_exist() -> None:
    docs = documents()
    assert len(docs) >= 8  # README, bench/README and the docs/ guides
    assert all(doc.is_file() for doc in docs), [d for d in docs if not d.is_file()]


def test_every_link_in_the_documents_resolves() -> None:
    problems = [problem for doc in documents() for problem in broken_links(doc)]
    assert problems == []


def test_the_readme_links_every_guide() -> None:
    linked = {target.partition("#")[0] for target in link_targets((ROOT / "README.md").read_text())}
    guides = {doc.relative_to(ROOT).as_posix() for doc in documents()} - {"README.md"}
    assert guides - linked == set()


def test_slugs_are_githubs() -> None:
    assert slug("5.3 Preview and hint") == "53-preview-and-hint"
    assert slug("Partitions: workspaces sharded across workers (issue 19)") == (
        "partitions-workspaces-sharded-across-workers-issue-19"
    )
    assert slug("Discovery: $SRV.PING, $SRV.INFO") == "discovery-srvping-srvinfo"
    assert slug("What's where") == "whats-where"
    assert slug("A — B") == "a--b"


def test_the_checker_reports_broken_links(tmp_path: Path) -> None:
    """The checker can fail: each kind of broken link in a scratch tree is reported, and
    nothing that only looks like a link is."""
    (tmp_path / "other.md").write_text("# Other\n\n## Real heading\n\n## Twice\n\n## Twice\n")
    (tmp_path / "sub").mkdir()
    doc = tmp_path / "sub" / "doc.md"
    doc.write_text(
        "# Doc\n\n## Here `code`\n\n"
        "[ok](../other.md#real-heading) [dup](../other.md#twice-1) [self](#here-code)\n"
        "[dir](../sub/) [web](https://example.invalid/nope) [ref][r]\n\n"
        "| a | b |\n| --- | --- |\n| [cell](missing-in-table.md) | x |\n\n"
        "[file](missing.md) [heading](../other.md#no-such-heading) [gone](#gone)\n"
        "[out](../../outside.md) [twice](../other.md#twice-2)\n\n"
        "`[span](span.md)` <!-- [comment](comment.md) -->\n\n"
        "```\n[fenced](fenced.md)\n```\n\n"
        "[r]: ../other.md#missing-ref\n"
    )
    assert sorted(broken_links(doc, root=tmp_path)) == sorted(
        [
            "doc.md: missing-in-table.md: no such file",
            "doc.md: missing.md: no such file",
            "doc.md: ../other.md#no-such-heading: no heading #no-such-heading in other.md",
            "doc.md: #gone: no heading #gone in doc.md",
            "doc.md: ../../outside.md: points outside the repository",
            "doc.md: ../other.md#twice-2: no heading #twice-2 in other.md",
            "doc.md: ../other.md#missing-ref: no heading #missing-ref in other.md",
        ]
    )
