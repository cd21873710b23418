"""The UI's requests to the workers' operator subjects, over one NATS connection that
runs on a loop of its own, asked from the HTTP threads; ``OperatorError`` says what a page
shows when no reply is ok (with the HTTP status to answer with)."""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from typing import Any, Final

import orjson
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from contracts.subjects import Subjects
from worker.failures import RuntimeFailure
from worker.ui.watch import WorkerWatch

REQUEST_TIMEOUT_S: Final = 35.0  # the worker's own deadline is 30 s
NO_WORKER: Final = (
    "No worker answers the operator subjects: is `sessionquery serve` running, on this NATS"
    " server and subject prefix, with credentials that may call them?"
)
NO_NATS: Final = (
    "The UI has lost its NATS connection and is reconnecting: is the NATS server (or"
    " `sessionquery serve`, which runs one) still running?"
)
SLOW_WORKER: Final = "The worker did not answer in time; try again."


class OperatorError(RuntimeFailure):
    """A reply that is not ok, or no reply; ``status`` is the HTTP status to show it with."""

    def __init__(self, status: HTTPStatus, message: str, *, shown: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.shown = shown  # the page to answer with, when not the plain error page


_ERROR_STATUS: Final = {
    "SESSION_QUERY_NOT_FOUND": HTTPStatus.NOT_FOUND,
    "SESSION_QUERY_INVALID_ARGUMENTS": HTTPStatus.BAD_REQUEST,
    "SESSION_QUERY_TIMEOUT": HTTPStatus.GATEWAY_TIMEOUT,
}


class OperatorClient:
    """Operator requests over one NATS connection, asked from the HTTP threads."""

    def __init__(
        self,
        nc: NATS,
        loop: asyncio.AbstractEventLoop,
        subjects: Subjects,
        watch: WorkerWatch | None = None,
    ) -> None:
        self._nc = nc
        self._loop = loop
        self._subjects = subjects
        self.watch = watch or WorkerWatch()

    def ask(self, verb: str, **arguments: Any) -> dict[str, Any]:
        if not self._nc.is_connected:
            # A request now would wait for the reconnect, up to its whole timeout.
            self.watch.went_away("the NATS connection is down")
            raise OperatorError(HTTPStatus.SERVICE_UNAVAILABLE, NO_NATS)
        body = orjson.dumps({"arguments": {k: v for k, v in arguments.items() if v is not None}})
        future = asyncio.run_coroutine_threadsafe(self._request(verb, body), self._loop)
        return future.result(REQUEST_TIMEOUT_S + 1)

    async def _request(self, verb: str, body: bytes) -> dict[str, Any]:
        try:
            msg = await self._nc.request(
                self._subjects.operator(verb), body, timeout=REQUEST_TIMEOUT_S
            )
        except NoRespondersError:
            self.watch.went_away("nothing answers the operator subjects")
            raise OperatorError(HTTPStatus.SERVICE_UNAVAILABLE, NO_WORKER) from None
        except NatsTimeout:
            raise OperatorError(HTTPStatus.GATEWAY_TIMEOUT, SLOW_WORKER) from None
        self.watch.answered()
        reply = orjson.loads(msg.data) if msg.data else {}
        if reply.get("status") == "ok":
            result: dict[str, Any] = reply["result"]
            return result
        error = reply.get("error") or {}
        status = _ERROR_STATUS.get(error.get("code", ""), HTTPStatus.BAD_GATEWAY)
        raise OperatorError(status, str(error.get("message") or "The worker refused."))
