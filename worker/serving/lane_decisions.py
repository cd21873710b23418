"""The lanes' decisions, as pure functions: which lane a tool takes, whether a request is
admitted, and which reply answers it when it is not.

No NATS, no clock reads and no I/O here (the time is a parameter), so each rule is tested
on its own (tests/serving/test_lane_decisions.py); the lanes do the sending and acking.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Final, Literal, Protocol

import orjson

from contracts.envelope import Execution, owner_key
from contracts.errors import ErrorCode
from worker.serving import replies
from worker.serving.replies import EncodedReply
from worker.signals import DeadlineExceeded, ExecutionCancelled
from worker.tools import ToolError, abort_error, tool_failed

Lane = Literal["search-queue", "parallel-pool"]
SEARCH_LANE: Final[Lane] = "search-queue"
PARALLEL_LANE: Final[Lane] = "parallel-pool"

MSG_ID_HEADER: Final = "Nats-Msg-Id"
# js.publish adds this header itself; it counts against max_payload too.
EXPECTED_STREAM_HEADER: Final = "Nats-Expected-Stream"

TOO_LARGE_MESSAGE: Final = (
    "The request is too large to queue for a search; send a shorter query and fewer filters."
)


def lane_of(execution: str) -> Lane:
    """Exclusive tools (the searches) queue fleet-wide; every other tool runs in the pool."""
    return SEARCH_LANE if execution == "exclusive" else PARALLEL_LANE


def expired_at(deadline_ms: int | None, now_ms: int) -> bool:
    return deadline_ms is not None and deadline_ms <= now_ms


def timeout_error() -> ToolError:
    """Our deadline, passed before the search could run."""
    return abort_error(DeadlineExceeded(), started=False)


def timeout_reply(rid: str) -> EncodedReply:
    return _written(rid, timeout_error())


def _written(rid: str, error: ToolError) -> EncodedReply:
    """A tool's reply for ``error``: every ``*_reply`` here is its ``*_error`` written for a
    tool; another endpoint of the lane (the operator's search) writes the error itself."""
    return replies.error(rid, error.code, error.message)


# -- the search endpoint: enqueue or answer ---------------------------------------------


class Enveloped(Protocol):
    """A request's envelope as parsed (``ToolRequest``) or admitted (``Admitted``)."""

    @property
    def request_id(self) -> str: ...

    @property
    def execution(self) -> Execution: ...


def dedupe_id(request: Enveloped) -> str:
    """The work queue's ``Nats-Msg-Id``: the caller identity and request id together, so
    de-duplication is scoped to the caller (ids are only unique per caller)."""
    owner = owner_key(request.execution.agent)
    key = orjson.dumps(
        [owner[0] if owner else None, owner[1] if owner else None, request.request_id]
    )
    return hashlib.sha256(key).hexdigest()


def queue_headers(request: Enveloped) -> dict[str, str]:
    """What a queued search carries besides its body (``queue_encoding``): the stream's
    de-duplication id."""
    return {MSG_ID_HEADER: dedupe_id(request)}


def encoded_size(data: bytes, headers: Mapping[str, str]) -> int:
    """Bytes the server counts against max_payload: the header block plus the payload."""
    block = b"NATS/1.0\r\n" + b"".join(
        f"{key}: {value}\r\n".encode() for key, value in headers.items()
    )
    return len(block) + 2 + len(data)


def enqueue_refusal(
    rid: str, deadline_ms: int | None, size: int, max_payload: int, *, now_ms: int
) -> EncodedReply | None:
    """The reply that answers a search before it is queued, or None to queue it."""
    error = enqueue_refusal_error(deadline_ms, size, max_payload, now_ms=now_ms)
    return None if error is None else _written(rid, error)


def enqueue_refusal_error(
    deadline_ms: int | None, size: int, max_payload: int, *, now_ms: int
) -> ToolError | None:
    """Why a search is answered before it is queued, or None to queue it.

    ``size`` is what the server would count (``encoded_size``): nats-py checks only the
    payload against max_payload, the server counts the headers too and closes the whole
    connection on a violation."""
    if expired_at(deadline_ms, now_ms):
        return timeout_error()
    if size > max_payload:
        return ToolError(ErrorCode.INVALID_ARGUMENTS, TOO_LARGE_MESSAGE)
    return None


EnqueueFailure = Literal["queue-full", "refused", "timed-out", "failed"]


def enqueue_failure_reply(rid: str, failure: EnqueueFailure, *, expired: bool) -> EncodedReply:
    return _written(rid, enqueue_failure_error(failure, expired=expired))


def enqueue_failure_error(failure: EnqueueFailure, *, expired: bool) -> ToolError:
    """When the queue did not take the search: a full queue or a queue that did not answer
    in time is OVERLOADED (retry), unless the deadline passed meanwhile."""
    overloaded = ToolError(ErrorCode.OVERLOADED, replies.OVERLOADED_MESSAGE)
    if failure == "queue-full":
        return overloaded
    if failure == "timed-out":
        return timeout_error() if expired else overloaded
    return tool_failed()


def duplicate_reply(rid: str) -> EncodedReply:
    return replies.error(rid, ErrorCode.INVALID_ARGUMENTS, replies.DUPLICATE_MESSAGE)


# -- the fetch side: run, or answer and terminate -----------------------------------------


FetchedRefusal = Literal["cancelled", "expired", "given-up"]


def fetched_refusal(
    *,
    cancelled: bool,
    deadline_ms: int | None,
    delivered: int,
    max_deliver: int,
    now_ms: int,
) -> FetchedRefusal | None:
    """Why a fetched search is answered without running, or None to run it. A message on
    its last delivery after earlier ones died unanswered must not kill another worker."""
    if cancelled:
        return "cancelled"
    if expired_at(deadline_ms, now_ms):
        return "expired"
    if delivered > 1 and delivered >= max_deliver:
        return "given-up"
    return None


def newer_format_refusal(
    *, deadline_ms: int | None, delivered: int, max_deliver: int, now_ms: int
) -> FetchedRefusal | None:
    """Why a search queued in a format newer than this worker reads is answered here, or
    None to leave it for a worker that reads it (a rolling upgrade): only when it expired
    or this is its last delivery."""
    if expired_at(deadline_ms, now_ms):
        return "expired"
    if max_deliver > 0 and delivered >= max_deliver:
        return "given-up"
    return None


def fetched_refusal_reply(rid: str, refusal: FetchedRefusal, cancel_reason: str) -> EncodedReply:
    return _written(rid, fetched_refusal_error(refusal, cancel_reason))


def fetched_refusal_error(refusal: FetchedRefusal, cancel_reason: str) -> ToolError:
    if refusal == "cancelled":
        return abort_error(ExecutionCancelled(cancel_reason), started=False)
    if refusal == "expired":
        return timeout_error()
    return tool_failed()
