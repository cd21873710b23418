"""``$SRV.STATS`` as an operator reads it (issue 23): ``last_error`` holds no requester's
ids, query text or workspace facts, and the manifest endpoint's ``data.index`` is read when
STATS is asked and names the index without its path. A real worker over a real stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.publish import EventRoutes, event_headers
from contracts.subjects import SERVICE_NAME, Subjects
from tests._harness import body, call, sample_corpus_worker, until
from worker.commands.sample_corpus import DEMO_CALLER, PAY_ROOT, WEB_ROOT, sample_events
from worker.serving.reply_stats import STATS_TEXT
from worker.worker import Worker


async def _publish(nc: NATS, subjects: Subjects, events: list[dict[str, Any]]) -> None:
    routes = EventRoutes(subjects)
    js = nc.jetstream()
    for item in events:
        await js.publish(
            routes.subject(item),
            orjson.dumps(item),
            headers=event_headers(item["session_id"], item["seq"]),
        )


@pytest.fixture
async def worker(nc: NATS, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Worker]:
    async with sample_corpus_worker(nc, subjects, tmp_path) as w:
        yield w


async def _stats(nc: NATS, worker: Worker) -> dict[str, dict[str, Any]]:
    assert worker.service is not None
    msg = await nc.request(f"$SRV.STATS.{SERVICE_NAME}.{worker.service.id}", b"", timeout=5)
    return {e["name"]: e for e in json.loads(msg.data)["endpoints"]}


async def test_last_error_is_the_code_and_its_fixed_text_never_the_request(
    nc: NATS, worker: Worker
) -> None:
    subjects = worker.config.subjects
    asked: dict[str, list[dict[str, Any]]] = {
        # a session of another workspace, a missing one, a missing seq of an existing one
        "session_trace": [{"session_id": WEB_ROOT}, {"session_id": "s-missing-77"}],
        "session_event_read": [{"session_id": PAY_ROOT, "seq": 20001}],
        "session_search": [{"query": "(("}, {"query": "x", "created_after": "zzz-not-a-date"}],
    }
    replies: dict[str, list[str]] = {}
    for tool, calls in asked.items():
        for arguments in calls:
            reply, _ = await call(nc, subjects, tool, body(caller=DEMO_CALLER, **arguments))
            assert reply["status"] == "error", reply
            replies.setdefault(tool, []).append(reply["error"]["message"])
    stats = await _stats(nc, worker)
    secrets = [WEB_ROOT, "s-missing-77", PAY_ROOT, "20001", "((", "created_after", "zzz"]
    for tool in asked:
        last_error = stats[tool]["last_error"]
        status, _, text = last_error.partition(":")
        assert STATS_TEXT[status] == text, last_error
        assert not [s for s in secrets if s in last_error], last_error
    assert stats["session_trace"]["last_error"] == "404:SESSION_QUERY_NOT_FOUND"
    # The requester still gets the precise message.
    assert any("s-missing-77" in m for m in replies["session_trace"])


async def test_the_manifest_endpoint_reports_the_index_as_of_the_stats_request(
    nc: NATS, worker: Worker, subjects: Subjects
) -> None:
    more = [
        {**event, "session_id": "s-later", "event_id": f"e-later-{event['seq']}"}
        for event in sample_events()
        if event["session_id"] == PAY_ROOT
    ]
    await _publish(nc, subjects, more)
    total = len(sample_events()) + len(more)

    async def caught_up() -> bool:
        return (await worker.indexed_through()) == total

    await until(caught_up, within=20)
    index = (await _stats(nc, worker))["manifest"]["data"]["index"]
    assert index["applied_seq"] == total
    assert index["stream"]["last_seq"] == total
    assert index["lag_events"] == 0
    assert index["index"] == Path(worker.config.db_path).name  # its name, not its path
    assert "/" not in json.dumps(index["index"])
    assert index["sampled_at"].endswith("+00:00")
