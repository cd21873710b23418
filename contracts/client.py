"""A small async requester client for the session query worker.

Depends only on nats-py and ``contracts``, so an agent runtime can import it without the
worker. It speaks exactly the wire contract in docs/protocol.md: one request subject per tool,
``sessionquery.cancel`` broadcasts, ``sessionquery.manifest``, and the spill object store
(whose objects it decrypts with the key in each reply's locator).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
import uuid
from typing import Any, Final

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from pydantic import ValidationError

from contracts import spill_fetch
from contracts.envelope import (
    AgentIdentity,
    CancelRequest,
    Execution,
    SpillLocator,
    ToolReply,
    ToolRequest,
)
from contracts.errors import SessionQueryClientError as SessionQueryClientError
from contracts.partitions import MAX_PARTITION_COUNT, partition_of_cwd
from contracts.spill_fetch import SpillDigestMismatch as SpillDigestMismatch
from contracts.spill_fetch import SpillFetchError as SpillFetchError
from contracts.subjects import TOOL_NAMES, Subjects

# Search runs under a 30 s deadline by default; the reply may take a little longer.
DEFAULT_TIMEOUT_S: Final = 35.0
# How long "no responders" is retried before the caller hears NoWorkerError.
NO_RESPONDERS_RETRY_S: Final = 1.0
# Margin past an explicit deadline: the worker answers TIMEOUT itself once it passes.
DEADLINE_MARGIN_S: Final = 2.0
# What a routed call's error says when the partition count could not be learned.
ROUTING_NEEDS_MANIFEST: Final = (
    "routing by cwd needs the stream's partition count from the manifest"
)


class NoWorkerError(SessionQueryClientError):
    """Nobody subscribes to the subject: no worker is running on this NATS."""


class ReplyTimeoutError(SessionQueryClientError):
    """No reply within the timeout."""


def _partition_count_in(manifest: dict[str, Any]) -> int | None:
    """The manifest's ``partition_count`` when it is a sane one (protocol 2), else None."""
    count = manifest.get("partition_count")
    if isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= MAX_PARTITION_COUNT:
        return count
    return None


def new_request_id() -> str:
    return "r-" + uuid.uuid4().hex


class Unrouted(enum.Enum):
    """No cwd given: a request for the unpartitioned subject."""

    UNROUTED = "unrouted"


UNROUTED: Final = Unrouted.UNROUTED


