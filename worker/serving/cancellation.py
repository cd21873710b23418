"""Cancellation: ``sessionquery.cancel`` broadcasts reach the request wherever it is.

Every worker listens. A cancel belongs to the requester: it is honoured only for a request
whose trusted ``execution.agent`` identity (session id and agent id) equals the cancel's
own ``agent``; any other cancel is ignored and counted. A running request's signal is
cancelled; the (owner, id) pair is also remembered for a while (bounded count, TTL), so a
request still queued — in the search stream or in the parallel pool's mailbox — is
terminated when it comes up, and one that arrives after its cancel never starts. The
reason reaches the model only as quoted data inside a fixed sentence.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import ValidationError

from contracts.envelope import CancelRequest, owner_key
from worker.signals import ExecutionSignal
from worker.transport.pending import PendingLimits, pending_kwargs

log = structlog.get_logger("worker.serving.cancellation")

# (session_id, agent_id) of the trusted execution.agent; None: a request without identity.
Owner = tuple[str, str | None]

# The reason is the requester's text: it is capped and shown only as quoted data.
MAX_REASON_CHARS: Final = 200
NO_REASON_MESSAGE: Final = "The request was cancelled by the runtime (no reason given)."


def cancel_message(reason: str | None) -> str:
    """The model-facing CANCELLED message: a fixed sentence with the reason as quoted data.

    Control and format characters (newlines, bidi overrides, zero-width marks) are removed,
    the length is capped, and the JSON string escaping means the reason cannot close its
    quotes and continue as the sentence.
    """
    cleaned = "".join(ch for ch in reason or "" if unicodedata.category(ch)[0] != "C")
    cleaned = cleaned.strip()
    if not cleaned:
        return NO_REASON_MESSAGE
    if len(cleaned) > MAX_REASON_CHARS:
        cleaned = cleaned[:MAX_REASON_CHARS] + "…"
    return f"The request was cancelled by the runtime (reason: {orjson.dumps(cleaned).decode()})"


class CancellationRegistry:
    """Which requests this worker holds (and whose), and which were cancelled recently."""

    def __init__(self, *, remember: int = 10_000, ttl_s: float = 600.0) -> None:
        self._remember = remember
        self._ttl_s = ttl_s
        self._held: dict[str, dict[ExecutionSignal, Owner | None]] = {}
        self._cancelled: OrderedDict[tuple[Owner, str], tuple[str, float]] = OrderedDict()
        # Cancels not honoured: no identity, or aimed at a request another identity holds.
        self.ignored = 0

    def cancel(self, owner: Owner | None, request_id: str, message: str) -> int:
        """Cancel ``owner``'s ``request_id`` here; returns how many held executions it
        reached. A cancel without an owner, or one that finds only other owners' requests
        under that id, is ignored and counted."""
        if owner is None:
            self.ignored += 1
            return 0
        key = (owner, request_id)
        self._cancelled[key] = (message, time.monotonic() + self._ttl_s)
        self._cancelled.move_to_end(key)
        while len(self._cancelled) > self._remember:
            self._cancelled.popitem(last=False)
        held = self._held.get(request_id, {})
        mine = [signal for signal, held_by in held.items() if held_by == owner]
        if len(mine) < len(held):
            self.ignored += 1
        for signal in mine:
            signal.cancel(message)
        return len(mine)

    def cancelled_reason(self, owner: Owner | None, request_id: str) -> str | None:
        """The CANCELLED message for ``owner``'s ``request_id``, when it was cancelled."""
        if owner is None:
            return None
        key = (owner, request_id)
        entry = self._cancelled.get(key)
        if entry is None:
            return None
        message, expires = entry
        if expires < time.monotonic():
            del self._cancelled[key]
            return None
        return message

    def attach(
        self, owner: Owner | None, request_id: str, signal: ExecutionSignal
    ) -> Callable[[], None]:
        """From now on ``owner``'s cancel of ``request_id`` fires ``signal``; returns the
        detach."""
        if (message := self.cancelled_reason(owner, request_id)) is not None:
            signal.cancel(message)
        self._held.setdefault(request_id, {})[signal] = owner

        def detach() -> None:
            signals = self._held.get(request_id)
            if signals is not None:
                signals.pop(signal, None)
                if not signals:
                    del self._held[request_id]

        return detach

    @contextlib.contextmanager
    def hold(self, owner: Owner | None, request_id: str, signal: ExecutionSignal) -> Iterator[None]:
        """While inside, ``owner``'s cancel of ``request_id`` fires ``signal``."""
        detach = self.attach(owner, request_id, signal)
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


@dataclass(frozen=True, slots=True)
class ParsedCancel:
    request_id: str
    owner: Owner | None  # None: the cancel carries no valid identity and is ignored
    message: str  # the model-facing CANCELLED message


def parse_cancel(data: bytes) -> ParsedCancel | None:
    """A ``CancelRequest`` body → what to cancel; None when it names no request at all."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(raw, dict):
        return None
    request_id = raw.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        return None
    reason = raw.get("reason")
    message = cancel_message(reason if isinstance(reason, str) else None)
    try:
        parsed = CancelRequest.model_validate({"request_id": request_id, "agent": raw.get("agent")})
    except ValidationError:
        return ParsedCancel(request_id=request_id, owner=None, message=message)
    return ParsedCancel(request_id=request_id, owner=owner_key(parsed.agent), message=message)


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
            self._sub = await self._nc.subscribe(self._subject, **pending_kwargs(self._pending))
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
            self._registry.ignored += 1
            log.warning("ignored a malformed cancel message", size=len(msg.data))
            return
        ignored = self._registry.ignored
        reached = self._registry.cancel(parsed.owner, parsed.request_id, parsed.message)
        if self._registry.ignored != ignored:
            # No identity, or another caller's request: never honoured (the id is logged,
            # the reason is not: it is the sender's text).
            log.warning(
                "cancel ignored: not from the request's owner",
                request_id=parsed.request_id,
                identified=parsed.owner is not None,
            )
            return
        log.info("cancel received", request_id=parsed.request_id, running=reached)

    async def close(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        await asyncio.sleep(0)
