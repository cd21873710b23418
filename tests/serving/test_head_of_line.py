"""No head-of-line blocking: a lagging caller's read-your-writes wait never holds the
exclusive search lane, so another workspace's search is not delayed by it.

Real nats-server, real worker with its SQLite index, events ingested from JetStream.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.errors import ErrorCode
from contracts.subjects import Subjects
from tests._harness import call, config_for, event, publish, until
from worker.config import ToolConfig
from worker.replica.ingest_consumer import ensure_events_stream
from worker.worker import Worker

CATCH_UP_S = 4.0


def session(session_id: str, cwd: str, text: str) -> list[dict[str, Any]]:
    return [
        event(session_id, 1, "session/start", {"cwd": cwd}),
        event(session_id, 2, "message/user", {"text": text}),
    ]


def search(request_id: str, caller: str, step_start_seq: int, query: str) -> bytes:
    return orjson.dumps(
        {
            "request_id": request_id,
            "execution": {
                "agent": {"session_id": caller},
                "step_start_seq": step_start_seq,
            },
            "arguments": {"query": query},
        }
    )


async def test_lagging_callers_do_not_delay_another_workspaces_search(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    corpus = [
        *session("s-lag-1", "/ws/lagging", "papaya one"),
        *session("s-lag-2", "/ws/lagging", "papaya two"),
        *session("s-other-caller", "/ws/other", "mango caller"),
        *session("s-other-old", "/ws/other", "kiwi smoothie recipe"),
    ]
    await publish(nc, subjects, corpus)
    config = config_for(
        subjects, tmp_path, tools=ToolConfig(catch_up_timeout_ms=int(CATCH_UP_S * 1000))
    )
    worker = await Worker.start(nc, config)
    try:

        async def indexed() -> bool:
            return (await worker.indexed_through()) == len(corpus)

        await until(indexed, within=20)
        # Two callers whose current step is ahead of the index (events 3..4 not yet sent).
        lag_1 = asyncio.create_task(
            call(nc, subjects, "session_event_search", search("r-lag-1", "s-lag-1", 5, "papaya"))
        )
        lag_2 = asyncio.create_task(
            call(nc, subjects, "session_event_search", search("r-lag-2", "s-lag-2", 5, "papaya"))
        )
        await until(lambda: worker.search.waiting == 2)
        started = time.monotonic()
        other, _ = await call(
            nc, subjects, "session_search", search("r-other", "s-other-caller", 3, "kiwi")
        )
        other_s = time.monotonic() - started
        assert other["status"] == "ok", other
        assert "s-other-old" in other["content"]
        # Not held behind the two catch-up waits (each up to CATCH_UP_S, 8 s in a row).
        assert other_s < CATCH_UP_S, other_s
        assert not lag_1.done() and not lag_2.done()
        # A lagging caller's malformed search is answered at once: arguments are checked
        # before the catch-up wait.
        bad = orjson.loads(search("r-bad", "s-lag-1", 5, "papaya"))
        bad["arguments"]["workspace"] = "/ws/other"
        started = time.monotonic()
        refused, _ = await call(nc, subjects, "session_event_search", orjson.dumps(bad))
        assert refused["error"]["code"] == ErrorCode.INVALID_ARGUMENTS.value
        assert time.monotonic() - started < CATCH_UP_S

        # The first lagging caller's events arrive: it is answered, correctly.
        await publish(
            nc,
            subjects,
            [
                event("s-lag-1", 3, "step/start", {}),
                event("s-lag-1", 4, "message/user", {"text": "papaya again"}),
            ],
        )
        first, _ = await lag_1
        assert first["status"] == "ok", first
        assert "seq 2" in first["content"] and "seq 4" in first["content"]
        # The second never catches up: TIMEOUT at its catch-up bound, not a wrong answer.
        second, _ = await lag_2
        assert second["error"]["code"] == ErrorCode.TIMEOUT.value
        assert "up to seq 4" in second["error"]["message"]
        assert worker.search.waiting == 0
    finally:
        await worker.stop()
