"""The one place importers talk to NATS: events onto the SESSIONS stream.

Every event is published to ``<events prefix>.<session_id>`` with ``Nats-Msg-Id:
<session_id>:<seq>``, so the stream drops a re-import within its duplicate window; beyond
the window the index still stores each (session_id, seq) once. Acks are awaited in bounded
windows: many in flight for throughput, never unbounded.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from worker.importers.base import Outgoing
from worker.runtime.connection import NatsOptions

DEFAULT_WINDOW: Final = 512


class ImportFailed(Exception):
    """The import could not go on (NATS unreachable, a publish refused); message is for users."""


async def _quiet(exc: Exception) -> None:
    # nats-py logs every failed attempt with a traceback; the command reports the outcome once.
    del exc


async def connect_publisher(options: NatsOptions, *, name: str) -> NATS:
    import nats.errors

    from worker.runtime.connection import connect

    try:
        return await connect(options, max_reconnect_attempts=2, name=name, error_cb=_quiet)
    except (ValueError, OSError, nats.errors.Error) as exc:
        raise ImportFailed(f"cannot connect to NATS: {exc}") from exc


class Publisher:
    """Windowed JetStream publishes of converted events, counting acks and duplicates."""

    def __init__(self, nc: NATS, subjects: Subjects, *, window: int = DEFAULT_WINDOW) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.subjects = subjects
        self.window = window
        self.published = 0  # acknowledged by the stream, duplicates included
        self.duplicates = 0  # acknowledged as already held (same Nats-Msg-Id in the window)
        self._pending: list[tuple[Outgoing, asyncio.Future[Any]]] = []

    async def prepare(self) -> None:
        from worker.runtime.ingest_consumer import ensure_events_stream

        await ensure_events_stream(self.js, self.subjects)

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    @property
    def max_payload(self) -> int:
        return int(self.nc.max_payload)

    async def send(self, out: Outgoing) -> None:
        future = await self.js.publish_async(
            self.subjects.events(out.session_id), out.body, headers={"Nats-Msg-Id": out.msg_id}
        )
        self._pending.append((out, future))
        if len(self._pending) >= self.window:
            await self.settle()

    async def settle(self) -> None:
        """Wait for every publish in flight; raise ImportFailed when the stream refused one."""
        import nats.errors
        import nats.js.errors

        pending, self._pending = self._pending, []
        for out, future in pending:
            try:
                ack = await future
            except nats.js.errors.APIError as exc:
                raise ImportFailed(
                    f"the stream refused event {out.session_id}:{out.seq}: {exc}"
                ) from exc
            except (nats.errors.Error, TimeoutError) as exc:
                raise ImportFailed(f"NATS failed: {exc!r}") from exc
            self.published += 1
            self.duplicates += bool(ack.duplicate)
