"""Endpoints besides the tools whose requests take the search lane: the operator's search.

Every search takes the search lane, a person's as well as a model's: the operator's
``search`` verb puts its request on the same work queue (one more endpoint, named by the
queue subject's last token, ``operator-search``), and a lane that fetches it admits it once
from the queued document and runs it through the executor with the endpoint's presenter,
one at a time with every other search. Its body is checked before it is queued (a body
that is no ``{"arguments": {...}}`` is answered at once); its arguments are admitted by the
lane that runs it. It has no request id and no caller, so no de-duplication (each message
gets a fresh ``Nats-Msg-Id``) and no cancel; it is queued on a partition this worker holds,
so a replica of the same index answers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.nuid import NUID

from contracts.errors import ErrorCode
from contracts.partitions import PartitionSet
from contracts.subjects import Subjects
from worker.serving import lane_decisions as decide
from worker.serving import queue_encoding
from worker.serving.deadlines import now_ms
from worker.serving.execution import Executor, Route
from worker.serving.lane_decisions import MSG_ID_HEADER
from worker.serving.queue_encoding import NewerFormat, QueuedSearch
from worker.serving.search_queue import SearchQueue, failure_of
from worker.tools import ToolError

log = structlog.get_logger("worker.serving.queued_endpoint")

NOT_JSON_MESSAGE: Final = "The body is not JSON."
NOT_ARGUMENTS_MESSAGE: Final = 'The body must be {"arguments": {...}}.'


class QueuedVerb(Protocol):
    def admit(self, arguments: Mapping[str, Any]) -> Any:
        """The request admitted once; never raises (a refusal rides in the value)."""
        ...


@dataclass(frozen=True, slots=True)
class QueuedEndpoint:
    """An endpoint whose requests the search lane runs: its queue name (the subject's last
    token), how a fetched request is admitted, and the route the executor runs it on."""

    name: str
    verb: QueuedVerb
    route: Route[Any, Any]

    def admitted(self, envelope: Mapping[str, Any]) -> Any:
        arguments = envelope.get("arguments", {})
        return self.verb.admit(arguments if isinstance(arguments, dict) else {})


def body_arguments(data: bytes) -> dict[str, Any] | ToolError:
    """An operator body's ``arguments``, or why it is answered before any verb reads it: it
    must be a JSON object whose ``arguments`` (when given) is an object."""
    try:
        body = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        return ToolError(ErrorCode.INVALID_ARGUMENTS, NOT_JSON_MESSAGE)
    arguments = body.get("arguments", {}) if isinstance(body, dict) else None
    if not isinstance(arguments, dict):
        return ToolError(ErrorCode.INVALID_ARGUMENTS, NOT_ARGUMENTS_MESSAGE)
    return arguments


def fresh_headers() -> dict[str, str]:
    """No request id to de-duplicate on: every queued message is its own."""
    return {MSG_ID_HEADER: NUID().next().decode()}


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched request of another endpoint, admitted once: what the lane's job needs."""

    admitted: Any
    reply_to: str
    deadline_ms: int | None


class QueuedEndpoints:
    """A search lane's endpoints besides the tools: their requests onto its work queue, and
    what it fetches of theirs admitted (or answered and terminated)."""

    def __init__(
        self,
        nc: NATS,
        subjects: Subjects,
        queue: SearchQueue,
        executor: Executor,
        partitions: PartitionSet | None,
    ) -> None:
        self._nc = nc
        self._subjects = subjects
        self._queue = queue
        self._executor = executor
        # A subject this worker's own consumer takes, so a replica of the same index answers.
        self._partition = None if partitions is None or partitions.is_all else min(partitions)
        self._served: dict[str, QueuedEndpoint] = {}

    def serve(self, endpoint: QueuedEndpoint) -> None:
        """Run ``endpoint``'s requests in this lane too."""
        self._served[endpoint.name] = endpoint

    def get(self, name: str) -> QueuedEndpoint | None:
        return self._served.get(name)

    async def enqueue(self, endpoint: QueuedEndpoint, msg: Msg, timeout_ms: int) -> None:
        """The endpoint's handler: its request on the work queue, or answered at once."""
        if not msg.reply:
            return
        deadline_ms = now_ms() + timeout_ms
        arguments = body_arguments(msg.data)
        refusal = arguments if isinstance(arguments, ToolError) else None
        if refusal is None:
            headers = fresh_headers()
            data = queue_encoding.encode(msg.data or b"{}", msg.reply, deadline_ms)
            size = self._queue.counted_size(data, headers)
            refusal = decide.enqueue_refusal_error(
                deadline_ms, size, self._nc.max_payload, now_ms=now_ms()
            )
        if refusal is None:
            subject = self._subjects.search_queue_subject(endpoint.name, self._partition)
            try:
                await self._queue.publish(subject, data, headers, deadline_ms)
                return
            except Exception as exc:
                failure = failure_of(exc)
                log.warning(
                    "enqueue failed",
                    endpoint=endpoint.name,
                    failure=failure,
                    exc_info=failure == "failed",
                )
                expired = decide.expired_at(deadline_ms, now_ms())
                refusal = decide.enqueue_failure_error(failure, expired=expired)
        await self._answer(endpoint, msg.reply, refusal)

    async def admit_fetched(
        self, msg: Msg, queued: QueuedSearch | NewerFormat | None, endpoint: QueuedEndpoint
    ) -> Fetched | None:
        """The fetched request admitted once, or None when it was answered (or is
        malformed) and terminated."""
        if not isinstance(queued, QueuedSearch):
            # Malformed, or queued by a newer worker: its format is not read here.
            log.error("search queue message not read", subject=msg.subject)
            await msg.term()
            return None
        refusal = decide.fetched_refusal(
            cancelled=False,
            deadline_ms=queued.deadline_ms,
            delivered=msg.metadata.num_delivered or 1,
            max_deliver=self._queue.max_deliver,
            now_ms=now_ms(),
        )
        if refusal is not None:
            log.info("queued search answered unrun", endpoint=endpoint.name, why=refusal)
            await self._answer(endpoint, queued.reply_to, decide.fetched_refusal_error(refusal, ""))
            await msg.term()
            return None
        return Fetched(endpoint.admitted(queued.envelope), queued.reply_to, queued.deadline_ms)

    async def _answer(self, endpoint: QueuedEndpoint, subject: str, error: ToolError) -> None:
        route = endpoint.route
        reply = route.presenter.failure("", error)
        await self._executor.answer(subject, reply, "", route.stats_key, route.presenter)
