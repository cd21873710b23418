"""``sessionquery ui`` over HTTP (no browser): the token, the host check, escaping, paging
and search, against a real worker answering the operator subjects."""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from nats.aio.client import Client as NATS
from structlog.testing import capture_logs

from contracts.subjects import Subjects
from tests._harness import sample_corpus_worker, until
from tests.ui._corpus import BIG_MARKER, BIG_SEQ, CJK_QUERY, HOSTILE, IMG, SCRIPT
from tests.ui.conftest import Ui, start_ui
from worker.commands.sample_corpus import PAY_CHILD, PAY_ROOT, PAYMENTS, WEB_ROOT
from worker.transport.connection import NatsOptions, connect_reporting
from worker.transport.embedded_server import EmbeddedNatsServer
from worker.ui.server import UiServer
from worker.ui.watch import PROBE_S

WS = "ws=" + quote(PAYMENTS, safe="")
# The module's event loop, where its tests share one worker and UI server (``ui``).
pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_no_token_no_page(bare_ui: UiServer) -> None:
    ui = Ui(bare_ui)
    status, _, body = await ui.get("/")
    assert status == 401 and "Token needed" in body and PAYMENTS not in body
    status, _, body = await ui.get(f"/sessions?{WS}")
    assert status == 401 and PAY_ROOT not in body
    status, _, _ = await ui.get("/?token=wrong-token")
    assert status == 401
    status, _, _ = await ui.get("/ops", cookie="sessionquery_ui=wrong")
    assert status == 401


async def test_the_token_sets_a_cookie_and_leaves_the_address(bare_ui: UiServer) -> None:
    ui = Ui(bare_ui)
    status, headers, _ = await ui.get(f"/sessions?{WS}&token={ui.server.token}")
    assert status == 303
    assert headers["Location"] == f"/sessions?{WS}"
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    cookie = headers["Set-Cookie"].split(";", 1)[0]
    # Past the token, with no worker answering: the page says so.
    status, headers, body = await ui.get("/", cookie=cookie)
    assert status == 503 and "No worker answers the operator subjects" in body
    assert "script-src" not in headers["Content-Security-Policy"]  # none allowed at all
    assert "default-src 'none'" in headers["Content-Security-Policy"]


async def test_a_foreign_host_name_is_refused(bare_ui: UiServer) -> None:
    ui = Ui(bare_ui)
    cookie = await ui.cookie()
    status, _, body = await ui.get("/", cookie=cookie, host=f"evil.example:{ui.server.port}")
    assert status == 403 and "not served" in body
    status, _, _ = await ui.get("/", cookie=cookie, host=f"localhost:{ui.server.port}")
    assert status == 503


async def test_agent_markup_is_text(ui: Ui) -> None:
    cookie = await ui.cookie()
    pages = [
        f"/sessions?{WS}",
        f"/session?{WS}&id={HOSTILE}",
        f"/event?{WS}&id={HOSTILE}&seq=3",
        f"/lineage?{WS}&id={HOSTILE}",
        f"/search?{WS}&q=look",
    ]
    for path in pages:
        status, _, body = await ui.get(path, cookie=cookie)
        assert status == 200, (path, body)
        assert "<script" not in body.lower(), path
        assert "<img" not in body.lower(), path
    _, _, body = await ui.get(f"/session?{WS}&id={HOSTILE}", cookie=cookie)
    assert html.escape(SCRIPT) in body and html.escape(IMG) in body


