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
from dataclasses import dataclass
from typing import Any, Final, cast

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from worker.runtime.actors import Supervisor
from worker.runtime.cancellation import CancellationRegistry, CancelListener
from worker.runtime.config import WorkerConfig
from worker.runtime.execution import Executor
from worker.runtime.parallel_lane import ParallelLane
from worker.runtime.replica import STATUS_ACTOR, IndexReplica
from worker.runtime.reply_stats import ReplyStats
from worker.runtime.search_lane import ACTOR_NAME as SEARCH_ACTOR
from worker.runtime.search_lane import FETCH_POLL_S, SearchLane
from worker.runtime.service import MANIFEST_ENDPOINT, MsgHandler, ToolService
from worker.runtime.slow_consumers import PendingLimits, SlowConsumerWatch
from worker.runtime.spill import Spiller, SpillPolicy
from worker.store.ingest import IngestStats
from worker.tools import ToolDefinition, ToolSet

log = structlog.get_logger("worker.runtime.worker")

SHUTDOWN_REASON: Final = "the worker is shutting down"

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
        index: IndexReplica | None,
        slow_consumers: SlowConsumerWatch,
        reply_stats: ReplyStats,
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
        self.reply_stats = reply_stats
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
        reply_stats = ReplyStats()
        slow_consumers = SlowConsumerWatch(nc, pending, reply_stats)
        slow_consumers.install()
        opened: IndexReplica | None = None
        if index:
            opened = await IndexReplica.open(nc, config, supervisor)
        try:
            toolset = tools
            if toolset is None:
                assert opened is not None
                from worker.tools import register_tools

                toolset = register_tools(cast(Any, opened.store), config.tools)
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
            executor = Executor(spiller=spiller, stats=reply_stats)
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
                reply_stats=reply_stats,
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
                reply_stats=reply_stats,
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
            # Cancels not honoured (no identity, or not the request's owner), worker-wide.
            "cancels_ignored": self.registry.ignored,
        }
        # nats.micro's processing_time covers the handler only: the enqueue (searches) or
        # the admission to the pool; run_* cover the tool runs this worker executed.
        runs = self.reply_stats.run_figures(endpoint)
        if tool.execution == "exclusive":
            return {
                "lane": "search-queue",
                "running": self.search.running is not None,
                "processing_time_covers": "enqueue",
                **runs,
                # Fetched searches whose catch-up wait runs beside the lane.
                "waiting": self.search.waiting,
                **intake,
            }
        return {
            "lane": "parallel-pool",
            "processing_time_covers": "admission",
            **runs,
            "running": self.parallel.running,
            "waiting": self.parallel.waiting,
            "overloaded": self.parallel.overloaded,
            **intake,
        }

    def in_flight(self) -> InFlight:
        return InFlight(
            searches=(1 if self.search.running is not None else 0) + self.search.waiting,
            parallel_running=self.parallel.running,
            parallel_waiting=self.parallel.waiting,
        )

    def ingest_stats(self) -> IngestStats | None:
        """Ingestion counters: applied, duplicates, dead-lettered (None: no index)."""
        if self._index is None:
            return None
        consumer = self._index.consumer
        if consumer is None:
            return IngestStats()  # rebuilding: the old index takes no events
        stats: IngestStats = consumer.actor.stats
        return stats

    async def indexed_through(self) -> int | None:
        """The SESSIONS stream sequence the index is complete through, its search index
        included (None: no index)."""
        if self._index is None:
            return None
        writer = self._index.writer
        if writer is None:
            return None  # rebuilding: see status()
        stored = int(await writer.last_stream_seq())
        searchable = self._index.store.search_indexed_through()
        return stored if searchable is None else min(stored, searchable)

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
            self._index.stop_ingesting()
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
