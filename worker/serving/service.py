"""The ``session-query`` micro service: one endpoint per tool, plus the manifest.

Endpoints carry each tool's execution mode and read-only flag as metadata, so
``$SRV.INFO`` describes the tools; ``$SRV.PING/INFO/STATS`` are answered by
``worker.transport.micro``. Every endpoint is declared once (``execution.Declared``) and its
intake wrapped by the executor, the one outer guard: nothing internal reaches a reply.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from contracts.subjects import SERVICE_NAME, Subjects
from worker.serving.execution import Declared, Executor
from worker.serving.lane_decisions import lane_of
from worker.serving.presenters import TOOL_FAILURES
from worker.serving.slow_consumers import SlowConsumerWatch
from worker.tools import ToolDefinition, ToolSet
from worker.transport.micro import MicroService
from worker.transport.pending import PendingLimits

MsgHandler = Callable[[ToolDefinition, Msg], Awaitable[None]]

MANIFEST_ENDPOINT = "manifest"


def manifest_of(toolset: ToolSet, version: str, partition_count: int) -> dict[str, Any]:
    return {
        # The service version (the same as $SRV.INFO's): docs/protocol.md, Versioning.
        "version": version,
        # The events stream's partitions: a requester's partition of its caller's cwd.
        "partition_count": partition_count,
        "tools": [
            {
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.input_schema,
                "execution": tool.execution,
                "read_only": tool.read_only,
            }
            for tool in toolset.tools
        ],
        "prompt_section": toolset.prompt_section,
    }


def service_metadata(subjects: Subjects, version: str) -> dict[str, str]:
    """$SRV.INFO's service metadata: where a client finds the rest of the protocol."""
    return {
        "subject_prefix": subjects.prefix,
        "manifest": subjects.manifest,
        "manifest_version": version,
        "cancel": subjects.cancel,
        "protocol": "docs/protocol.md",
    }


def endpoint_metadata(tool: ToolDefinition) -> dict[str, str]:
    # micro metadata values are strings.
    return {
        "tool": tool.name,
        "execution": tool.execution,
        "read_only": "true" if tool.read_only else "false",
        "lane": lane_of(tool.execution),
        **({} if tool.partition is None else {"partition": str(tool.partition)}),
    }


class ToolService:
    """The registered micro service; ``drain_endpoints`` stops intake, ``stop`` ends it."""

    def __init__(self, nc: NATS, service: MicroService, manifest: bytes) -> None:
        self._nc = nc
        self.micro = service
        self.manifest = manifest

    @property
    def id(self) -> str:
        return self.micro.id

    @classmethod
    async def start(
        cls,
        nc: NATS,
        *,
        executor: Executor,
        toolset: ToolSet,
        subjects: Subjects,
        version: str,
        partition_count: int,
        toolsets: Mapping[int | None, ToolSet] | None = None,
        route: Callable[[ToolDefinition], MsgHandler],
        stats: Callable[[str], dict[str, Any]] | None = None,
        pending: PendingLimits | None = None,
        slow_consumers: SlowConsumerWatch | None = None,
        metadata: dict[str, str] | None = None,
        before_stats: Callable[[], Awaitable[None]] | None = None,
    ) -> ToolService:
        """Register the service; every endpoint subscribes with ``pending`` limits (nats-py's
        defaults when None), and a tool request one of them drops as a slow consumer is
        answered through ``slow_consumers``. The executor's reply stats supply the error
        counts."""
        reply_stats = executor.stats

        def stats_hook(endpoint: str) -> tuple[int, str | None, Any]:
            # The executor answers errors, never raises: the replies sent are the errors.
            errors = reply_stats.errors[endpoint]
            last = reply_stats.last_error.get(endpoint)
            # $SRV.STATS shows each endpoint's lane state beside the micro counters.
            return errors, last, stats(endpoint) if stats is not None else None

        service = MicroService(
            nc,
            name=SERVICE_NAME,
            version=version,
            description="Read-only search, trace and read tools over earlier agent sessions",
            metadata={**service_metadata(subjects, version), **(metadata or {})},
            stats_hook=stats_hook,
            before_stats=before_stats,
        )
        await service.start()
        self = cls(nc, service, orjson.dumps(manifest_of(toolset, version, partition_count)))
        served: Mapping[int | None, ToolSet] = toolsets if toolsets is not None else {None: toolset}
        for declared in self._endpoints(toolset, served, subjects, route):
            sub = await executor.serve(service, declared, pending)
            if slow_consumers is not None and declared.name != MANIFEST_ENDPOINT:
                slow_consumers.answer_dropped_requests(sub, declared.name)
        await nc.flush()
        return self

    def _endpoints(
        self,
        toolset: ToolSet,
        toolsets: Mapping[int | None, ToolSet],
        subjects: Subjects,
        route: Callable[[ToolDefinition], MsgHandler],
    ) -> list[Declared]:
        """Every endpoint, declared once: one per tool and partition served (the
        unpartitioned subjects first), taken by its lane's intake, then the manifest."""
        declared = [
            Declared(
                name=tool.endpoint,
                subject=subjects.tool(tool.name, tool.partition),
                metadata=endpoint_metadata(tool),
                intake=functools.partial(route(tool), tool),
                presenter=TOOL_FAILURES,
            )
            for _, served in sorted(toolsets.items(), key=lambda kv: -1 if kv[0] is None else kv[0])
            for tool in served.tools
        ]
        tools = ",".join(t.name for t in toolset.tools)
        manifest = Declared(
            name=MANIFEST_ENDPOINT,
            subject=subjects.manifest,
            metadata={"kind": "manifest", "tools": tools},
            intake=self._manifest,
            presenter=TOOL_FAILURES,
        )
        return [*declared, manifest]

    async def _manifest(self, msg: Msg) -> None:
        if msg.reply:  # no reply subject: nobody to answer
            await self._nc.publish(msg.reply, self.manifest)

    def pending_limits(self, endpoint: str) -> tuple[int, int] | None:
        """(messages, bytes) the endpoint's subscription holds at most; None when gone."""
        return self.micro.pending_limits(endpoint)

    async def drain_endpoints(self) -> None:
        """Stop taking requests, but handle those already delivered to this process."""
        await self.micro.drain_endpoints()

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await self.micro.stop()
