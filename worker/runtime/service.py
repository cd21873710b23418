"""The ``session-query`` nats.micro service: one endpoint per tool, plus the manifest.

Endpoints carry each tool's execution mode and read-only flag as metadata, so
``$SRV.INFO`` describes the tools; ``$SRV.PING/INFO/STATS`` are answered by nats.micro.
Every endpoint handler is wrapped so that nothing internal can reach a reply: nats.micro
would otherwise answer an escaped exception with its ``repr``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.micro import add_service
from nats.micro.request import Request
from nats.micro.service import Endpoint, EndpointConfig, EndpointStats, Service

from contracts.subjects import SERVICE_NAME, Subjects
from worker.runtime import replies
from worker.runtime.execution import error_reply, send
from worker.runtime.reply_stats import ReplyStats
from worker.runtime.slow_consumers import PendingLimits, SlowConsumerWatch
from worker.tools import ToolDefinition, ToolSet

log = structlog.get_logger("worker.runtime.service")

MsgHandler = Callable[[ToolDefinition, Msg], Awaitable[None]]

MANIFEST_ENDPOINT = "manifest"


def manifest_of(toolset: ToolSet, version: str) -> dict[str, Any]:
    return {
        # The service version (the same as $SRV.INFO's): docs/protocol.md, Versioning.
        "version": version,
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
        "lane": "search-queue" if tool.execution == "exclusive" else "parallel-pool",
    }


class ToolService:
    """The registered micro service; ``drain_endpoints`` stops intake, ``stop`` ends it."""

    def __init__(
        self, nc: NATS, service: Service, manifest: bytes, reply_stats: ReplyStats | None
    ) -> None:
        self._nc = nc
        self.micro = service
        self.manifest = manifest
        self._reply_stats = reply_stats

    @property
    def id(self) -> str:
        return self.micro.id

    @classmethod
    async def start(
        cls,
        nc: NATS,
        *,
        toolset: ToolSet,
        subjects: Subjects,
        version: str,
        route: Callable[[ToolDefinition], MsgHandler],
        stats: Callable[[str], dict[str, Any]] | None = None,
        pending: PendingLimits | None = None,
        slow_consumers: SlowConsumerWatch | None = None,
        reply_stats: ReplyStats | None = None,
        metadata: dict[str, str] | None = None,
    ) -> ToolService:
        """Register the service; every endpoint subscribes with ``pending`` limits (nats-py's
        defaults when None), and a tool request one of them drops as a slow consumer is
        answered through ``slow_consumers``. ``reply_stats`` supplies the error counts."""

        def stats_data(endpoint: EndpointStats) -> dict[str, Any] | None:
            if reply_stats is not None:
                # nats.micro sees no error (the handlers answer errors, never raise).
                endpoint.num_errors += reply_stats.errors[endpoint.name]
                endpoint.last_error = reply_stats.last_error.get(endpoint.name) or (
                    endpoint.last_error
                )
            # $SRV.STATS shows each endpoint's lane state beside nats.micro's counters.
            return stats(endpoint.name) if stats is not None else None

        service = await add_service(
            nc,
            name=SERVICE_NAME,
            version=version,
            description="Read-only search, trace and read tools over earlier agent sessions",
            metadata={**service_metadata(subjects, version), **(metadata or {})},
            stats_handler=stats_data,
        )
        manifest = orjson.dumps(manifest_of(toolset, version))
        self = cls(nc, service, manifest, reply_stats)
        for tool in toolset.tools:
            sub = await add_endpoint(
                nc,
                service,
                EndpointConfig(
                    name=tool.name,
                    subject=subjects.tool(tool.name),
                    handler=self._guard(tool, route(tool)),
                    metadata=endpoint_metadata(tool),
                ),
                pending,
            )
            if slow_consumers is not None:
                slow_consumers.answer_dropped_requests(sub, tool.name)
        await add_endpoint(
            nc,
            service,
            EndpointConfig(
                name=MANIFEST_ENDPOINT,
                subject=subjects.manifest,
                handler=self._manifest,
                metadata={"kind": "manifest", "tools": ",".join(t.name for t in toolset.tools)},
            ),
            pending,
        )
        await nc.flush()
        return self

    def _guard(self, tool: ToolDefinition, handler: MsgHandler) -> Callable[[Request], Any]:
        async def handle(request: Request) -> None:
            msg = request._msg  # the lanes need the raw message (reply subject, headers)
            try:
                await handler(tool, msg)
            except Exception as exc:
                log.exception("endpoint handler failed", tool=tool.name)
                if msg.reply:
                    rid = replies.request_id_of(msg.data)
                    with contextlib.suppress(Exception):
                        reply = error_reply(rid, exc)
                        await send(
                            self._nc,
                            msg.reply,
                            reply,
                            request_id=rid,
                            tool=tool.name,
                            stats=self._reply_stats,
                        )

        return handle

    async def _manifest(self, request: Request) -> None:
        with contextlib.suppress(ValueError):  # no reply subject: nobody to answer
            await request.respond(self.manifest)

    def pending_limits(self, endpoint: str) -> tuple[int, int] | None:
        """(messages, bytes) the endpoint's subscription holds at most; None when gone."""
        for item in self.micro._endpoints or []:
            sub = item._subscription
            if item._name == endpoint and sub is not None:
                return sub._pending_msgs_limit, sub._pending_bytes_limit
        return None

    async def drain_endpoints(self) -> None:
        """Stop taking requests, but handle those already delivered to this process.

        nats.micro has no public drain; draining each endpoint's subscription lets the
        already-received requests through the handlers, then removes the interest.
        """
        for endpoint in list(self.micro._endpoints):
            sub = endpoint._subscription
            if sub is not None:
                try:
                    await sub.drain()
                except Exception:
                    # Not drained (e.g. mid-reconnect): at least stop the intake.
                    log.warning("endpoint drain failed; unsubscribing", exc_info=True)
                    with contextlib.suppress(Exception):
                        await sub.unsubscribe()
                endpoint._subscription = None
        self.micro._endpoints = []

    async def stop(self) -> None:
        await self.drain_endpoints()
        with contextlib.suppress(Exception):
            await self.micro.stop()


async def add_endpoint(
    nc: NATS, service: Service, config: EndpointConfig, pending: PendingLimits | None
) -> Subscription:
    """``Service.add_endpoint`` with explicit pending limits.

    nats.micro subscribes its endpoints with nats-py's default limits and has no option for
    them, so the endpoint is built the way ``add_endpoint`` builds it (nats-py 2.16: the
    service's queue group, ``Endpoint._handle_request`` as the callback, the subscription
    kept on the endpoint, the endpoint listed on the service) and subscribed here.
    """
    if pending is None:
        await service.add_endpoint(config)
        added: Subscription | None = service._endpoints[-1]._subscription
        assert added is not None
        return added
    config = dataclasses.replace(config, queue_group=config.queue_group or service._queue_group)
    endpoint = Endpoint(service, config)
    sub: Subscription = await nc.subscribe(
        endpoint._subject,
        queue=endpoint._queue_group,
        cb=endpoint._handle_request,
        pending_msgs_limit=pending.msgs,
        pending_bytes_limit=pending.bytes,
    )
    endpoint._subscription = sub
    service._endpoints.append(endpoint)
    return sub
