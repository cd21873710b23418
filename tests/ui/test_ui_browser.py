"""``sessionquery ui`` in a real browser (the distribution's headless Chromium, driven by
Playwright) against a real worker: the token, search to event to lineage, a CJK query,
agent markup that must stay text, and a ~1 MiB event."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import pytest_asyncio

from tests.ui._browser import browser, in_view, skip_without_browser
from tests.ui._corpus import BIG_MARKER, BIG_SEQ, CJK_QUERY, HOSTILE, SCRIPT
from tests.ui._history import (
    BRACKET_WORD,
    CHILD,
    DEEP_SEQ,
    DEEP_WORD,
    FIRST_PROMPT,
    HISTORY,
    MANY,
    MANY_SESSIONS,
    MANY_WORD,
    SESSIONS,
)
from tests.ui.conftest import Ui
from worker.commands.sample_corpus import PAY_ROOT, PAYMENTS
from worker.ui.server import UiServer

WS = "ws=" + quote(PAYMENTS, safe="")
HWS = "ws=" + quote(HISTORY, safe="")
PHONE = {"width": 390, "height": 844}
# The module's event loop, where its tests share one worker and UI server (``ui``).
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(ui: Ui, tmp_path: Path) -> AsyncIterator[Any]:
    """A page of a fresh browser profile, not logged in."""
    skip_without_browser()
    async with browser(tmp_path / "profile") as ctx:
        yield await ctx.new_page()


async def _login(page: Any, ui: Ui) -> None:
    await page.goto(ui.server.login_url)
    assert "token=" not in page.url


async def _marks(scope: Any) -> list[str]:
    texts: list[str] = await scope.locator("mark").all_inner_texts()
    return texts


async def test_login_with_and_without_the_token(page: Any, ui: Ui) -> None:
    response = await page.goto(f"{ui.server.base_url}/")
    assert response.status == 401
    assert await page.locator("h1").inner_text() == "Token needed"
    assert PAYMENTS not in await page.content()
    # The login form with a wrong token: still refused.
    await page.fill("input[name=token]", "not-the-token")
    await page.click("button")
    assert await page.locator("h1").inner_text() == "Token needed"
    await page.fill("input[name=token]", ui.server.token)
    await page.click("button")
    assert await page.locator("h1").inner_text() == "Workspaces"
    assert "token=" not in page.url
    await page.get_by_role("link", name=PAYMENTS, exact=True).click()
    assert await page.locator("table.sessions tbody tr").count() == 5


async def test_search_to_event_to_lineage(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/sessions?{WS}")
    await page.fill("form.search input[name=q]", "idempotency")
    await page.click("form.search button")
    hits = page.locator("ol.hits li.hit")
    assert await hits.count() >= 1
    assert await page.locator("ol.hits mark").count() >= 1
    first = hits.first.locator("a").first
    target = await first.get_attribute("href")
    assert target is not None and target.endswith("#match")  # lands on the match
    seq = parse_qs(urlsplit(target).query)["at"][0]
    await first.click()
    event = page.locator(f"li#e{seq}")
    assert await event.is_visible()
    assert await in_view(event.locator("mark#match"))
    await event.locator("a.json").click()
    assert await page.locator("h2", has_text="Exact JSON").is_visible()
    assert f'"seq":{seq}' in (await page.locator("pre.json").inner_text()).replace(" ", "")
    await page.click("text=lineage")
    graph = page.locator("svg.lineage")
    assert await graph.is_visible()
    assert await graph.locator("rect").count() >= 1
    await graph.locator("a.node").first.click()
    assert await page.locator("ol.timeline li.event").count() >= 1


async def test_a_cjk_query_and_markup_that_stays_text(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/search?{WS}&q={quote(CJK_QUERY)}")
    marks = await page.locator("ol.hits mark").all_inner_texts()
    assert marks and all(m in "连接超时" for m in marks), marks
    await page.locator("ol.hits li.hit a").first.click()
    assert HOSTILE in page.url
    # The injected markup is shown as text; it made no element and ran nothing.
    assert SCRIPT in await page.locator("main").inner_text()
    assert await page.evaluate("document.querySelectorAll('script, img').length") == 0
    assert await page.evaluate("typeof window.__pwned") == "undefined"
    assert SCRIPT in await page.title()


async def test_a_1_mib_event_renders_paged(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/session?{WS}&id={HOSTILE}")
    big = page.locator(f"li#e{BIG_SEQ}")
    await big.locator("summary").click()  # a tool result is folded
    assert "The first 2,048 of" in await big.inner_text()
    assert BIG_MARKER not in await page.content()
    await big.locator("a.json").click()
    parts = 0
    while await page.locator("p.pager.bottom >> text=next part →").count():
        assert BIG_MARKER not in await page.locator("pre.json").inner_text()
        assert await page.locator("p.pager", has_text="next part →").count() == 2  # both ends
        await page.click("p.pager.bottom >> text=next part →")
        parts += 1
    assert parts >= 15  # ~1 MiB in 64 Ki-character parts
    assert BIG_MARKER in await page.locator("pre.json").inner_text()


async def test_sessions_sort_and_filter(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/sessions?{WS}")
    await page.click("th a:has-text('created')")
    await page.click("th a:has-text('created')")  # ascending now
    first = page.locator("table.sessions tbody tr").first
    assert PAY_ROOT in await first.inner_text()
    await page.check("input[name=roots]")
    await page.click("form.filters button")
    rows = page.locator("table.sessions tbody tr")
    assert await rows.count() == 2  # the payments root and the hostile session


async def test_titles_in_every_row_heading_hit_and_lineage(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/sessions?{HWS}")
    rows = page.locator("table.sessions tbody tr")
    assert await rows.count() == len(SESSIONS)
    for row in await rows.all():
        assert FIRST_PROMPT[:40] in await row.locator(".title").inner_text()
        assert await row.locator(".derived").inner_text() == "(first prompt)"
    await page.fill("input[name=title]", "clobbers the transcript")
    await page.click("form.filters button")
    assert await rows.count() == len(SESSIONS)  # the filter searches the shown title
    await page.goto(f"{ui.server.base_url}/search?{HWS}&q={BRACKET_WORD}")
    hits = page.locator("ol.hits li.hit")
    assert await hits.count() == len(SESSIONS)
    for hit in await hits.all():
        assert FIRST_PROMPT[:40] in await hit.locator(".title").inner_text()
    await page.goto(f"{ui.server.base_url}/session?{HWS}&id={CHILD}")
    assert FIRST_PROMPT[:40] in await page.locator("h1").inner_text()
    await page.goto(f"{ui.server.base_url}/lineage?{HWS}&id={CHILD}")
    assert await page.locator("ul.nodes li .title").count() == 2  # the fork and its parent
    assert FIRST_PROMPT[:30] in (await page.locator("svg.lineage").text_content() or "")


async def test_a_hit_lands_on_its_event_past_the_cut_highlighted(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/search?{HWS}&q={DEEP_WORD}")
    hit = page.locator("ol.hits li.hit", has_text=SESSIONS[2])
    assert await _marks(hit) == [DEEP_WORD]
    await hit.locator("a").first.click()
    target = page.locator("li.event.target")
    assert await target.get_attribute("id") == f"e{DEEP_SEQ}"
    assert await target.locator("details[open]").count() == 1  # the tool result unfolded
    mark = target.locator("mark")
    assert await _marks(target) == [DEEP_WORD]
    assert await in_view(mark.first)
    # The match is past the first 3,000 characters: the part holding it is shown.
    assert "where the search matched" in await target.locator("p.cut").inner_text()
    await target.locator("p.cut a").click()
    assert await _marks(page.locator("pre.readable")) == [DEEP_WORD]
    assert await in_view(page.locator("mark#match"))
    # The event page's parts are fixed (16,384 characters): the match is in the first.
    assert await page.locator("p.pager", has_text="part 1 of").count() == 2


async def test_events_read_as_text_without_escapes(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    sid = SESSIONS[2]
    await page.goto(f"{ui.server.base_url}/session?{HWS}&id={sid}")
    for summary in await page.locator("details.tool > summary").all():
        await summary.click()
    main = await page.locator("main").inner_text()
    assert "\\n" not in main and "pytest -q tests/test_hooks.py" in main
    assert "Bash · tool/call" in main and "Bash · tool/result" in main
    assert "- [X] read the ledger code\n- [ ] run the tests" in main  # lines kept
    await page.goto(f"{ui.server.base_url}/event?{HWS}&id={sid}&seq={DEEP_SEQ}")
    text = await page.locator("pre.readable").inner_text()
    assert "\\n" not in text and text.count("\n") > 100
    await page.click("text=exact JSON")
    assert "\\n" in await page.locator("pre.json").inner_text()  # the exact JSON, escapes kept


async def test_no_highlight_outside_the_query_matches(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/search?{HWS}&q={BRACKET_WORD}")
    hits = page.locator("ol.hits")
    assert "[X]" in await hits.inner_text()  # the literal checkbox is shown, as text
    marks = await _marks(hits)
    assert marks and {m.lower() for m in marks} == {BRACKET_WORD}
    await page.locator("ol.hits li.hit a").first.click()
    target = page.locator("li.event.target")
    assert {m.lower() for m in await _marks(target)} == {BRACKET_WORD}
    assert await page.locator("mark").count() == await target.locator("mark").count()


async def test_no_page_scrolls_sideways_on_a_phone(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.set_viewport_size(PHONE)
    sid = SESSIONS[2]
    paths = [
        "/",
        f"/sessions?{HWS}",
        f"/sessions?{WS}",
        f"/search?{HWS}&q={DEEP_WORD}",
        f"/search?{WS}&q=idempotency",
        f"/session?{HWS}&id={sid}&at={DEEP_SEQ}&q={DEEP_WORD}",
        f"/session?{WS}&id={PAY_ROOT}",
        f"/event?{HWS}&id={sid}&seq={DEEP_SEQ}",
        f"/event?{HWS}&id={sid}&seq={DEEP_SEQ}&view=json",
        f"/lineage?{HWS}&id={CHILD}",
        f"/lineage?{WS}&id={PAY_ROOT}",
        "/ops",
    ]
    for path in paths:
        await page.goto(ui.server.base_url + path)
        for summary in await page.locator("details > summary").all():
            await summary.click()  # unfolded content must fit too
        widths = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], (path, widths)


async def test_search_messages(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/search?{HWS}&q=nonexistentword")
    summary = await page.locator("main").inner_text()
    assert summary.count("No results") == 1 and "partial" not in summary
    await page.goto(f"{ui.server.base_url}/search?{HWS}&q=test")
    assert "Results 1–" in await page.locator("p.summary").inner_text()
    await page.select_option("select[name=type]", "tool/result")
    await page.click("form.search button")
    types = await page.locator("ol.hits .type").all_inner_texts()
    assert types and set(types) == {"tool/result"}
    await page.goto(f"{ui.server.base_url}/search?{HWS}&q=test&other_type=Not+A+Type!")
    assert "is not an event type" in await page.locator("p.error").inner_text()
    long_query = "word " * 500
    response = await page.goto(f"{ui.server.base_url}/search?{HWS}&q={quote(long_query)}")
    assert response.status == 400
    assert "the most is 2,000" in await page.locator("p.error").inner_text()
    assert await page.locator("form.search input[name=q]").count() == 1  # the box stays


async def test_results_are_numbered_across_pages(page: Any, ui: Ui) -> None:
    await _login(page, ui)
    await page.goto(f"{ui.server.base_url}/search?ws={quote(MANY, safe='')}&q={MANY_WORD}")
    first = await page.locator("ol.hits li.hit").count()
    assert 0 < first < MANY_SESSIONS
    assert (
        f"Results 1–{first} of more than {first}." in await page.locator("p.summary").inner_text()
    )
    await page.click("text=more results →")
    assert await page.locator("ol.hits").get_attribute("start") == str(first + 1)
    # The last page: the total is known.
    summary = f"Results {first + 1}–{MANY_SESSIONS} of {MANY_SESSIONS}."
    assert summary in await page.locator("p.summary").inner_text()


async def test_a_down_worker_is_said_within_2_s(bare_ui: UiServer, tmp_path: Path) -> None:
    skip_without_browser()
    async with browser(tmp_path / "profile") as ctx:
        page = await ctx.new_page()
        await page.goto(bare_ui.login_url)
        for path in ("/", "/sessions?ws=x", "/search?ws=x&q=y", "/ops"):
            started = time.monotonic()
            response = await page.goto(bare_ui.base_url + path)
            banner = page.locator(".banner[role=alert]")
            assert await banner.is_visible()
            assert time.monotonic() - started < 2.0, path
            assert response.status == 503
            assert "No worker answers" in await banner.inner_text()
