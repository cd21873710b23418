"""The one place importers talk to NATS: events onto the SESSIONS stream.

Every event is published to ``<events prefix>.<workspace key>.<session_id>`` with
``Nats-Msg-Id: <session_id>:<seq>``, so the stream drops a re-import within its duplicate
window; beyond the window the index still stores each (session_id, seq) once. Acks are
awaited in bounded windows: many in flight for throughput, never unbounded. Each event is
checked against the writer's per-session order first, so an event the worker will
dead-letter is reported as such rather than as simply published.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from nats.aio.client import Client as NATS

from contracts.partitions import NO_CWD_KEY
from contracts.subjects import Subjects
from worker.importers.base import Outgoing
from worker.transport.connection import NatsOptions

DEFAULT_WINDOW: Final = 512
# Connection attempts of a one-shot import: enough to ride out a blip, bounded even when
# --connect-attempts asks for forever (0).
IMPORT_CONNECT_ATTEMPTS: Final = 3
# Refusal reasons kept for the summary (all are counted).
KEPT_REASONS: Final = 100


class ImportFailed(Exception):
    """The import could not go on (NATS unreachable, a publish refused); message is for users."""


async def connect_publisher(
    options: NatsOptions,
    *,
    name: str,
    attempts: int | None = None,
    stop: asyncio.Event | None = None,
) -> NATS:
    """Connect, logging one redacted line per failed attempt (the server's reason, e.g.
    "Authorization Violation"); ``attempts`` defaults to the import's bound."""
    from worker.transport.connection import ConnectFailed, connect_reporting

    if attempts is None:
        attempts = min(options.connect_attempts, IMPORT_CONNECT_ATTEMPTS) or IMPORT_CONNECT_ATTEMPTS
    try:
        return await connect_reporting(options, attempts=attempts, stop=stop, name=name)
    except (ValueError, ConnectFailed) as exc:
        raise ImportFailed(str(exc)) from None


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
        self.order = SessionOrder(self.js, subjects)

    async def prepare(self) -> None:
        from contracts.streams import ensure_events_stream

        await ensure_events_stream(self.js, self.subjects)

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    @property
    def max_payload(self) -> int:
        return int(self.nc.max_payload)

    async def send(self, out: Outgoing) -> str | None:
        """Publish ``out``; the reason the worker will dead-letter it, if it will."""
        refused = await self.order.check(out)
        key = out.key or self.order.key_of(out.session_id)
        future = await self.js.publish_async(
            self.subjects.events(key, out.session_id), out.body, headers={"Nats-Msg-Id": out.msg_id}
        )
        self._pending.append((out, future))
        if len(self._pending) >= self.window:
            await self.settle()
        return refused

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


class DryRun:
    """What :class:`Publisher` does, without a server (``import --dry-run``): each event's
    session order is checked as the publisher checks it, nothing is sent. A session whose
    start is not in the files read would be looked up in the stream: it is noted in
    ``order.looked_up`` and not judged."""

    def __init__(self, subjects: Subjects) -> None:
        self.order = SessionOrder(None, subjects)
        self.published = 0  # would be published
        self.duplicates = 0  # unknown without the stream
        self.in_flight = 0

    async def send(self, out: Outgoing) -> str | None:
        refused = await self.order.check(out)
        self.published += 1
        return refused

    async def settle(self) -> None:
        return None


class SessionOrder:
    """The writer's per-session rules, checked on what is published: seq 1 is the
    session/start, each next seq is the last + 1, nothing follows session/end. A session
    whose first event here is not seq 1 is looked up in the stream (its last event) once.
    A seq at or below the last one is a duplicate, a no-op for the worker."""

    def __init__(self, js: Any, subjects: Subjects) -> None:
        # ``js`` None: no stream to ask (``import --dry-run``): a session whose start is
        # not read here is noted in ``looked_up`` and not judged.
        self._js = js
        self._subjects = subjects
        self.looked_up: set[str] = set()  # sessions whose start was not read here
        # session -> (last seq, ended); None: the stream could not say, not judged.
        self._last: dict[str, tuple[int, bool] | None] = {}
        # session -> workspace key, of the sessions found in the stream.
        self._keys: dict[str, str] = {}
        self.refused = 0
        self.reasons: list[str] = []  # the first KEPT_REASONS

    def key_of(self, session_id: str) -> str:
        """The workspace key of a session found in the stream; a session the stream does
        not hold (or could not be asked about) has none, and its events are dead-lettered
        as an unknown session whatever key they carry."""
        return self._keys.get(session_id, NO_CWD_KEY)

    async def check(self, out: Outgoing) -> str | None:
        """Why the worker will dead-letter ``out``, or None."""
        if out.session_id in self._last:
            state = self._last[out.session_id]
        else:
            state = (0, False) if out.seq == 1 else await self._from_stream(out.session_id)
        if state is None:
            self._last[out.session_id] = None
            return None
        last, ended = state
        if out.seq <= last:
            self._last[out.session_id] = state
            return None
        reason = _order_problem(out, last, ended)
        if reason is None:
            self._last[out.session_id] = (out.seq, out.kind == "session/end")
            return None
        self._last[out.session_id] = state
        self.refused += 1
        if len(self.reasons) < KEPT_REASONS:
            self.reasons.append(reason)
        return reason

    async def _from_stream(self, session_id: str) -> tuple[int, bool] | None:
        import nats.errors
        import nats.js.errors
        import orjson

        self.looked_up.add(session_id)
        if self._js is None:
            return None
        try:
            held = await self._js.get_last_msg(
                self._subjects.events_stream, self._subjects.stored_session("*", session_id)
            )
        except nats.js.errors.NotFoundError:
            return 0, False
        except (nats.errors.Error, TimeoutError):
            return None  # e.g. no permission to read the stream: cannot tell
        self._keys[session_id] = Subjects.key_of_stored(held.subject)
        try:
            event = orjson.loads(held.data or b"")
            return int(event["seq"]), event.get("type") == "session/end"
        except (ValueError, TypeError, KeyError):
            return None  # the last one held is not an event: cannot tell


def _order_problem(out: Outgoing, last: int, ended: bool) -> str | None:
    sid, seq = out.session_id, out.seq
    if last == 0 and (seq != 1 or out.kind != "session/start"):
        return f"unknown session {sid}: seq {seq} ({out.kind}) before its session/start"
    if ended:
        return f"session {sid} ended at seq {last}: seq {seq} after its session/end"
    if seq != last + 1:
        return f"gap in session {sid}: expected seq {last + 1}, got {seq}"
    return None
