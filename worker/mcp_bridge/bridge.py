"""The bridge's logic, apart from the MCP transports: manifest to MCP tools, one MCP tool
call to one request on the tool's subject, the reply to an MCP result.

Identity: ``--session-id`` when the launcher knows the agent's session (the tools then act
as that session: its workspace, and its own session excluded from cross-session search).
Without it the bridge publishes a session of its own (``mcp-<random>``, ``session/start``
with the working directory as cwd) and calls as that session: it sees every session whose
cwd equals that directory, including the current agent's once ``watch`` has imported it.
Either way each call goes to the partition of ``--cwd``'s workspace (``docs/protocol.md``
§10.4): on sharded workers ``--cwd`` must be the agent session's own working directory.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Any, Final

import anyio
import mcp_types as types
import orjson
from nats.aio.client import Client as NATS

from contracts.client import (
    NoWorkerError,
    ReplyTimeoutError,
    SessionQueryClient,
    SessionQueryClientError,
    new_request_id,
)
from contracts.envelope import AgentIdentity, Execution, ToolReply
from contracts.errors import ErrorCode
from contracts.partitions import workspace_key
from contracts.subjects import Subjects

DEFAULT_TIMEOUT_S: Final = 30.0
# MCP requests carry no timeout; a client may name its own in the request's _meta.
TIMEOUT_META_KEY: Final = "sessionquery/timeout_ms"
DEFAULT_MAX_RESULT_BYTES: Final = 1024 * 1024
CANCEL_REASON: Final = "cancelled by the MCP client"
NO_WORKER_MESSAGE: Final = "The session query service is not running. Try again later."
NO_REPLY_MESSAGE: Final = "The session query service did not answer in time. Try again later."
SPILL_MESSAGE: Final = "The full result could not be read back. Try a narrower request."


@dataclass(frozen=True)
class BridgeSettings:
    subjects: Subjects
    cwd: str
    session_id: str | None = None
    agent_id: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES


class Bridge:
    def __init__(self, nc: NATS, settings: BridgeSettings) -> None:
        self.nc = nc
        self.settings = settings
        self.client = SessionQueryClient(nc, settings.subjects)
        self.manifest: dict[str, Any] = {}
        self.agent = AgentIdentity(session_id=settings.session_id or "mcp-unset")
        self.own_session: str | None = None  # the bridge session, when it published one
        # The bridge session's next seq; calls wait until the worker holds what came before.
        self.step_start_seq: int | None = None

    async def start(self) -> None:
        self.manifest = await self.client.manifest()
        if self.settings.session_id is None:
            await self._publish_own_session()
        self.agent = AgentIdentity(
            session_id=self.settings.session_id or self.own_session or "",
            agent_id=self.settings.agent_id,
        )

    @property
    def instructions(self) -> str | None:
        value = self.manifest.get("prompt_section")
        return value if isinstance(value, str) else None

    def tools(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=tool["name"],
                description=tool.get("description"),
                input_schema=tool["input_schema"],
                annotations=types.ToolAnnotations(read_only_hint=bool(tool.get("read_only"))),
            )
            for tool in self.manifest.get("tools", [])
        ]

    async def call(
        self, name: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> types.CallToolResult:
        """One tool call; ``timeout_s`` (from the request's ``_meta``) or the default bounds it."""
        if name not in {tool["name"] for tool in self.manifest.get("tools", [])}:
            return _error(f"Unknown tool {name!r}.")
        request_ids = [new_request_id()]
        wait = self.settings.timeout_s if timeout_s is None else timeout_s
        execution = Execution(
            agent=self.agent,
            step_start_seq=self.step_start_seq,
            deadline_ms=int((time.time() + wait) * 1000),
        )
        try:
            reply = await self._routed(name, arguments, execution, request_ids)
        except anyio.get_cancelled_exc_class():
            # The MCP client cancelled (notifications/cancelled) or went away: the worker
            # stops the work. The cancel names the request's identity, as the worker asks.
            with anyio.CancelScope(shield=True):
                await self._cancel(request_ids[-1])
            raise
        except NoWorkerError:
            return _error(NO_WORKER_MESSAGE)
        except (ReplyTimeoutError, SessionQueryClientError):
            return _error(NO_REPLY_MESSAGE)
        return await self._result(reply)

    async def _routed(
        self, name: str, arguments: dict[str, Any], execution: Execution, request_ids: list[str]
    ) -> ToolReply:
        """The call on the partition of ``--cwd``'s workspace, the shard that holds it. A
        ``--session-id`` started in another directory is unknown there: then once more on
        the unpartitioned subject, which a worker of every partition answers (with the
        same authorization); a sharded deployment has none, and the first reply stands."""
        reply = await self.client.call(
            name, arguments, execution, request_id=request_ids[-1], cwd=self.settings.cwd
        )
        unknown = reply.error is not None and reply.error.code == ErrorCode.NO_IDENTITY
        if not unknown or self.own_session is not None:
            return reply
        request_ids.append(new_request_id())
        try:
            return await self.client.call(name, arguments, execution, request_id=request_ids[-1])
        except NoWorkerError:
            return reply

    async def _result(self, reply: ToolReply) -> types.CallToolResult:
        if reply.status == "error" or reply.error is not None:
            return _error(reply.error.message if reply.error else NO_REPLY_MESSAGE)
        text = reply.content or ""
        if reply.spill is not None:
            try:
                data = await self.client.fetch_spilled(reply.spill)
            except SessionQueryClientError:
                return _error(SPILL_MESSAGE)
            text = data.decode("utf-8", "replace")
        text = cut_at_line(text, self.settings.max_result_bytes)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def _cancel(self, request_id: str) -> None:
        body = {
            "request_id": request_id,
            "reason": CANCEL_REASON,
            "agent": self.agent.model_dump(mode="json", exclude_none=True),
        }
        # Best effort: if NATS is gone, the request's deadline still bounds the work.
        with contextlib.suppress(Exception):
            await self.nc.publish(self.settings.subjects.cancel, orjson.dumps(body))
            await self.nc.flush(timeout=2)

    async def _publish_own_session(self) -> None:
        session = "mcp-" + uuid.uuid4().hex
        await self._publish_event(session, 1, "session/start", {
            "cwd": self.settings.cwd, "parent_session_id": None, "source": "mcp-bridge",
        })  # fmt: skip
        self.own_session = session
        self.step_start_seq = 2

    async def close(self) -> None:
        if self.own_session is not None and self.step_start_seq is not None:
            await self._publish_event(self.own_session, self.step_start_seq, "session/end",
                                      {"reason": "bridge stopped"})  # fmt: skip

    async def _publish_event(
        self, session: str, seq: int, type_: str, payload: dict[str, Any]
    ) -> None:
        now = time.time()
        stamp = (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
        )
        event = {
            "session_id": session, "seq": seq, "event_id": f"e-{session}-{seq}", "type": type_,
            "surface": "system", "time": stamp, "payload": payload,
        }  # fmt: skip
        js = self.nc.jetstream()
        await js.publish(
            # The bridge's sessions all start in its cwd: that is their workspace key.
            self.settings.subjects.events(workspace_key(self.settings.cwd), session),
            orjson.dumps(event),
            headers={"Nats-Msg-Id": f"{session}:{seq}"},
        )


def timeout_from_meta(meta: object) -> float | None:
    """Seconds from ``_meta["sessionquery/timeout_ms"]``, when the client sent a sane one."""
    value = meta.get(TIMEOUT_META_KEY) if isinstance(meta, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return min(float(value), 3_600_000.0) / 1000
    return None


def cut_at_line(text: str, max_bytes: int) -> str:
    """``text`` whole when it fits; else cut at a line end, with a note saying so."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    head = data[:max_bytes]
    end = head.rfind(b"\n")
    kept = head[: end + 1] if end > 0 else head
    shown = kept.decode("utf-8", "ignore")
    return (
        f"{shown}\n[Result cut by the MCP bridge: {len(kept)} of {len(data)} bytes shown."
        " Narrow the search or read single events with session_event_read.]"
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )
