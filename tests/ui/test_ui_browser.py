"""``sessionquery ui`` in a real browser (the distribution's headless Chromium, driven by
Playwright) against a real worker: the token, search to event to lineage, a CJK query,
agent markup that must stay text, and a ~1 MiB event."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import pytest_asyncio

from tests.ui._browser import browser, skip_without_browser
from tests.ui._corpus import BIG_MARKER, BIG_SEQ, CJK_QUERY, HOSTILE, SCRIPT
from tests.ui.conftest import Ui
from worker.commands.sample_corpus import PAY_ROOT, PAYMENTS

WS = "ws=" + quote(PAYMENTS, safe="")
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
    assert target is not None and "#e" in target
    anchor = target.rsplit("#", 1)[1]
    await first.click()
    event = page.locator(f"li#{anchor}")
    assert await event.is_visible()
    await event.locator("a.json").click()
    assert await page.locator("h2", has_text="Exact JSON").is_visible()
    assert f'"seq":{anchor[1:]}' in (await page.locator("pre.json").inner_text()).replace(" ", "")
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
    assert "A long event" in await big.inner_text()
    assert BIG_MARKER not in await page.content()
    await big.locator("p.cut a").click()
    parts = 0
    while await page.locator("text=next part →").count():
        assert BIG_MARKER not in await page.locator("pre.json").inner_text()
        await page.click("text=next part →")
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
