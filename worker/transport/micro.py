"""The NATS micro protocol, owned here: queue-group endpoints and the ``$SRV`` verbs.

nats-py's ``nats.micro`` subscribes its endpoints with nats-py's default pending limits and
has no option for them, no drain, and hands handlers a wrapper around the message; reaching
past that meant private fields. The protocol itself is small, so it is written here on
nats-py's public API: each endpoint is a queue subscription (group ``q``) with explicit
pending limits, and ``$SRV.PING``, ``$SRV.INFO``, ``$SRV.STATS`` (for all services, for
this service's name, and for this instance's id) are answered with the JSON documents of
the micro specification (``io.nats.micro.v1.*_response``), as docs/protocol.md §1.1 shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.nuid import NUID

from worker.transport.pending import NATS_DEFAULT_LIMITS, PendingLimits, pending_kwargs

log = structlog.get_logger("worker.transport.micro")

QUEUE_GROUP: Final = "q"  # nats.micro's default: every worker of the service shares it
PREFIX: Final = "$SRV"
VERBS: Final = ("PING", "INFO", "STATS")
PING_TYPE: Final = "io.nats.micro.v1.ping_response"
INFO_TYPE: Final = "io.nats.micro.v1.info_response"
STATS_TYPE: Final = "io.nats.micro.v1.stats_response"
# How long a STATS answer waits for figures read at the time of asking.
STATS_REFRESH_S: Final = 2.0

Handler = Callable[[Msg], Awaitable[None]]
# An endpoint's figures for STATS the service keeps: (errors, last error, data).
StatsHook = Callable[[str], tuple[int, str | None, Any]]


def verb_subjects(verb: str, name: str, service_id: str) -> list[str]:
    """The three subjects a verb is answered on: all services, this kind, this instance."""
    return [f"{PREFIX}.{verb}", f"{PREFIX}.{verb}.{name}", f"{PREFIX}.{verb}.{name}.{service_id}"]


@dataclass(frozen=True, slots=True)
class EndpointSpec:
    """One endpoint, declared once: name, subject, handler and metadata."""

    name: str
    subject: str
    handler: Handler
    metadata: dict[str, str]


@dataclass(slots=True)
class _ServedEndpoint:
    spec: EndpointSpec
    sub: Subscription | None = None
    limits: tuple[int, int] | None = None
    num_requests: int = 0
    processing_time: int = 0  # ns in the handler

    async def handle(self, msg: Msg) -> None:
        # Counting and timing only: the handler is the executor's, which answers every
        # failure itself (worker.serving.execution), so nothing is caught or logged here.
        started = time.perf_counter_ns()
        self.num_requests += 1
        try:
            await self.spec.handler(msg)
        finally:
            self.processing_time += time.perf_counter_ns() - started

    def info(self) -> dict[str, Any]:
        spec = self.spec
        return {
            "name": spec.name,
            "subject": spec.subject,
            "queue_group": QUEUE_GROUP,
            "metadata": spec.metadata,
        }

    def stats(self, hook: StatsHook | None) -> dict[str, Any]:
        # The errors are the replies the executor sent: the service's hook counts them.
        errors, last_error, data = hook(self.spec.name) if hook is not None else (0, None, None)
        average = self.processing_time // self.num_requests if self.num_requests else 0
        return {
            "name": self.spec.name,
            "subject": self.spec.subject,
            "queue_group": QUEUE_GROUP,
            "num_requests": self.num_requests,
            "num_errors": errors,
            "last_error": last_error or "",
            "processing_time": self.processing_time,
            "average_processing_time": average,
            "data": data,
        }


@dataclass(slots=True)
class MicroService:
    """One instance of a micro service: its identity, endpoints and discovery answers."""

    nc: NATS
    name: str
    version: str
    description: str
    metadata: dict[str, str]
    stats_hook: StatsHook | None = None
    # Run (bounded, best effort) before a STATS document is made: figures read then.
    before_stats: Callable[[], Awaitable[None]] | None = None
    id: str = field(default_factory=lambda: NUID().next().decode())
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    _endpoints: list[_ServedEndpoint] = field(default_factory=list)
    _verbs: list[Subscription] = field(default_factory=list)

    async def start(self) -> None:
        """Answer the discovery verbs (plain subscriptions: answered inline, never held)."""
        answers = {"PING": self.ping, "INFO": self.info, "STATS": self.stats}
        for verb in VERBS:
            document = answers[verb]
            for subject in verb_subjects(verb, self.name, self.id):
                answer = self._answer(document, refresh=verb == "STATS")
                self._verbs.append(await self.nc.subscribe(subject, cb=answer))

    def _answer(self, document: Callable[[], dict[str, Any]], *, refresh: bool) -> Handler:
        async def answer(msg: Msg) -> None:
            if not msg.reply:
                return
            if refresh and self.before_stats is not None:
                try:
                    await asyncio.wait_for(self.before_stats(), STATS_REFRESH_S)
                except Exception:  # the figures then say when they were sampled
                    log.debug("STATS figures not refreshed", exc_info=True)
            await self.nc.publish(msg.reply, orjson.dumps(document()))

        return answer

    async def add_endpoint(self, spec: EndpointSpec, pending: PendingLimits | None) -> Subscription:
        """Subscribe ``spec`` in the queue group with ``pending`` limits (nats-py's when None)."""
        limits = pending or NATS_DEFAULT_LIMITS
        endpoint = _ServedEndpoint(spec, limits=(limits.msgs, limits.bytes))
        endpoint.sub = await self.nc.subscribe(
            spec.subject, queue=QUEUE_GROUP, cb=endpoint.handle, **pending_kwargs(limits)
        )
        self._endpoints.append(endpoint)
        return endpoint.sub

    def pending_limits(self, name: str) -> tuple[int, int] | None:
        """(messages, bytes) the endpoint's subscription holds at most; None when gone."""
        for endpoint in self._endpoints:
            if endpoint.spec.name == name and endpoint.sub is not None:
                return endpoint.limits
        return None

    def ping(self) -> dict[str, Any]:
        return {"type": PING_TYPE, **self._identity()}

    def info(self) -> dict[str, Any]:
        return {
            "type": INFO_TYPE,
            **self._identity(),
            "description": self.description,
            "endpoints": [e.info() for e in self._endpoints],
        }

    def stats(self) -> dict[str, Any]:
        started = self.started.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return {
            "type": STATS_TYPE,
            **self._identity(),
            "started": started,
            "endpoints": [e.stats(self.stats_hook) for e in self._endpoints],
        }

    def _identity(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "metadata": self.metadata,
        }

    async def drain_endpoints(self) -> None:
        """Stop taking requests, but let those already delivered through the handlers."""
        endpoints, self._endpoints = self._endpoints, []
        for endpoint in endpoints:
            sub, endpoint.sub = endpoint.sub, None
            if sub is None:
                continue
            try:
                await sub.drain()  # type: ignore[no-untyped-call]  # unannotated in nats-py
            except Exception:
                # Not drained (e.g. mid-reconnect): at least stop the intake.
                log.warning("endpoint drain failed; unsubscribing", exc_info=True)
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

    async def stop(self) -> None:
        await self.drain_endpoints()
        verbs, self._verbs = self._verbs, []
        for sub in verbs:
            with contextlib.suppress(Exception):
                await sub.drain()  # type: ignore[no-untyped-call]  # unannotated in nats-py
