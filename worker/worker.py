"""The worker: the index, ingestion, the tools and the NATS runtime, composed.

Over 400 lines: the composition root, where the order the pieces open and close in is read.

``Worker.start`` opens the pieces in order on one ``AsyncExitStack``, each registering its
close as it opens: the slow-consumer watch, the supervisor, the tools' source (by default
this worker's index replica: store, writer, supervised ingestion), the spill bucket, the
cancel listener, the parallel pool, the micro service, the search lane. A failure part way
closes exactly what opened, in reverse. ``stop`` is the same stack's close: the two steps
registered last run first (intake stops: ingestion, then the endpoint subscriptions
drained; in-flight work finishes, answered and acked), then every piece closes in the
reverse of its opening.
The caller owns ``nc`` and closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Final

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from contracts.partitions import DEFAULT_PARTITION_COUNT, PartitionScope, PartitionSet
from worker.actors import ActorBody, Supervisor
from worker.config import WorkerConfig
from worker.replica.ingest_actor import IngestStats
from worker.replica.replica import STATUS_ACTOR, IndexReplica
from worker.serving.cancellation import CancellationRegistry, CancelListener
from worker.serving.execution import Executor
from worker.serving.operator_service import OperatorEndpoints
from worker.serving.parallel_lane import ParallelLane
from worker.serving.reply_stats import ReplyStats
from worker.serving.search_lane import ACTOR_NAME as SEARCH_ACTOR
from worker.serving.search_lane import FETCH_POLL_S, SearchLane
from worker.serving.service import MANIFEST_ENDPOINT, MsgHandler, ToolService
from worker.serving.slow_consumers import SlowConsumerWatch
from worker.serving.spill import Spiller, SpillPolicy
from worker.tools import OperatorQueries, ToolDefinition, ToolSet
from worker.transport.pending import PendingLimits

log = structlog.get_logger("worker.worker")

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


@dataclass(frozen=True, slots=True)
class Served:
    """What a worker serves: the tools, and the index replica they read when it is this
    worker's own (its status, ingestion counters and exit reason are then the worker's)."""

    toolset: ToolSet
    index: IndexReplica | None = None
    # The same tools answering one partition's subjects (None: unpartitioned only).
    scoped: Callable[[PartitionScope], ToolSet] | None = None


# Opens what the tools need, registering each close on the stack, and returns them.
ToolSource = Callable[[AsyncExitStack, NATS, WorkerConfig, Supervisor], Awaitable[Served]]


async def indexed_tools(
    stack: AsyncExitStack, nc: NATS, config: WorkerConfig, supervisor: Supervisor
) -> Served:
    """The five tools over this worker's own index replica, opened and ingesting."""
    from worker.tools import register_tools

    index = await IndexReplica.open(nc, config, supervisor)
    stack.push_async_callback(index.close)
    store = index.store

    def scoped(partition: PartitionScope) -> ToolSet:
        return register_tools(store, config.tools, partition=partition)

    return Served(register_tools(store, config.tools), index, scoped)


def spill_policy(config: WorkerConfig) -> SpillPolicy:
    return SpillPolicy(
        bucket=config.subjects.spill_bucket,
        threshold_bytes=config.spill_threshold_bytes,
        preview_bytes=config.spill_preview_bytes,
        ttl_s=config.spill_ttl_s,
        replicas=config.stream_replicas,
    )


