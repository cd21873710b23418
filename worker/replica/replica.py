"""The worker's index as a replica of the SESSIONS stream: readers, the one writer, ingestion,
and the rebuild when the index and the stream disagree.

Opening locks the file (``<db>.lock``), checks it (``continuity.preflight``: quick_check,
schema version, stream identity) and then:

- the file is sound and matches the stream: readers, writer and ingestion start;
- it is corrupt or of a schema with no migration: it is rebuilt from the stream first
  (nothing sound to serve meanwhile), then opened;
- it is sound but the stream moved on (re-created, reset, a gap): the old file is served as
  it is while a new one is built beside it, and swapped in when caught up. The tools hold
  the one store, which then reopens the path (``SqliteSessionStore.reopen``): requests from
  then on read the new file, those running on the old one finish there. ``state`` says
  which of opening, serving, rebuilding or stopped the replica is in.

A divergence found later, after a consumer reset, is handled the same way (ingestion into
the old file stops, the old file keeps serving, the new one is built and swapped in) with
``--on-divergence rebuild``; with ``refuse`` it ends ingestion and the worker exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

import structlog
from nats.aio.client import Client as NATS

from contracts.limits import event_size_limit
from worker.actors import Supervisor
from worker.config import WorkerConfig
from worker.replica import continuity, rebuild, snapshot_join
from worker.replica.continuity import IndexPreflight, StreamDiverged, StreamState
from worker.replica.ingest_consumer import EventConsumer, ensure_events_stream
from worker.replica.rebuild import RebuildProgress
from worker.replica.semantic import SEMANTIC_ACTOR, EmbeddingFollower, load_embedder
from worker.replica.snapshot_join import Join
from worker.replica.snapshots import SnapshotPolicy, SnapshotPublisher
from worker.replica.writer_settings import writer_limits
from worker.store.files.index_file import IndexLock
from worker.store.index.writer import IndexWriter
from worker.store.index.writer_process import open_index_writer
from worker.store.protocol import ServiceLimits
from worker.store.search.semantic.embedder import Embedder
from worker.store.sqlite import SqliteSessionStore

log = structlog.get_logger("worker.replica.replica")

INGEST_ACTOR: Final = "ingest"
REBUILD_ACTOR: Final = "index-rebuild"
STATUS_ACTOR: Final = "index-status"
SNAPSHOT_ACTOR: Final = "index-snapshots"
STATUS_EVERY_S: Final = 5.0

# opening: locking, checking, joining; serving: ingesting into the file it serves;
# rebuilding: serving the old file while a new one is built beside it; stopped: closed.
ReplicaState = Literal["opening", "serving", "rebuilding", "stopped"]


class IndexReplica:
    """The SQLite index (readers and the one writer) and its ingestion from JetStream.
    ``writer`` and ``consumer`` are None while a rebuild is in progress."""

    def __init__(
        self,
        nc: NATS,
        config: WorkerConfig,
        supervisor: Supervisor,
        lock: IndexLock,
        store: SqliteSessionStore,
    ) -> None:
        self._nc = nc
        self._config = config
        self._supervisor = supervisor
        self._lock = lock
        self.state: ReplicaState = "opening"
        self.store = store  # the same object across a rebuild: it reopens the new file
        self.writer: IndexWriter[Any] | None = None
        self.consumer: EventConsumer | None = None
        self.stream: StreamState | None = None
        self.rebuild = RebuildProgress()
        self.fatal: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()
        self.last_status: dict[str, Any] = {}
        self.snapshots: SnapshotPublisher | None = None  # when snapshots are published
        self.embedder: Embedder | None = None  # the model, with --semantic on
        self.joined: Join | None = None  # how the index started (snapshot, replay, resume)

    @classmethod
    async def open(cls, nc: NATS, config: WorkerConfig, supervisor: Supervisor) -> IndexReplica:
        """Lock, check (rebuilding first when nothing sound can be served), then serve the
        file and ingest, or rebuild beside it; a failure part way releases what was taken."""
        async with contextlib.AsyncExitStack() as stack:
            lock = IndexLock(config.db_path).acquire()
            stack.callback(lock.release)
            config = _sized(config, nc)
            stream, plan, joined = await _checked(nc, config)
            embedder = await asyncio.to_thread(load_embedder, config)
            replica = cls(nc, config, supervisor, lock, await _open_store(config, embedder))
            replica.embedder = embedder
            replica.joined = joined
            stack.push_async_callback(replica.store.close)
            replica.stream = stream
            if plan.rebuild and plan.background:
                replica._start_rebuild(plan.reason)
            else:
                await replica._start_ingest(stream)
            replica._start_snapshots()
            replica._start_embedding()
            stack.pop_all()
        return replica

    async def _start_ingest(self, stream: StreamState) -> None:
        config = self._config
        writer = await open_index_writer(
            config.db_path,
            mode=config.ingest_writer,
            text_cap_bytes=config.text_cap_bytes,
            max_event_bytes=config.max_event_bytes,
            redaction=config.redaction_spec(),
            limits=writer_limits(config),
        )
        writer.add_commit_listener(self.store.notify_commit)
        consumer = EventConsumer(
            self._nc,
            writer,
            subjects=config.subjects,
            batch_size=config.ingest_batch_size,
            batch_ms=config.ingest_batch_ms,
            batch_bytes=config.ingest_batch_bytes,
            mailbox_size=config.ingest_mailbox_size,
            backlog_bytes=config.ingest_backlog_mib * 2**20,
            on_fatal=self._ingestion_ended,
            partitions=config.partitions,
            redaction=config.redaction_spec(),
        )
        consumer.stream = stream  # as checked, until the consumer checks again
        self.writer, self.consumer = writer, consumer
        self.state = "serving"
        self._supervisor.start(INGEST_ACTOR, consumer.run)

    def _start_snapshots(self) -> None:
        if not SnapshotPolicy.of(self._config).publishing:
            return

        async def seq() -> int | None:
            writer = self.writer
            if writer is None or self.rebuild.running:
                return None
            return int(await writer.last_stream_seq())

        def applied() -> int:
            consumer = self.consumer
            return int(consumer.actor.stats.applied) if consumer is not None else 0

        self.snapshots = SnapshotPublisher(self._nc, self._config, applied=applied, seq=seq)
        self._supervisor.start(SNAPSHOT_ACTOR, self.snapshots.run)

    def _start_embedding(self) -> None:
        if self.embedder is None:
            return
        follower = EmbeddingFollower(self._config.db_path, self.embedder, self.store)
        self._supervisor.start(SEMANTIC_ACTOR, follower.run)

    def _ingestion_ended(self, reason: Exception) -> None:
        """Ingestion stopped for good: rebuild (a divergence, in rebuild mode) or exit."""
        if isinstance(reason, StreamDiverged) and self._config.on_divergence == "rebuild":
            self._start_rebuild(str(reason))
        elif not self.fatal.done():
            self.fatal.set_result(reason)

    def _start_rebuild(self, reason: str) -> None:
        self.state = "rebuilding"
        self.rebuild.running, self.rebuild.reason = True, reason

        async def body() -> None:
            await self._rebuild_in_background(reason)

        self._supervisor.start(REBUILD_ACTOR, body)

    async def _rebuild_in_background(self, reason: str) -> None:
        """The old file keeps serving (no more writes to it) while the new one is built."""
        writer, self.writer, self.consumer = self.writer, None, None
        if writer is not None:
            await writer.close()
        js = self._nc.jetstream()
        stream = await continuity.stream_state(
            js, self._config.subjects.events_stream, self._config.partitions, self._config.subjects
        )
        self.stream = stream
        log.warning("serving the old index while a new one is built", reason=reason)
        await rebuild.build(self._nc, self._config, stream, reason=reason, progress=self.rebuild)
        await rebuild.swap(self._config, "replaced")
        await self.store.reopen()
        await self._start_ingest(stream)
        self.rebuild.running = False

    async def status(self) -> dict[str, Any]:
        """The index against the stream's current state (one stream info request)."""
        from worker.replica.index_report import index_status, lag_seconds

        js = self._nc.jetstream()
        stream = await continuity.stream_state(
            js, self._config.subjects.events_stream, self._config.partitions, self._config.subjects
        )
        meta = await self.writer.info() if self.writer is not None else None
        report = await index_status(self._config, stream, meta)
        applied = int(report.get("applied_seq") or 0)
        report["lag_seconds"] = round(
            await lag_seconds(js, stream.name, applied, stream.target_seq), 3
        )
        report["writer_restarts"] = getattr(self.writer, "restarts", 0)
        report["joined"] = self.joined.report() if self.joined is not None else None
        report["rebuild_running"] = self.rebuild.running
        if self.rebuild.running:
            report["rebuild_applied_seq"] = self.rebuild.applied_seq
            report["rebuild_target_seq"] = self.rebuild.target_seq
            report["rebuild_reason"] = self.rebuild.reason
        return report

    async def refresh_once(self) -> None:
        """``last_status`` read now, for an operator surface that may leave the host: the
        index is named by its file name (``status`` on the host prints the path), and
        ``sampled_at`` (UTC, ISO 8601) says when it was read."""
        report = await self.status()
        report["index"] = Path(str(report["index"])).name
        report["sampled_at"] = datetime.now(UTC).isoformat(timespec="milliseconds")
        self.last_status = report

    async def refresh_status(self) -> None:
        while True:
            try:
                await self.refresh_once()
            except Exception as exc:
                # Status is best effort (JetStream away, a writer restarting).
                log.debug("index status not refreshed", error=type(exc).__name__)
            await asyncio.sleep(STATUS_EVERY_S)

    def identity(self) -> dict[str, str]:
        """For ``$SRV.INFO`` metadata: which stream this index replicates."""
        from worker.store.files.schema import SCHEMA_VERSION

        stream = self.stream
        return {
            "index_schema_version": str(SCHEMA_VERSION),
            "events_stream": self._config.subjects.events_stream,
            "events_stream_created": stream.created if stream is not None else "",
        }

    def stop_ingesting(self) -> None:
        if self.consumer is not None:
            self.consumer.stop()

    async def close(self) -> None:
        await self._supervisor.stop(SNAPSHOT_ACTOR)  # a snapshot cut short is not stored
        await self._supervisor.stop(REBUILD_ACTOR)  # a build cut short is redone next start
        self.stop_ingesting()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._supervisor.wait(INGEST_ACTOR), 10.0)
        await self._supervisor.stop(INGEST_ACTOR)
        await self._supervisor.stop(STATUS_ACTOR)
        await self._supervisor.stop(SEMANTIC_ACTOR)
        if self.embedder is not None:
            self.embedder.close()
        self.state = "stopped"
        with contextlib.suppress(Exception):
            await self.store.close()
        if self.writer is not None:
            await self.writer.close()
        self._lock.release()


