"""Cancellation: ``sessionquery.cancel`` broadcasts reach the request wherever it is.

Every worker listens. A running request's signal is cancelled with the exact reason; the id
is also remembered for a while (bounded count, TTL), so a request still queued — in the
search stream or in the parallel pool's mailbox — is terminated when it comes up, and one
that arrives after its cancel never starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Final

import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from worker.runtime.slow_consumers import PendingLimits
from worker.signals import ExecutionSignal

log = structlog.get_logger("worker.runtime.cancellation")

DEFAULT_REASON: Final = "cancelled by the requester"
# A reason is echoed to the model exactly; this only bounds an abusive one.
MAX_REASON_CHARS: Final = 2048


class CancellationRegistry:
    """Which requests this worker holds, and which ids were cancelled recently."""

    def __init__(self, *, remember: int = 10_000, ttl_s: float = 600.0) -> None:
        self._remember = remember
        self._ttl_s = ttl_s
        self._held: dict[str, set[ExecutionSignal]] = {}
        self._cancelled: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def cancel(self, request_id: str, reason: str) -> int:
        """Cancel ``request_id`` here; returns how many held executions it reached."""
        self._cancelled[request_id] = (reason, time.monotonic() + self._ttl_s)
        self._cancelled.move_to_end(request_id)
        while len(self._cancelled) > self._remember:
            self._cancelled.popitem(last=False)
        signals = self._held.get(request_id, set())
        for signal in list(signals):
            signal.cancel(reason)
        return len(signals)

    def cancelled_reason(self, request_id: str) -> str | None:
        entry = self._cancelled.get(request_id)
        if entry is None:
            return None
        reason, expires = entry
        if expires < time.monotonic():
            del self._cancelled[request_id]
            return None
        return reason

    def attach(self, request_id: str, signal: ExecutionSignal) -> Callable[[], None]:
        """From now on a cancel of ``request_id`` fires ``signal``; returns the detach."""
        if (reason := self.cancelled_reason(request_id)) is not None:
            signal.cancel(reason)
        self._held.setdefault(request_id, set()).add(signal)

        def detach() -> None:
            signals = self._held.get(request_id)
            if signals is not None:
                signals.discard(signal)
                if not signals:
                    del self._held[request_id]

        return detach

    @contextlib.contextmanager
    def hold(self, request_id: str, signal: ExecutionSignal) -> Iterator[None]:
        """While inside, a cancel of ``request_id`` fires ``signal``."""
        detach = self.attach(request_id, signal)
        try:
            yield
        finally:
            detach()

    @property
    def held(self) -> int:
        return sum(len(s) for s in self._held.values())

    def cancel_all(self, reason: str) -> None:
        """Shutdown past its grace period: everything held is cancelled, not remembered."""
        for signals in list(self._held.values()):
            for signal in list(signals):
                signal.cancel(reason)


def parse_cancel(data: bytes) -> tuple[str, str] | None:
    """``{"request_id", "reason"}`` → (id, reason); None when it is not a cancel."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(raw, dict):
        return None
    request_id = raw.get("request_id")
    reason = raw.get("reason")
    if not isinstance(request_id, str) or not request_id:
        return None
    if not isinstance(reason, str) or not reason.strip():
        reason = DEFAULT_REASON
    return request_id, reason[:MAX_REASON_CHARS]


class CancelListener:
    """The actor that applies ``sessionquery.cancel`` broadcasts to the registry."""

    def __init__(
        self,
        nc: NATS,
        subject: str,
        registry: CancellationRegistry,
        pending: PendingLimits | None = None,
    ) -> None:
        self._nc = nc
        self._subject = subject
        self._registry = registry
        self._pending = pending
        self._sub: Subscription | None = None

    async def subscribe(self) -> None:
        """Subscribe and flush, so a cancel published after this returns is seen."""
        if self._sub is None:
            if self._pending is None:
                self._sub = await self._nc.subscribe(self._subject)
            else:
                self._sub = await self._nc.subscribe(
                    self._subject,
                    pending_msgs_limit=self._pending.msgs,
                    pending_bytes_limit=self._pending.bytes,
                )
            await self._nc.flush()

    async def run(self) -> None:
        await self.subscribe()
        assert self._sub is not None
        sub = self._sub
        try:
            async for msg in sub.messages:
                self._apply(msg)
        finally:
            # A crash re-subscribes on restart; a stop leaves nothing behind.
            if self._sub is sub:
                self._sub = None
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

    def _apply(self, msg: Msg) -> None:
        parsed = parse_cancel(msg.data)
        if parsed is None:
            log.warning("ignored a malformed cancel message", size=len(msg.data))
            return
        request_id, reason = parsed
        reached = self._registry.cancel(request_id, reason)
        log.info("cancel received", request_id=request_id, running=reached)

    async def close(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        await asyncio.sleep(0)
