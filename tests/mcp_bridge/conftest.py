"""The bridge tests' worker: the fixture transcripts indexed, the real tools serving."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.mcp_bridge._harness import indexed_worker
from worker.worker import Worker


@pytest.fixture
async def worker(nc: NATS, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Worker]:
    w = await indexed_worker(nc, subjects, tmp_path)
    try:
        yield w
    finally:
        await w.stop()
        await nc.jetstream().delete_stream(subjects.events_stream)