class Worker:
    """The runtime serving one tool source; built by ``start``, closed by ``stop``."""

    def __init__(
        self,
        nc: NATS,
        config: WorkerConfig,
        served: Served,
        *,
        supervisor: Supervisor,
        spiller: Spiller,
        slow_consumers: SlowConsumerWatch,
        reply_stats: ReplyStats,
    ) -> None:
        self.nc = nc
        self.config = config
        self.toolset = served.toolset
        self.index = served.index
        self.partitions = self._held()
        self.toolsets = self._toolsets(served)
        # Every endpoint's tool definition, by endpoint name (for its stats).
        self._by_endpoint = {
            tool.endpoint: tool for toolset in self.toolsets.values() for tool in toolset.tools
        }
        self.supervisor = supervisor
        self.slow_consumers = slow_consumers
        self.reply_stats = reply_stats
        self.registry = CancellationRegistry()
        self.executor = executor = Executor(nc, spiller, reply_stats)
        self.search = SearchLane(
            nc,
            subjects=config.subjects,
            toolsets=self.toolsets,
            partitions=self.partitions,
            executor=executor,
            registry=self.registry,
            default_timeout_ms=config.tools.search_timeout_ms,
            max_ack_pending=config.search_max_ack_pending,
            max_deliver=config.search_max_deliver,
            ack_wait_ms=config.search_ack_wait_ms,
            queue_max_msgs=config.search_queue_max_msgs,
            replicas=config.stream_replicas,
            pending=slow_consumers.limits,
        )
        self.parallel = ParallelLane(
            executor=executor,
            registry=self.registry,
            supervisor=supervisor,
            pool_size=config.parallel_pool_size,
            queue_size=config.parallel_queue_size,
            default_timeout_ms=config.exact_timeout_ms,
        )
        self.cancel_listener = CancelListener(
            nc, config.subjects.cancel, self.registry, slow_consumers.limits
        )
        self.service: ToolService | None = None
        self._stack = AsyncExitStack()
        self._stopped = False

    @property
    def fatal(self) -> asyncio.Future[Exception] | None:
        """Resolved with the reason when ingestion stopped for good (the stream diverged,
        the index file was removed or replaced): the process should exit non-zero."""
        return self.index.fatal if self.index is not None else None

    @property
    def partition_count(self) -> int:
        """The events stream's partition count (a worker without an index: the default)."""
        return self.partitions.count

    def _held(self) -> PartitionSet:
        stream = self.index.stream if self.index is not None else None
        return stream.held_set if stream is not None else PartitionSet.all(DEFAULT_PARTITION_COUNT)

    def _toolsets(self, served: Served) -> dict[int | None, ToolSet]:
        """The tools by the partition whose subjects they answer: one set per held
        partition, and the unpartitioned subjects only on a worker that holds them all."""
        toolsets: dict[int | None, ToolSet] = {}
        if self.partitions.is_all:
            toolsets[None] = served.toolset
        if served.scoped is not None:
            count = self.partitions.count
            for k in self.partitions:
                toolsets[k] = served.scoped(PartitionScope(k, count))
        return toolsets

    @classmethod
    async def start(
        cls, nc: NATS, config: WorkerConfig, *, tools: ToolSource = indexed_tools
    ) -> Worker:
        """Start serving the tools ``tools`` opens (by default the five over the index)."""
        async with AsyncExitStack() as stack:
            reply_stats = ReplyStats()
            pending = PendingLimits.of(
                config.endpoint_pending_msgs, config.endpoint_pending_bytes, nc.max_payload
            )
            slow_consumers = SlowConsumerWatch(nc, pending, reply_stats)
            slow_consumers.install()
            stack.callback(slow_consumers.uninstall)
            supervisor = Supervisor()
            stack.push_async_callback(supervisor.stop_all)
            served = await tools(stack, nc, config, supervisor)
            spiller = await Spiller.bind(nc, nc.jetstream(), spill_policy(config))
            worker = cls(
                nc,
                config,
                served,
                supervisor=supervisor,
                spiller=spiller,
                slow_consumers=slow_consumers,
                reply_stats=reply_stats,
            )
            await worker._serve(stack)
            worker._stack = stack.pop_all()
        log.info(
            "worker serving",
            service_id=worker.service.id if worker.service is not None else None,
            prefix=config.subjects.prefix,
            tools=[t.name for t in worker.toolset.tools],
        )
        return worker

    async def _serve(self, stack: AsyncExitStack) -> None:
        """Open the runtime's pieces in order, each registering its close on ``stack``."""
        # Cancels must be heard before the first request can arrive.
        await self.cancel_listener.subscribe()
        stack.push_async_callback(self.cancel_listener.close)
        self._run_actor(stack, CANCEL_ACTOR, self.cancel_listener.run)
        await self.search.ensure()
        self.parallel.start()
        stack.push_async_callback(self.parallel.stop)
        self.service = service = await ToolService.start(
            self.nc,
            executor=self.executor,
            toolset=self.toolset,
            toolsets=self.toolsets,
            subjects=self.config.subjects,
            version=self.config.service_version,
            partition_count=self.partition_count,
            metadata={
                "partitions": str(self.partitions),
                "partition_count": str(self.partition_count),
                **(self.index.identity() if self.index is not None else {}),
            },
            route=self._route,
            stats=self._endpoint_stats,
            pending=self.slow_consumers.limits,
            slow_consumers=self.slow_consumers,
            before_stats=self.index.refresh_once if self.index is not None else None,
        )
        stack.push_async_callback(service.stop)
        await self._serve_operators(stack)
        self._run_actor(stack, SEARCH_ACTOR, self.search.run)
        if self.index is not None:
            self._run_actor(stack, STATUS_ACTOR, self.index.refresh_status)
        # Registered last, so a stop runs them first: work finishes before anything closes.
        stack.push_async_callback(self._finish_in_flight)
        stack.push_async_callback(self._stop_intake, service)

    async def _serve_operators(self, stack: AsyncExitStack) -> None:
        """The operator subjects (``sessionquery ui``), over this worker's own index."""
        if self.index is None:
            return  # tools over another source: nothing an operator could browse here
        operators = OperatorEndpoints(
            self.executor,
            OperatorQueries(self.index.store),
            status=self._operator_status,
            load=lambda: {
                "searches": self.in_flight().searches,
                "parallel_running": self.parallel.running,
                "parallel_waiting": self.parallel.waiting,
                "partitions": str(self.partitions),
            },
            timeout_ms=self.config.tools.search_timeout_ms,
            search_lane=self.search,
        )
        await operators.start(
            self.config.subjects, self.config.service_version, self.slow_consumers.limits
        )
        stack.push_async_callback(operators.stop)

    async def _operator_status(self) -> dict[str, Any]:
        # The report leaves the host: the index is named by its file name, not its path.
        report = await self.status()
        if "index" in report:
            report["index"] = str(report["index"]).rsplit("/", 1)[-1]
        return report

    def _run_actor(self, stack: AsyncExitStack, name: str, body: ActorBody) -> None:
        self.supervisor.start(name, body)
        stack.push_async_callback(self.supervisor.stop, name)

    async def _stop_intake(self, service: ToolService) -> None:
        # Ingestion first: its consumer stops before any actor is cancelled, so a batch
        # that keeps failing (disk full) cannot hold the stop.
        if self.index is not None:
            self.index.stop_ingesting()
        # No new work: endpoints drained (already-delivered requests still handled).
        await service.drain_endpoints()

    async def _finish_in_flight(self) -> None:
        """In-flight work finishes within the grace period, else it is cancelled; its
        replies and acks are on the wire before anything closes."""
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
        with contextlib.suppress(Exception):
            await self.nc.flush()

    def _route(self, tool: ToolDefinition) -> MsgHandler:
        if tool.execution == "exclusive":
            return self._enqueue_search
        return self.parallel.handle

    async def _enqueue_search(self, tool: ToolDefinition, msg: Msg) -> None:
        await self.search.enqueue(tool, msg)

    def _endpoint_stats(self, endpoint: str) -> dict[str, Any]:
        if endpoint == MANIFEST_ENDPOINT and self.index is not None:
            # The index against its stream (what ``sessionquery status`` prints), read when
            # STATS was asked (``sampled_at`` says when, should that read have failed).
            return {"index": self.index.last_status}
        tool = self._by_endpoint.get(endpoint)
        if tool is None:
            return {}
        # The subscription's own limits, and the requests it dropped as a slow consumer.
        limits = self.service.pending_limits(endpoint) if self.service is not None else None
        intake = {
            "pending_msgs_limit": limits[0] if limits else None,
            "pending_bytes_limit": limits[1] if limits else None,
            "slow_consumer_dropped": self.slow_consumers.dropped[
                self.config.subjects.tool(tool.name, tool.partition)
            ],
            # Cancels not honoured (no identity, or not the request's owner), worker-wide.
            "cancels_ignored": self.registry.ignored,
        }
        # nats.micro's processing_time covers the handler only: the enqueue (searches) or
        # the admission to the pool; run_* cover the tool runs this worker executed.
        runs = self.reply_stats.run_figures(endpoint)
        partition = {} if tool.partition is None else {"partition": tool.partition}
        if tool.execution == "exclusive":
            return {
                "lane": "search-queue",
                "running": self.search.running is not None,
                "processing_time_covers": "enqueue",
                **runs,
                # Fetched searches whose catch-up wait runs beside the lane.
                "waiting": self.search.waiting,
                **intake,
                **partition,
            }
        return {
            "lane": "parallel-pool",
            "processing_time_covers": "admission",
            **runs,
            "running": self.parallel.running,
            "waiting": self.parallel.waiting,
            "overloaded": self.parallel.overloaded,
            **intake,
            **partition,
        }

    def in_flight(self) -> InFlight:
        return InFlight(
            searches=(1 if self.search.running is not None else 0) + self.search.waiting,
            parallel_running=self.parallel.running,
            parallel_waiting=self.parallel.waiting,
        )

    def ingest_stats(self) -> IngestStats | None:
        """Ingestion counters: applied, duplicates, dead-lettered (None: no index)."""
        if self.index is None:
            return None
        consumer = self.index.consumer
        if consumer is None:
            return IngestStats()  # rebuilding: the old index takes no events
        stats: IngestStats = consumer.actor.stats
        return stats

    async def indexed_through(self) -> int | None:
        """The SESSIONS stream sequence the index is complete through, its search index
        included (None: no index)."""
        if self.index is None:
            return None
        writer = self.index.writer
        if writer is None:
            return None  # rebuilding: see status()
        stored = int(await writer.last_stream_seq())
        searchable = self.index.store.search_indexed_through()
        return stored if searchable is None else min(stored, searchable)

    async def status(self) -> dict[str, Any]:
        """The index against its stream, for ``$SRV.STATS`` and ``sessionquery status``."""
        if self.index is None:
            return {}
        return await self.index.status()

    async def stop(self) -> None:
        """Graceful: stop intake, finish and answer in-flight work, ack, then close."""
        if self._stopped:
            return
        self._stopped = True
        log.info("worker stopping", in_flight=self.in_flight().total)
        await self._stack.aclose()
        log.info("worker stopped", slow_consumer_dropped=self.slow_consumers.dropped_total)

    async def __aenter__(self) -> Worker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
