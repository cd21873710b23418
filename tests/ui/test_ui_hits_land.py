"""A search hit lands on its match, in a real browser (the distribution's headless Chromium
driven by Playwright) against a real worker: over long tool results in Cyrillic, CJK,
emoji and decomposed letters, each read in several parts with the match past the first,
the hit's link shows the part holding the match the hit showed, scrolled into view and
highlighted, in the timeline and on the event page; and every "part" link lands on a part
boundary (docs/ui.md, "Parts")."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import pytest_asyncio

from tests.ui._browser import browser, in_view, skip_without_browser
from tests.ui._scripts import PART, SCRIPTS, SCRIPTS_WS, TOOL_SEQ, Script, script_output
from tests.ui.conftest import Ui

SWS = "ws=" + quote(SCRIPTS_WS, safe="")
pytestmark = pytest.mark.asyncio(loop_scope="module")
IDS = [script.session_id.removeprefix("s-script-") for script in SCRIPTS]


@pytest_asyncio.fixture(loop_scope="module")
async def page(ui: Ui, tmp_path: Path) -> AsyncIterator[Any]:
    skip_without_browser()
    async with browser(tmp_path / "profile") as ctx:
        page = await ctx.new_page()
        await page.goto(ui.server.login_url)
        yield page


def character_start(text: str, at: int) -> int:
    """Where part boundary ``at`` lands (docs/ui.md): moved back off the marks, joiners,
    variation selectors and skin tones that continue the character before it."""

    def continues(i: int) -> bool:
        code = ord(text[i])
        return (
            unicodedata.category(text[i]).startswith("M")
            or code == 0x200D
            or 0xFE00 <= code <= 0xFE0F
            or 0x1F3FB <= code <= 0x1F3FF
            or (i > 0 and text[i - 1] == "\u200d")
        )

    while 0 < at < len(text) and continues(at):
        at -= 1
    return min(at, len(text))


def _words(phrase: str) -> list[str]:
    return phrase.split()


async def _lands(page: Any, scope: Any, script: Script) -> None:
    """The match the hit showed is in ``scope``: highlighted, every word of it, and the
    anchored mark in the viewport."""
    # A click's navigation may still be loading: ``all_inner_texts`` does not wait, the
    # anchored mark's locator does (a page without one fails here, after its timeout).
    await page.wait_for_load_state()
    await page.locator("mark#match").wait_for(state="attached")
    marks = [m.strip() for m in await scope.locator("mark").all_inner_texts()]
    assert marks, "no highlight on the page"
    words = _words(script.phrase)
    # The hit's match (the phrase) is highlighted word after word, in this part.
    joined = " ".join(marks)
    assert " ".join(words) in joined, (marks, words)
    match = page.locator("mark#match")
    assert await match.count() == 1
    assert (await match.inner_text()).strip() == words[0]
    assert await in_view(match), "the match is not scrolled into view"


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
async def test_a_hit_lands_on_its_match_in_the_timeline(page: Any, ui: Ui, script: Script) -> None:
    await page.goto(f"{ui.server.base_url}/search?{SWS}&q={quote(script.query)}")
    hit = page.locator("ol.hits li.hit", has_text=script.session_id)
    assert await hit.count() == 1
    await hit.locator("a").first.click()
    target = page.locator("li.event.target")
    assert await target.get_attribute("id") == f"e{TOOL_SEQ}"
    assert await target.locator("details[open]").count() == 1
    await _lands(page, target, script)
    cut = await target.locator("p.cut").inner_text()
    assert "where the search matched" in cut
    # The characters it names hold the match, counted as the worker counts (code points).
    first, last = (int(n.replace(",", "")) for n in re.findall(r"[\d,]+", cut)[:2])
    text = script_output(script)
    at = text.index(script.phrase)
    assert first - 1 <= at < last


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
async def test_a_hit_lands_on_its_match_on_the_event_page(
    page: Any, ui: Ui, script: Script
) -> None:
    await page.goto(f"{ui.server.base_url}/search?{SWS}&q={quote(script.query)}")
    await page.locator("ol.hits li.hit", has_text=script.session_id).locator("a").first.click()
    await page.locator("li.event.target p.cut a").click()  # read it all, in parts
    assert urlsplit(page.url).fragment == "match"
    readable = page.locator("pre.readable")
    await _lands(page, readable, script)
    # The part shown is the one holding the phrase, its first character a part boundary.
    text = script_output(script)
    at = text.index(script.phrase)
    pager = await page.locator("p.pager").first.inner_text()
    first = int(re.search(r"characters ([\d,]+)", pager).group(1).replace(",", ""))  # type: ignore[union-attr]
    part = at // PART
    assert first - 1 == character_start(text, part * PART) and at >= first - 1
    assert f"part {part + 1} of" in pager


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
async def test_every_part_link_lands_on_a_part_boundary(page: Any, ui: Ui, script: Script) -> None:
    text = script_output(script)
    parts = -(-len(text) // PART)
    base = f"{ui.server.base_url}/event?{SWS}&id={script.session_id}&seq={TOOL_SEQ}"
    await page.goto(base)
    seen: list[str] = []
    for number in range(parts):
        pager = page.locator("p.pager").first
        shown = await page.locator("pre.readable").inner_text()
        start = character_start(text, number * PART)
        end = character_start(text, (number + 1) * PART)
        assert f"part {number + 1} of {parts}" in await pager.inner_text()
        # What the page shows is exactly that part (the browser drops nothing but a
        # trailing newline), so reading the parts in order reads the text whole.
        assert shown.rstrip("\n") == text[start:end].rstrip("\n")
        seen.append(text[start:end])
        links = [await link.get_attribute("href") for link in await pager.locator("a").all()]
        for link in links:
            offset = int(parse_qs(urlsplit(link).query)["offset"][0])
            assert offset % PART == 0, link  # links carry the parts' own offsets
        if number + 1 < parts:
            await pager.locator("a", has_text="next part").click()
    assert "".join(seen) == text
    # And back: the previous part is the part before, on its boundary.
    await page.locator("p.pager").first.locator("a", has_text="previous part").click()
    shown = await page.locator("pre.readable").inner_text()
    before = parts - 2
    bounds = character_start(text, before * PART), character_start(text, (before + 1) * PART)
    assert shown.rstrip("\n") == text[bounds[0] : bounds[1]].rstrip("\n")
