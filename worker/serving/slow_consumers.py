"""Slow consumers: explicit pending limits on the worker's subscriptions, and what the
worker does when one of them falls behind.

nats-py's read loop hands every message to its subscription's pending queue; the
subscription's task then runs the handler. When the queue already holds
``pending_msgs_limit`` messages or ``pending_bytes_limit`` bytes, nats-py drops the message
and calls the connection's error callback with a ``SlowConsumerError`` (subject, reply
subject, sid; not the body). It happens when a burst arrives while the event loop is held
up (a blocking call, a paused or starved process): on resuming, the read loop queues what
the socket holds, up to 256 KiB per read, before any subscription task runs.

nats-py's defaults (524,288 messages and 128 MiB per subscription) would let the six
endpoints hold ~768 MiB of requests that no one is waiting for any more. The worker sets
its own, ``endpoint_pending_msgs`` (default 2,048) and ``endpoint_pending_bytes`` (default
8 MiB, raised to twice the server's max_payload so one largest request always fits), on the
tool and manifest endpoints, the cancel subscription and the search lane's pull
subscription. The parallel pool holds at most pool + queue requests and answers the rest
OVERLOADED, and the search endpoint enqueues one request per PubAck round trip (~1 ms), so
a backlog of thousands at a subscription is already past what it can usefully hold.

Every subscription's limits become nats-py's keyword arguments in one place,
``worker.transport.pending``; the subscriptions themselves are declared in
``worker.transport.micro`` (endpoints), ``search_lane`` (the pull) and ``cancellation``
(the broadcast).

A tool request dropped this way is answered ``SESSION_QUERY_OVERLOADED`` at once from the
error callback (its body was never read, so the reply's ``request_id`` is empty; requesters
match replies by their reply subject). Every drop is counted per subject (``$SRV.STATS``
shows them per endpoint) and logged as an error with its context, at most once a second
per subject so a burst cannot flood the log.

Left at nats-py's defaults: the ingestion feed (a flow-controlled push consumer: the server
pauses it, and a dropped message shows as a consumer sequence gap that replaces the feed)
and the micro ``$SRV`` discovery subscriptions (answered inline, never held).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Final

import structlog
from nats.aio.client import Client as NATS
from nats.aio.subscription import Subscription
from nats.errors import SlowConsumerError

from worker.serving import replies
from worker.serving.reply_stats import ReplyStats
from worker.transport.connection import ErrorRoute, error_route
from worker.transport.pending import PendingLimits

log = structlog.get_logger("worker.serving.slow_consumers")

ErrorCallback = Callable[[Exception], Awaitable[None]]

# At most one error line per subject per this many seconds; the counters count every drop.
LOG_EVERY_S: Final = 1.0


class SlowConsumerWatch:
    """The connection's slow-consumer handler: counts, logs, and answers tool requests.

    nats-py takes its error callback at ``connect``; ``connection.open_connection`` passes an
    ``ErrorRoute`` there, so ``install`` can put this handler in front of the callback the
    connection already has (every other error still goes there) and ``uninstall`` restores
    it. A client connected some other way has no route: drops are then only dropped.
    """

    def __init__(
        self, nc: NATS, limits: PendingLimits, reply_stats: ReplyStats | None = None
    ) -> None:
        self._nc = nc
        self.limits = limits
        self._reply_stats = reply_stats
        self.dropped: Counter[str] = Counter()  # per subject
        self.answered_overloaded = 0
        self._tool_subs: dict[Subscription, str] = {}  # subscription -> endpoint name
        self._logged_at: dict[str, float] = {}
        self._previous: ErrorCallback | None = None
        self._route: ErrorRoute | None = error_route(nc)

    @property
    def dropped_total(self) -> int:
        return self.dropped.total()

    def install(self) -> None:
        route = self._route
        if route is None:
            log.warning("connection not opened by open_connection: slow-consumer drops unanswered")
        elif self._previous is None:
            self._previous = route.handler
            route.handler = self._on_error

    def uninstall(self) -> None:
        # Restored only while this handler is the one installed; when another was put in
        # front of it since, this one stays in that chain and keeps forwarding.
        route = self._route
        if route is not None and self._previous is not None and route.handler == self._on_error:
            route.handler = self._previous
            self._previous = None

    def answer_dropped_requests(self, sub: Subscription, endpoint: str) -> None:
        """Requests this subscription drops are answered OVERLOADED and counted for
        ``endpoint`` (a tool endpoint's name, as ``$SRV.STATS`` names it)."""
        self._tool_subs[sub] = endpoint

    async def _on_error(self, exc: Exception) -> None:
        if isinstance(exc, SlowConsumerError):
            await self._on_slow_consumer(exc)
        elif self._previous is not None:
            await self._previous(exc)

    async def _on_slow_consumer(self, exc: SlowConsumerError) -> None:
        # Runs inside nats-py's read loop, once per dropped message: kept short, never raises.
        subject = str(exc.subject)
        self.dropped[subject] += 1
        answered = False
        if exc.reply and exc.sub in self._tool_subs:
            reply = replies.overloaded("")
            try:
                await self._nc.publish(exc.reply, reply.data, headers=reply.headers)
            except Exception:
                log.warning("could not answer a dropped request", subject=subject, exc_info=True)
            else:
                answered = True
                self.answered_overloaded += 1
                if self._reply_stats is not None:
                    self._reply_stats.record_reply(self._tool_subs[exc.sub], reply)
        now = time.monotonic()
        if now - self._logged_at.get(subject, float("-inf")) < LOG_EVERY_S:
            return
        self._logged_at[subject] = now
        sub = exc.sub
        log.error(
            "slow consumer: message dropped",
            subject=subject,
            sid=exc.sid,
            answered_overloaded=answered,
            dropped_on_subject=self.dropped[subject],
            dropped_total=self.dropped_total,
            pending_msgs=sub.pending_msgs if sub is not None else None,
            pending_bytes=sub.pending_bytes if sub is not None else None,
            pending_msgs_limit=self.limits.msgs,
            pending_bytes_limit=self.limits.bytes,
        )