class SessionQueryClient:
    """Call the five tools, cancel, read the manifest, and fetch spilled results."""

    def __init__(self, nc: NATS, subjects: Subjects | None = None) -> None:
        self._nc = nc
        self.subjects = subjects or Subjects()
        self._partition_count: int | None = None
        self._partition_count_read = asyncio.Lock()

    async def partition_count(self) -> int:
        """The stream's partition count, from the manifest: read once (concurrent first
        callers share the read), then kept, as it is fixed when the stream is created. Any
        ``manifest()`` read that carries it sets it too. A manifest that cannot be read is
        not kept: the next routed call asks again."""
        async with self._partition_count_read:
            if self._partition_count is None:
                try:
                    manifest = await self.manifest()
                except SessionQueryClientError as exc:
                    # The same class (NoWorkerError stays NoWorkerError), saying why.
                    raise type(exc)(f"{ROUTING_NEEDS_MANIFEST}: {exc}") from exc
                if _partition_count_in(manifest) is None:
                    raise SessionQueryClientError(
                        f"{ROUTING_NEEDS_MANIFEST}: the manifest has no partition_count"
                        " (the worker predates protocol 2)"
                    )
            count = self._partition_count
            assert count is not None  # manifest() kept it
            return count

    async def tool_subject(self, tool: str, cwd: str | Unrouted | None = UNROUTED) -> str:
        """Where a request of ``tool`` goes: the partition of the caller's workspace when its
        ``cwd`` is given (``docs/protocol.md`` §10.4; None: a session with no cwd), else the
        unpartitioned subject."""
        if isinstance(cwd, Unrouted):
            return self.subjects.tool(tool)
        return self.subjects.tool(tool, partition_of_cwd(cwd, await self.partition_count()))

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        execution: Execution | dict[str, Any],
        *,
        request_id: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the NATS request's own timeout
        cwd: str | Unrouted | None = UNROUTED,
    ) -> ToolReply:
        """Send one tool request and return its reply (``status`` ok or error).

        ``cwd``: the calling session's working directory (None: it has none), which routes
        the request to the workers holding its workspace's partition (needed when the
        workers are sharded); without it the request goes to the unpartitioned subject,
        which only workers holding every partition answer.

        Cancelling the awaiting task broadcasts a cancel for this request, so the worker
        stops the work rather than finishing it for nobody.
        """
        if tool not in TOOL_NAMES:
            raise ValueError(f"unknown tool {tool!r}; expected one of: {', '.join(TOOL_NAMES)}")
        if not isinstance(execution, Execution):
            execution = Execution.model_validate(execution)
        request = ToolRequest(
            request_id=request_id or new_request_id(),
            execution=execution,
            arguments=arguments,
        )
        body = orjson.dumps(request.model_dump(mode="json", exclude_none=True))
        wait = timeout if timeout is not None else _timeout_for(execution)
        subject = await self.tool_subject(tool, cwd)
        try:
            msg = await self._request(subject, body, wait)
        except NoRespondersError:
            raise NoWorkerError(f"no session query worker answers {subject}") from None
        except NatsTimeoutError:
            raise ReplyTimeoutError(
                f"no reply to {request.request_id} within {wait:.1f} s"
            ) from None
        except asyncio.CancelledError:
            if execution.agent is not None:
                await self._cancel_quietly(
                    request.request_id, "requester cancelled", execution.agent
                )
            raise
        return _parse_reply(msg)

    async def _request(self, subject: str, body: bytes, wait: float) -> Msg:
        """A request that retries "no responders" briefly, within ``wait``.

        A worker may be restarting, and a connection's first request can be answered "no
        responders" spuriously (see worker.transport.connection.open_connection). Retrying
        is safe: nothing was delivered.
        """
        loop = asyncio.get_running_loop()
        give_up = loop.time() + min(wait, NO_RESPONDERS_RETRY_S)
        delay = 0.02
        while True:
            try:
                return await self._nc.request(subject, body, timeout=wait)
            except NoRespondersError:
                if loop.time() + delay >= give_up:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.2)

    async def cancel(
        self, request_id: str, reason: str, *, agent: AgentIdentity | dict[str, Any]
    ) -> None:
        """Broadcast a cancel: whichever worker holds the request stops it, and the model
        sees ``reason`` as quoted data. ``agent`` must be the request's own
        ``execution.agent`` (session_id and agent_id): any other cancel is ignored."""
        if not isinstance(agent, AgentIdentity):
            agent = AgentIdentity.model_validate(agent)
        message = CancelRequest(request_id=request_id, agent=agent, reason=reason)
        payload = orjson.dumps(message.model_dump(mode="json", exclude_none=True))
        await self._nc.publish(self.subjects.cancel, payload)
        await self._nc.flush()

    async def manifest(self, *, timeout: float = 5.0) -> dict[str, Any]:  # noqa: ASYNC109
        """Tool definitions (names, descriptions, schemas, execution modes) and the prompt."""
        try:
            msg = await self._request(self.subjects.manifest, b"", timeout)
        except NoRespondersError:
            raise NoWorkerError(
                f"no session query worker answers {self.subjects.manifest}"
            ) from None
        except NatsTimeoutError:
            raise ReplyTimeoutError(f"no manifest within {timeout:.1f} s") from None
        try:
            value = orjson.loads(msg.data)
        except orjson.JSONDecodeError:
            raise SessionQueryClientError("the manifest reply is not JSON") from None
        if not isinstance(value, dict):
            raise SessionQueryClientError("the manifest reply is not a JSON object")
        count = _partition_count_in(value)
        if count is not None:
            self._partition_count = count
        return value

    async def fetch_spilled(
        self,
        locator: SpillLocator,
        *,
        timeout: float = 30.0,  # noqa: ASYNC109 - bounds the pulls, not one await
    ) -> bytearray:
        """The whole spilled result: read, decrypted with the locator's key, verified
        (``contracts.spill_fetch``); raises ``SpillFetchError`` or, for bytes that do not
        match, ``SpillDigestMismatch``."""
        return await spill_fetch.fetch_spilled(self._nc, locator, timeout=timeout)

    async def _cancel_quietly(self, request_id: str, reason: str, agent: AgentIdentity) -> None:
        # The connection may already be gone; the worker's deadline still bounds the work.
        with contextlib.suppress(Exception):
            await asyncio.shield(self.cancel(request_id, reason, agent=agent))


def _timeout_for(execution: Execution) -> float:
    if execution.deadline_ms is None:
        return DEFAULT_TIMEOUT_S
    remaining = execution.deadline_ms / 1000 - time.time()
    return max(0.1, remaining) + DEADLINE_MARGIN_S


def _parse_reply(msg: Msg) -> ToolReply:
    try:
        return ToolReply.model_validate_json(msg.data)
    except ValidationError:
        headers = msg.headers or {}
        detail = headers.get("Nats-Service-Error") or "not a tool reply"
        raise SessionQueryClientError(f"malformed reply: {detail}") from None
