"""The worker: the index, ingestion, the tools and the NATS runtime, composed.

``Worker.start`` opens the store and the writer, starts ingestion (supervised), builds the
tools over the store, binds the spill bucket, registers the micro service, and starts the
search lane and the cancel listener. ``stop`` is graceful and loses nothing: intake stops
first (endpoint subscriptions drained, the search pull subscription ended), in-flight work
finishes and is answered and acked, then the service and the index close. The caller owns
``nc`` and closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any, Final

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from contracts.limits import event_size_limit
from worker.runtime.actors import Supervisor
from worker.runtime.cancellation import CancellationRegistry, CancelListener
from worker.runtime.config import WorkerConfig
from worker.runtime.execution import Executor
from worker.runtime.parallel_lane import ParallelLane
from worker.runtime.search_lane import ACTOR_NAME as SEARCH_ACTOR
from worker.runtime.search_lane import FETCH_POLL_S, SearchLane
from worker.runtime.service import MANIFEST_ENDPOINT, MsgHandler, ToolService
from worker.runtime.slow_consumers import PendingLimits, SlowConsumerWatch
from worker.runtime.spill import Spiller, SpillPolicy
from worker.store.ingest import IngestStats
from worker.tools.definitions import ToolDefinition, ToolSet

log = structlog.get_logger("worker.runtime.worker")

SHUTDOWN_REASON: Final = "the worker is shutting down"
INGEST_ACTOR: Final = "ingest"
STATUS_ACTOR: Final = "index-status"
STATUS_EVERY_S: Final = 5.0
CANCEL_ACTOR: Final = "cancel-listener"


@dataclass(frozen=True, slots=True)
class InFlight:
    """What the worker holds right now, for tests and stats."""

    searches: int  # 0 or 1: searches never overlap within a worker
    parallel_running: int
    parallel_waiting: int

    @property
    def total(self) -> int:
        return self.searches + self.parallel_running + self.parallel_waiting


class Worker:
    def __init__(
        self,
        nc: NATS,
        config: WorkerConfig,
        *,
        toolset: ToolSet,
        registry: CancellationRegistry,
        supervisor: Supervisor,
        search: SearchLane,
        parallel: ParallelLane,
        cancel_listener: CancelListener,
        index: _Index | None,
        slow_consumers: SlowConsumerWatch,
    ) -> None:
        self.nc = nc
        self.config = config
        self.toolset = toolset
        self.registry = registry
        self.supervisor = supervisor
        self.search = search
        self.parallel = parallel
        self._cancel_listener = cancel_listener
        self._index = index
        self.slow_consumers = slow_consumers
        self.service: ToolService | None = None
        self._stopped = False

    @property
    def fatal(self) -> asyncio.Future[Exception] | None:
        """Resolved with the reason when ingestion stopped for good (the stream diverged,
        the index file was removed or replaced): the process should exit non-zero."""
        return self._index.fatal if self._index is not None else None

    @classmethod
    async def start(
        cls,
        nc: NATS,
        config: WorkerConfig,
        *,
        tools: ToolSet | None = None,
        index: bool = True,
    ) -> Worker:
        """Start serving. ``index=False`` (only with ``tools``) runs the runtime without
        opening the SQLite index or ingesting, for tests of the lanes."""
        if tools is None and not index:
            raise ValueError("the real tools need the index: pass tools= or index=True")
        supervisor = Supervisor()
        pending = PendingLimits.of(
            config.endpoint_pending_msgs, config.endpoint_pending_bytes, nc.max_payload
        )
        slow_consumers = SlowConsumerWatch(nc, pending)
        slow_consumers.install()
        opened: _Index | None = None
        if index:
            opened = await _Index.open(nc, config, supervisor)
        try:
            toolset = tools
            if toolset is None:
                assert opened is not None
                toolset = opened.register_tools(config)
            js = nc.jetstream()
            spiller = await Spiller.bind(
                nc,
                js,
                SpillPolicy(
                    bucket=config.subjects.spill_bucket,
                    threshold_bytes=config.spill_threshold_bytes,
                    preview_bytes=config.spill_preview_bytes,
                    ttl_s=config.spill_ttl_s,
                    replicas=config.stream_replicas,
                ),
            )
            executor = Executor(spiller=spiller)
            registry = CancellationRegistry()
            search = SearchLane(
                nc,
                subjects=config.subjects,
                toolset=toolset,
                executor=executor,
                registry=registry,
                default_timeout_ms=config.tools.search_timeout_ms,
                max_ack_pending=config.search_max_ack_pending,
                max_deliver=config.search_max_deliver,
                ack_wait_ms=config.search_ack_wait_ms,
                queue_max_msgs=config.search_queue_max_msgs,
                replicas=config.stream_replicas,
                pending=pending,
            )
            parallel = ParallelLane(
                nc,
                executor=executor,
                registry=registry,
                supervisor=supervisor,
                pool_size=config.parallel_pool_size,
                queue_size=config.parallel_queue_size,
                default_timeout_ms=config.exact_timeout_ms,
            )
            listener = CancelListener(nc, config.subjects.cancel, registry, pending)
            worker = cls(
                nc,
                config,
                toolset=toolset,
                registry=registry,
                supervisor=supervisor,
                search=search,
                parallel=parallel,
                cancel_listener=listener,
                index=opened,
                slow_consumers=slow_consumers,
            )
            # Cancels must be heard before the first request can arrive.
            await listener.subscribe()
            supervisor.start(CANCEL_ACTOR, listener.run)
            await search.ensure()
            parallel.start()
            worker.service = await ToolService.start(
                nc,
                toolset=toolset,
                subjects=config.subjects,
                version=config.service_version,
                metadata=opened.identity() if opened is not None else None,
                route=worker._route,
                stats=worker._endpoint_stats,
                pending=pending,
                slow_consumers=slow_consumers,
            )
            supervisor.start(SEARCH_ACTOR, search.run)
            if opened is not None:
                supervisor.start(STATUS_ACTOR, opened.refresh_status)
        except BaseException:
            await supervisor.stop_all()
            if opened is not None:
                await opened.close()
            slow_consumers.uninstall()
            raise
        log.info(
            "worker serving",
            service_id=worker.service.id,
            prefix=config.subjects.prefix,
            tools=[t.name for t in toolset.tools],
        )
        return worker

    def _route(self, tool: ToolDefinition) -> MsgHandler:
        if tool.execution == "exclusive":
            return self._enqueue_search
        return self.parallel.handle

    async def _enqueue_search(self, tool: ToolDefinition, msg: Msg) -> None:
        await self.search.enqueue(tool, msg)

    def _endpoint_stats(self, endpoint: str) -> dict[str, Any]:
        if endpoint == MANIFEST_ENDPOINT and self._index is not None:
            # The index against its stream (what ``sessionquery status`` prints), as of
            # the last refresh (every STATUS_EVERY_S).
            return {"index": self._index.last_status}
        tool = self.toolset.get(endpoint)
        if tool is None:
            return {}
        # The subscription's own limits, and the requests it dropped as a slow consumer.
        limits = self.service.pending_limits(endpoint) if self.service is not None else None
        intake = {
            "pending_msgs_limit": limits[0] if limits else None,
            "pending_bytes_limit": limits[1] if limits else None,
            "slow_consumer_dropped": self.slow_consumers.dropped[
                self.config.subjects.tool(endpoint)
            ],
        }
        if tool.execution == "exclusive":
            return {"lane": "search-queue", "running": self.search.running is not None, **intake}
        return {
            "lane": "parallel-pool",
            "running": self.parallel.running,
            "waiting": self.parallel.waiting,
            "overloaded": self.parallel.overloaded,
            **intake,
        }

    def in_flight(self) -> InFlight:
        return InFlight(
            searches=1 if self.search.running is not None else 0,
            parallel_running=self.parallel.running,
            parallel_waiting=self.parallel.waiting,
        )

    def ingest_stats(self) -> IngestStats | None:
        """Ingestion counters: applied, duplicates, dead-lettered (None: no index)."""
        if self._index is None:
            return None
        stats: IngestStats = self._index.consumer.actor.stats
        return stats

    async def indexed_through(self) -> int | None:
        """The SESSIONS stream sequence the index is complete through (None: no index)."""
        if self._index is None:
            return None
        return int(await self._index.writer.last_stream_seq())

    async def status(self) -> dict[str, Any]:
        """The index against its stream, for ``$SRV.STATS`` and ``sessionquery status``."""
        if self._index is None:
            return {}
        return await self._index.status()

    async def stop(self) -> None:
        """Graceful: stop intake, finish and answer in-flight work, ack, then close."""
        if self._stopped:
            return
        self._stopped = True
        log.info("worker stopping", in_flight=self.in_flight().total)
        # 0. Ingestion first: its consumer stops before any actor is cancelled, so a batch
        # that keeps failing (disk full) cannot hold the stop.
        if self._index is not None:
            self._index.consumer.stop()
        # 1. No new work: endpoints drained (already-delivered requests still handled).
        if self.service is not None:
            await self.service.drain_endpoints()
        # 2. In-flight work finishes within the grace period, else it is cancelled.
        grace = self.config.shutdown_grace_ms / 1000.0
        finishing = asyncio.gather(self.search.stop(), self.parallel.drain())
        try:
            await asyncio.wait_for(asyncio.shield(finishing), timeout=grace)
        except TimeoutError:
            log.warning("grace period over; cancelling in-flight work")
            self.registry.cancel_all(SHUTDOWN_REASON)
            await finishing
        # The fetch loop ends within one poll (its pull subscription is unsubscribed).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.supervisor.wait(SEARCH_ACTOR), FETCH_POLL_S * 3)
        await self.supervisor.stop(SEARCH_ACTOR)
        # 3. Replies and acks are on the wire before anything closes.
        with contextlib.suppress(Exception):
            await self.nc.flush()
        await self.parallel.stop()
        await self.supervisor.stop(CANCEL_ACTOR)
        await self._cancel_listener.close()
        if self.service is not None:
            await self.service.stop()
        # The consumer (stopped first, above) ends before the actors are cancelled.
        if self._index is not None:
            await self._index.close()
        await self.supervisor.stop_all()
        self.slow_consumers.uninstall()
        log.info("worker stopped", slow_consumer_dropped=self.slow_consumers.dropped_total)

    async def __aenter__(self) -> Worker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class _Index:
    """The SQLite index (readers and the one writer) and its ingestion from JetStream."""

    def __init__(
        self,
        store: Any,
        writer: Any,
        consumer: Any,
        supervisor: Supervisor,
        lock: Any,
        fatal: asyncio.Future[Exception],
        config: WorkerConfig,
        nc: NATS,
    ) -> None:
        self.store = store
        self.writer = writer
        self.consumer = consumer
        self._supervisor = supervisor
        self._lock = lock
        self.fatal = fatal
        self._config = config
        self._nc = nc
        self.last_status: dict[str, Any] = {}

    @classmethod
    async def open(cls, nc: NATS, config: WorkerConfig, supervisor: Supervisor) -> _Index:
        """Lock the file, check it against the stream (rebuilding it first when they
        disagree), then open the writer and the readers and start ingestion."""
        from worker.store.index_file import IndexLock

        lock = IndexLock(config.db_path).acquire()
        try:
            return await cls._open_locked(nc, config, supervisor, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    async def _open_locked(
        cls, nc: NATS, config: WorkerConfig, supervisor: Supervisor, lock: Any
    ) -> _Index:
        # Imported here: the lanes run (index=False) without the SQLite modules.
        from worker.runtime import continuity
        from worker.runtime.ingest_consumer import EventConsumer, ensure_events_stream
        from worker.store.protocol import ServiceLimits
        from worker.store.sqlite import SqliteSessionStore
        from worker.store.writer_process import open_index_writer

        config.db_path.parent.mkdir(parents=True, exist_ok=True)
        max_event_bytes = event_size_limit(nc.max_payload, config.max_event_bytes)
        if max_event_bytes != config.max_event_bytes:
            log.info(
                "max event size lowered to what the server carries with headers",
                max_event_bytes=max_event_bytes,
                server_max_payload=nc.max_payload,
            )
            config = dataclasses.replace(config, max_event_bytes=max_event_bytes)
        js = nc.jetstream()
        await ensure_events_stream(js, config.subjects)
        stream = await continuity.stream_state(js, config.subjects.events_stream)
        plan = await asyncio.to_thread(
            continuity.preflight, config.db_path, stream, on_divergence=config.on_divergence
        )
        if plan.rebuild:
            await continuity.rebuild(
                nc, config, stream, reason=plan.reason, move_aside_as=plan.move_aside_as
            )
        writer = await open_index_writer(
            config.db_path,
            mode=config.ingest_writer,
            text_cap_bytes=config.text_cap_bytes,
            max_event_bytes=config.max_event_bytes,
        )
        try:
            store = await SqliteSessionStore.open(
                config.db_path,
                readers=config.readers,
                limits=ServiceLimits(max_event_window=config.max_event_window),
            )
        except BaseException:
            await writer.close()
            raise
        writer.add_commit_listener(store.notify_commit)
        fatal: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()

        def stop_for_good(reason: Exception) -> None:
            if not fatal.done():
                fatal.set_result(reason)

        consumer = EventConsumer(
            nc,
            writer,
            subjects=config.subjects,
            batch_size=config.ingest_batch_size,
            batch_ms=config.ingest_batch_ms,
            on_fatal=stop_for_good,
        )
        consumer.stream = stream  # as checked above, until the consumer checks again
        supervisor.start(INGEST_ACTOR, consumer.run)
        return cls(store, writer, consumer, supervisor, lock, fatal, config, nc)

    async def status(self) -> dict[str, Any]:
        """The index against the stream's current state (one stream info request)."""
        from worker.runtime.continuity import stream_state
        from worker.runtime.status import index_status, lag_seconds

        js = self._nc.jetstream()
        stream = await stream_state(js, self._config.subjects.events_stream)
        report = await index_status(self._config, stream, await self.writer.info())
        applied = int(report.get("applied_seq") or 0)
        report["lag_seconds"] = round(
            await lag_seconds(js, stream.name, applied, stream.last_seq), 3
        )
        report["writer_restarts"] = getattr(self.writer, "restarts", 0)
        return report

    async def refresh_status(self) -> None:
        while True:
            try:
                self.last_status = await self.status()
            except Exception as exc:
                # Status is best effort (JetStream away, a writer restarting).
                log.debug("index status not refreshed", error=type(exc).__name__)
            await asyncio.sleep(STATUS_EVERY_S)

    def identity(self) -> dict[str, str]:
        """For ``$SRV.INFO`` metadata: which stream this index replicates."""
        from worker.store.schema import SCHEMA_VERSION

        stream = self.consumer.stream
        return {
            "index_schema_version": str(SCHEMA_VERSION),
            "events_stream": self._config.subjects.events_stream,
            "events_stream_created": stream.created if stream is not None else "",
        }

    def register_tools(self, config: WorkerConfig) -> ToolSet:
        from worker.tools import register_tools

        return register_tools(self.store, config.tools)

    async def close(self) -> None:
        self.consumer.stop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._supervisor.wait(INGEST_ACTOR), 10.0)
        await self._supervisor.stop(INGEST_ACTOR)
        with contextlib.suppress(Exception):
            await self.store.close()
        await self.writer.close()
        self._lock.release()