async def test_a_1_mib_event_is_paged_not_loaded_whole(ui: Ui) -> None:
    cookie = await ui.cookie()
    status, _, body = await ui.get(f"/session?{WS}&id={HOSTILE}", cookie=cookie)
    assert status == 200 and "The first 2,048 of" in body
    assert BIG_MARKER not in body and len(body) < 100_000
    for view, part in (("json", 65_536), ("text", 16_384)):
        start = f"/event?{WS}&id={HOSTILE}&seq={BIG_SEQ}&view={view}"
        status, _, first = await ui.get(start, cookie=cookie)
        assert status == 200 and "next part" in first and BIG_MARKER not in first
        size = int(re.search(r"of ([\d,]+)</span>", first).group(1).replace(",", ""))  # type: ignore[union-attr]
        assert size > 1_000_000
        last = (size // part) * part
        status, _, tail = await ui.get(f"{start}&offset={last}", cookie=cookie)
        assert status == 200 and BIG_MARKER in tail and "next part" not in tail, view


async def test_search_highlights_cjk_and_links_to_the_event(ui: Ui) -> None:
    cookie = await ui.cookie()
    status, _, body = await ui.get(f"/search?{WS}&q={quote(CJK_QUERY)}", cookie=cookie)
    assert status == 200, body
    assert "<mark>" in body
    assert f"/session?{WS}&amp;id={HOSTILE}&amp;at=4&amp;q={quote(CJK_QUERY)}#match" in body
    # The tools' event filters: the match is an assistant message.
    _, _, kept = await ui.get(f"/search?{WS}&q={quote(CJK_QUERY)}&surface=assistant", cookie=cookie)
    assert f"id={HOSTILE}&amp;at=4" in kept
    _, _, dropped = await ui.get(f"/search?{WS}&q={quote(CJK_QUERY)}&surface=user", cookie=cookie)
    assert f"id={HOSTILE}&amp;at=4" not in dropped
    assert "filters removed every match" in dropped or "No results" in dropped


async def test_another_workspace_is_not_found_through_this_one(ui: Ui) -> None:
    cookie = await ui.cookie()
    foreign, _, body = await ui.get(f"/session?{WS}&id={WEB_ROOT}", cookie=cookie)
    missing, _, other = await ui.get(f"/session?{WS}&id=s-nope", cookie=cookie)
    assert foreign == missing == 404
    assert body.replace(WEB_ROOT, "ID") == other.replace("s-nope", "ID")


async def test_timeline_lineage_and_operations(ui: Ui) -> None:
    cookie = await ui.cookie()
    status, _, body = await ui.get(f"/session?{WS}&id={PAY_ROOT}", cookie=cookie)
    assert status == 200 and "replaced by seq" in body and "<details class=tool>" in body
    assert "UTC" in body  # times say their zone
    assert "replaces seq" in body
    status, _, svg = await ui.get(f"/lineage?{WS}&id={PAY_CHILD}", cookie=cookie)
    assert status == 200 and "<svg" in svg and svg.count("<rect") == 4
    status, _, ops = await ui.get("/ops", cookie=cookie)
    assert status == 200 and "applied sequence" in ops and "Dead letters" in ops
    # Flags read as words for people, not as Python's True/False.
    assert "<dt>matches the stream</dt><dd>yes</dd>" in ops and "True" not in ops


async def test_one_log_line_when_the_worker_goes_and_one_when_it_is_back(
    bare_ui: UiServer, module_nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    ui = Ui(bare_ui)
    cookie = await ui.cookie()
    with capture_logs() as logs:
        # Already down since the UI started (its probe said so before this capture).
        for _ in range(3):
            status, _, body = await ui.get("/", cookie=cookie)
            assert status == 503 and "class=banner" in body
        async with sample_corpus_worker(module_nc, subjects, tmp_path):
            await until(lambda: _said(logs, "a worker answers the UI again"), within=PROBE_S * 4)
            status, _, _ = await ui.get("/", cookie=cookie)
            assert status == 200
        await until(lambda: _said(logs, "no worker answers the UI"), within=PROBE_S * 4)
        for _ in range(3):
            status, _, _ = await ui.get("/", cookie=cookie)
            assert status == 503
        await asyncio.sleep(PROBE_S * 1.5)  # the probe runs meanwhile: the same state
    changes = [e["event"] for e in logs if "the UI" in str(e["event"])]
    assert changes == ["a worker answers the UI again", "no worker answers the UI"], changes


async def _said(logs: list[MutableMapping[str, Any]], line: str) -> bool:
    return any(entry.get("event") == line for entry in logs)


async def test_a_lost_nats_connection_is_said_at_once_and_logged_once(
    own_nats_server: EmbeddedNatsServer, tmp_path: Path
) -> None:
    url, subjects = str(own_nats_server.url), Subjects()
    worker_nc = await connect_reporting(NatsOptions(url=url), attempts=1)
    server = await start_ui(url, subjects)
    try:
        async with sample_corpus_worker(worker_nc, subjects, tmp_path):
            ui = Ui(server)
            cookie = await ui.cookie()
            status, _, _ = await ui.get("/", cookie=cookie)
            assert status == 200
            with capture_logs() as logs:
                await asyncio.to_thread(own_nats_server.kill)
                await until(lambda: _said(logs, "no worker answers the UI"), within=PROBE_S * 4)
                for _ in range(3):
                    started = time.monotonic()
                    status, _, body = await ui.get("/", cookie=cookie)
                    assert status == 503 and "lost its NATS connection" in body
                    assert time.monotonic() - started < 2.0  # not the request's 35 s timeout
                await asyncio.sleep(PROBE_S * 1.5)  # reconnects keep failing meanwhile
            changes = [e["event"] for e in logs if "the UI" in str(e["event"])]
            assert changes == ["no worker answers the UI"], changes
    finally:
        await asyncio.to_thread(server.stop)
        with contextlib.suppress(ConnectionResetError):  # its server is gone
            await worker_nc.close()