def _sized(config: WorkerConfig, nc: NATS) -> WorkerConfig:
    """The config with the largest event the server carries with headers."""
    max_event_bytes = event_size_limit(nc.max_payload, config.max_event_bytes)
    if max_event_bytes == config.max_event_bytes:
        return config
    log.info(
        "max event size lowered to what the server carries with headers",
        max_event_bytes=max_event_bytes,
        server_max_payload=nc.max_payload,
    )
    return config.model_copy(update={"max_event_bytes": max_event_bytes})


async def _checked(nc: NATS, config: WorkerConfig) -> tuple[StreamState, IndexPreflight, Join]:
    """The stream's state, the preflight's plan for the file and how the index joined; a
    file with nothing sound to serve (corrupt, or of a schema with no migration) is
    rebuilt here, first."""
    config.db_path.parent.mkdir(parents=True, exist_ok=True)
    js = nc.jetstream()
    await ensure_events_stream(js, config.subjects)
    held = (config.subjects.events_stream, config.partitions, config.subjects)
    stream = await continuity.stream_state(js, *held)
    joined = await snapshot_join.join_from_snapshot(nc, config, stream)
    if joined.how == "snapshot":
        stream = await continuity.stream_state(js, *held)
    plan = await asyncio.to_thread(
        continuity.preflight, config.db_path, stream, on_divergence=config.on_divergence
    )
    if plan.rebuild:
        # Whatever the file held, the index is now built from the stream's start.
        joined = Join("replay", reason=f"rebuild: {plan.reason}")
    if plan.rebuild and not plan.background:
        await rebuild.rebuild(
            nc, config, stream, reason=plan.reason, move_aside_as=plan.move_aside_as
        )
    # One line says how this worker's index started, whichever way it went.
    log.info("index joined", **joined.report(), partitions=stream.held)
    return stream, plan, joined


async def _open_store(config: WorkerConfig, embedder: Embedder | None) -> SqliteSessionStore:
    store = await SqliteSessionStore.open(
        config.db_path,
        readers=config.readers,
        limits=ServiceLimits(max_event_window=config.max_event_window),
    )
    if embedder is not None:
        store.attach_semantic(embedder)
    return store
