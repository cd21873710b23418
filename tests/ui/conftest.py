"""Fixtures of the UI tests: a real worker over a real stream, and ``sessionquery ui``'s
server in front of it (its own NATS connection, on its own loop and threads)."""

from __future__ import annotations

import asyncio
import http.client
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.ui._corpus import ui_worker
from worker.transport.connection import NatsOptions, connect_reporting
from worker.ui.server import UiServer
from worker.worker import Worker


@dataclass
class Ui:
    server: UiServer
    worker: Worker | None = None

    async def get(
        self, path: str, *, cookie: str | None = None, host: str | None = None
    ) -> tuple[int, dict[str, str], str]:
        """(status, headers, body) of one GET, off the loop (the worker runs on it)."""
        return await asyncio.to_thread(self._get, path, cookie, host)

    def _get(
        self, path: str, cookie: str | None, host: str | None
    ) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        try:
            headers = {"Cookie": cookie} if cookie else {}
            if host is not None:
                headers["Host"] = host
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read().decode()
        finally:
            conn.close()

    async def cookie(self) -> str:
        """The session cookie the token's address sets."""
        status, headers, _ = await self.get(f"/?token={self.server.token}")
        assert status == 303, status
        return headers["Set-Cookie"].split(";", 1)[0]


async def start_ui(nats_url: str, subjects: Subjects, **options: object) -> UiServer:
    async def connect() -> NATS:
        return await connect_reporting(NatsOptions(url=nats_url, **options), attempts=1)  # type: ignore[arg-type]

    return await asyncio.to_thread(UiServer.start, connect, subjects)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ui(
    module_nc: NATS,
    nats_url: str,
    module_subjects: Subjects,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Ui]:
    """One worker and UI server for a module's tests, which only read through them (a
    module using it runs its tests in its loop: ``pytest.mark.asyncio(loop_scope="module")``)."""
    tmp_path = tmp_path_factory.mktemp("ui")
    async with ui_worker(module_nc, module_subjects, tmp_path) as worker:
        server = await start_ui(nats_url, module_subjects)
        try:
            yield Ui(server, worker)
        finally:
            await asyncio.to_thread(server.stop)


@pytest_asyncio.fixture(loop_scope="module")
async def bare_ui(nats_url: str, subjects: Subjects) -> AsyncIterator[UiServer]:
    """The UI server with no worker behind its subjects (for what needs none)."""
    server = await start_ui(nats_url, subjects)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.stop)
