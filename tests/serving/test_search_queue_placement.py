"""A fresh cluster may answer "stream not found" for the search queue's stream just after
it was made (the stream is not placed yet): the consumer's creation waits that out, and a
stream that stays missing is still an error (CI saw a worker exit on the first answer)."""

from __future__ import annotations

from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError
from nats.js.manager import JetStreamManager
from structlog.testing import capture_logs

from contracts.subjects import Subjects
from worker.serving import search_queue
from worker.serving.search_queue import QueueSettings, SearchQueue

SETTINGS = QueueSettings(max_ack_pending=1, max_deliver=3, ack_wait_s=30.0)


def _not_placed(times: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """add_consumer answers "stream not found" ``times`` times, then as the server does."""
    real = JetStreamManager.add_consumer
    calls: list[int] = []

    async def flaky(self: JetStreamManager, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) <= times:
            raise NotFoundError(code=404, err_code=10059, description="stream not found")
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(JetStreamManager, "add_consumer", flaky)
    return calls


async def test_a_stream_not_placed_yet_is_waited_for(
    nc: NATS, subjects: Subjects, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _not_placed(2, monkeypatch)
    queue = SearchQueue(nc, subjects, SETTINGS)
    with capture_logs() as logs:
        await queue.ensure()
    assert len(calls) == 3
    info = await nc.jetstream().consumer_info(subjects.search_stream, queue.consumer)
    assert info.config.max_deliver == 3
    assert [e["event"] for e in logs].count("search queue stream not placed yet; retrying") == 2


async def test_a_stream_that_stays_missing_is_an_error(
    nc: NATS, subjects: Subjects, monkeypatch: pytest.MonkeyPatch
) -> None:
    _not_placed(10_000, monkeypatch)
    monkeypatch.setattr(search_queue, "STREAM_PLACED_S", 0.5)
    with pytest.raises(NotFoundError):
        await SearchQueue(nc, subjects, SETTINGS).ensure()
