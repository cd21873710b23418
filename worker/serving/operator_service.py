"""The operator subjects: ``<prefix>.operator.<verb>``, a micro service of their own.

``sessionquery ui`` (a person's browser, through the UI server) asks these; models never
do. They are registered like the tool endpoints (``worker.transport.micro``: queue group,
explicit pending limits, ``$SRV`` discovery under ``session-query-operator``) on subjects
apart from ``<prefix>.tool.>``, so a deployment grants them to operator credentials only
(docs/ui.md). Request body: ``{"arguments": {...}}``; reply: ``{"status": "ok",
"result": {...}}`` or ``{"status": "error", "error": {"code", "message"}}`` with the tools'
codes and fixed messages (nothing internal reaches a reply).

The verbs are the tools' operator queries (``worker.tools.OperatorQueries``), plus
``operations``: the index against its stream (what ``status`` reports), the latest dead
letters and this worker's load. The operator searches run one at a time per worker (the
tools' searches do too, in their own lane) under the search deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final

import orjson
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import MaxPayloadError

from contracts.errors import TOOL_FAILED_MESSAGE, ErrorCode
from contracts.subjects import OPERATOR_SERVICE_NAME, Subjects
from worker.serving.slow_consumers import PendingLimits
from worker.signals import ExecutionSignal
from worker.tools import OPERATOR_VERBS, OperatorQueries, ToolError, model_error
from worker.transport.micro import EndpointSpec, MicroService

log = structlog.get_logger("worker.serving.operator_service")

OPERATIONS_VERB: Final = "operations"
DEAD_LETTERS_SHOWN: Final = 50

Status = Callable[[], Awaitable[dict[str, Any]]]


def ok(result: dict[str, Any]) -> bytes:
    return orjson.dumps({"status": "ok", "result": result})


def failed(code: ErrorCode, message: str) -> bytes:
    return orjson.dumps({"status": "error", "error": {"code": code.value, "message": message}})


class OperatorEndpoints:
    """The operator verbs of one worker, answered over its connection."""

    def __init__(
        self,
        nc: NATS,
        queries: OperatorQueries,
        *,
        status: Status,
        load: Callable[[], dict[str, Any]],
        timeout_ms: int,
    ) -> None:
        self._nc = nc
        self._queries = queries
        self._status = status
        self._load = load
        self._timeout_s = timeout_ms / 1000.0
        self._searching = asyncio.Lock()
        self.micro: MicroService | None = None

    async def start(self, subjects: Subjects, version: str, pending: PendingLimits | None) -> None:
        micro = MicroService(
            self._nc,
            name=OPERATOR_SERVICE_NAME,
            version=version,
            description="Operator queries over the session index, for sessionquery ui",
            metadata={"subject_prefix": subjects.operator(""), "protocol": "docs/ui.md"},
        )
        await micro.start()
        self.micro = micro
        for verb in (*OPERATOR_VERBS, OPERATIONS_VERB):
            spec = EndpointSpec(
                name=f"operator-{verb}",
                subject=subjects.operator(verb),
                handler=self._handler(verb),
                metadata={"verb": verb, "read_only": "true"},
            )
            await micro.add_endpoint(spec, pending)
        await self._nc.flush()

    def _handler(self, verb: str) -> Callable[[Msg], Awaitable[None]]:
        async def handle(msg: Msg) -> None:
            if not msg.reply:
                return
            body = await self._answer(verb, msg.data)
            try:
                await self._nc.publish(msg.reply, body)
            except MaxPayloadError:
                log.warning("operator reply too large", verb=verb, size=len(body))
                await self._nc.publish(
                    msg.reply, failed(ErrorCode.TOOL_FAILED, TOOL_FAILED_MESSAGE)
                )

        return handle

    async def _answer(self, verb: str, data: bytes) -> bytes:
        try:
            request = orjson.loads(data) if data else {}
            arguments = request.get("arguments", {}) if isinstance(request, dict) else None
            if not isinstance(arguments, dict):
                return failed(ErrorCode.INVALID_ARGUMENTS, 'The body must be {"arguments": {...}}.')
        except orjson.JSONDecodeError:
            return failed(ErrorCode.INVALID_ARGUMENTS, "The body is not JSON.")
        signal = ExecutionSignal.after(self._timeout_s)
        try:
            if verb == OPERATIONS_VERB:
                return ok(await self._operations(signal))
            if verb == "search":
                async with self._searching:
                    return ok(await self._queries.run(verb, arguments, signal))
            return ok(await self._queries.run(verb, arguments, signal))
        except ToolError as known:
            return failed(known.code, known.message)
        except Exception as exc:
            log.exception("operator query failed", verb=verb)
            error = model_error(exc)
            return failed(error.code, error.message)
        finally:
            signal.close()

    async def _operations(self, signal: ExecutionSignal) -> dict[str, Any]:
        status = await self._status()
        letters = await self._queries.run("deadletters", {"limit": DEAD_LETTERS_SHOWN}, signal)
        return {"index": status, **letters, "load": self._load()}

    async def stop(self) -> None:
        if self.micro is not None:
            await self.micro.stop()
