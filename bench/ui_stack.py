"""What the UI scripts run against: a nats-server, a corpus on its stream, a worker (its
own process, as deployed) that has indexed and made searchable all of it, and
``sessionquery ui``'s server in this process; plus a Chromium driven by Playwright.

Used by ``bench.ui_screenshots`` (the sample corpus) and ``bench.ui_paint`` (a generated
corpus of the size asked, beside the sample corpus).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench import corpus
from bench.child import ChildProcess, wait_ingested, wait_searchable, worker_args
from bench.report import bench_subjects, nats_url

CHROMIUM: Final = "/usr/bin/chromium"
CHROMIUM_ARGS: Final = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip


@dataclass
class Stack:
    server: Any  # worker.ui.server.UiServer
    subjects: Any
    events: int  # on the stream
    tmp: Path
    worker_pid: int


@asynccontextmanager
async def ui_stack(
    config: corpus.CorpusConfig | None,
    *,
    app: Any = None,
    extra_events: list[dict[str, Any]] | None = None,
    ingest_timeout_s: float = 3600.0,
) -> AsyncIterator[Stack]:
    import nats

    from worker.commands.sample_publish import publish_sample_corpus
    from worker.transport.connection import NatsOptions, connect_reporting
    from worker.ui.server import UiApp, UiServer

    subjects = bench_subjects("ui")
    with tempfile.TemporaryDirectory(prefix="sq-bench-ui-") as tmp_name:
        tmp = Path(tmp_name)
        async with nats_url(None) as url:
            nc = await nats.connect(url)
            worker = ChildProcess(worker_args(url, tmp / "index.sqlite", subjects),
                                  log_path=tmp / "worker.log")  # fmt: skip
            server = None
            try:
                await publish_sample_corpus(nc, subjects)
                if config is not None:
                    await corpus.publish_corpus(nc.jetstream(), subjects, config)
                if extra_events:
                    await corpus.publish_events(nc.jetstream(), subjects, extra_events)
                info = await nc.jetstream().stream_info(subjects.events_stream)
                pid = await worker.start()
                await wait_ingested(tmp / "index.sqlite", info.state.last_seq, ingest_timeout_s)
                await wait_searchable(tmp / "index.sqlite", ingest_timeout_s, poll_s=0.2)

                async def connect() -> Any:
                    return await connect_reporting(NatsOptions(url=url), attempts=1)

                server = await asyncio.to_thread(
                    UiServer.start, connect, subjects, app=app or UiApp
                )
                yield Stack(server, subjects, info.state.last_seq, tmp, pid)
            finally:
                if server is not None:
                    await asyncio.to_thread(server.stop)
                await worker.stop()
                await nc.close()


@asynccontextmanager
async def chromium(profile: Path, **context: Any) -> AsyncIterator[Any]:
    """A context of the distribution's headless Chromium with a fresh profile."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        ctx = await pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS),
            viewport={"width": 1280, "height": 860}, **context,
        )  # fmt: skip
        try:
            yield ctx
        finally:
            await ctx.close()
