"""Pending limits on a subscription: how many messages (and bytes) nats-py holds for it,
received but not yet handled, before it drops one as a slow consumer.

Every subscription's limits become nats-py's keyword arguments here, in ``pending_kwargs``:
the micro endpoints (``worker.transport.micro``), the search lane's pull and the cancel
broadcast. Why the worker sets its own, and what it does when one is exceeded, is
``worker.serving.slow_consumers``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypedDict

from nats.aio.subscription import DEFAULT_SUB_PENDING_BYTES_LIMIT, DEFAULT_SUB_PENDING_MSGS_LIMIT


@dataclass(frozen=True, slots=True)
class PendingLimits:
    """Per-subscription limits on messages received but not yet handled."""

    msgs: int
    bytes: int

    @classmethod
    def of(cls, msgs: int, size: int, max_payload: int) -> PendingLimits:
        if msgs < 1 or size < 1:
            raise ValueError("endpoint_pending_msgs and endpoint_pending_bytes must be >= 1")
        # nats-py drops a message that would reach the byte limit: one request as large as
        # the server allows must fit, with room for another.
        return cls(msgs=msgs, bytes=max(size, 2 * max_payload))


# nats-py's own defaults, for a subscription given no limits.
NATS_DEFAULT_LIMITS: Final = PendingLimits(
    DEFAULT_SUB_PENDING_MSGS_LIMIT, DEFAULT_SUB_PENDING_BYTES_LIMIT
)


class PendingKwargs(TypedDict):
    pending_msgs_limit: int
    pending_bytes_limit: int


def pending_kwargs(pending: PendingLimits | None) -> PendingKwargs:
    """``subscribe``'s keyword arguments for ``pending`` (nats-py's defaults when None)."""
    limits = pending or NATS_DEFAULT_LIMITS
    return {"pending_msgs_limit": limits.msgs, "pending_bytes_limit": limits.bytes}
