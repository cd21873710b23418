"""A small actor toolkit: supervised long-running coroutines and bounded mailboxes.

An actor is a named coroutine that owns its state. The supervisor restarts one that
crashes, after an exponential backoff (capped), and logs the crash with the actor's name and
restart count; the process keeps serving. A mailbox is where work waits; it is bounded, so
a full one is answered (OVERLOADED) instead of growing without limit.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import structlog

from worker.failures import RuntimeFailure
from worker.tasks import cancel_and_wait, wait_ended

log = structlog.get_logger("worker.actors")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RestartBackoff:
    initial_s: float = 0.1
    max_s: float = 10.0
    factor: float = 2.0
    # A run that lasted this long counts as healthy: the next crash starts from initial_s.
    healthy_after_s: float = 30.0

    def delay(self, failures: int) -> float:
        return float(min(self.max_s, self.initial_s * self.factor ** max(0, failures - 1)))


ActorBody = Callable[[], Awaitable[None]]


@dataclass(slots=True)
class _Actor:
    name: str
    body: ActorBody
    task: asyncio.Task[None] | None = None
    restarts: int = 0
    crashes: int = 0


class Supervisor:
    """Runs named actors; restarts a crashed one with backoff. Returning normally ends it."""

    def __init__(self, *, backoff: RestartBackoff | None = None) -> None:
        self._backoff = backoff or RestartBackoff()
        self._actors: dict[str, _Actor] = {}

    def start(self, name: str, body: ActorBody) -> None:
        if name in self._actors and self.running(name):
            raise ValueError(f"actor {name!r} is already running")
        actor = _Actor(name=name, body=body)
        actor.task = asyncio.create_task(self._supervise(actor), name=f"actor:{name}")
        self._actors[name] = actor

    def running(self, name: str) -> bool:
        actor = self._actors.get(name)
        return actor is not None and actor.task is not None and not actor.task.done()

    def restarts(self, name: str) -> int:
        actor = self._actors.get(name)
        return 0 if actor is None else actor.restarts

    async def wait(self, name: str) -> None:
        """Wait until the actor returns on its own (or is stopped)."""
        actor = self._actors.get(name)
        if actor is not None and actor.task is not None:
            # Shielded: the caller's own cancellation (a wait_for's bound) leaves the actor
            # running, and goes on up.
            await wait_ended(asyncio.shield(actor.task))

    async def stop(self, name: str) -> None:
        actor = self._actors.pop(name, None)
        if actor is None or actor.task is None:
            return
        await cancel_and_wait(actor.task)

    async def stop_all(self) -> None:
        for name in list(self._actors):
            await self.stop(name)

    async def _supervise(self, actor: _Actor) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        while True:
            started = loop.time()
            try:
                await actor.body()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                actor.crashes += 1
                if loop.time() - started >= self._backoff.healthy_after_s:
                    failures = 0
                failures += 1
                delay = self._backoff.delay(failures)
                log.exception(
                    "actor crashed; restarting",
                    actor=actor.name,
                    restarts=actor.restarts,
                    backoff_s=round(delay, 3),
                )
                await asyncio.sleep(delay)
                actor.restarts += 1


class MailboxFull(RuntimeFailure):
    pass


class Mailbox(Generic[T]):
    """Bounded FIFO. ``capacity`` counts items queued *or being handled*: an item is held
    from ``offer`` until ``done``, so running + waiting never exceeds it."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("mailbox capacity must be at least 1")
        self.capacity = capacity
        self._items: deque[T] = deque()
        self._open = 0
        # One future per waiting taker, woken one at a time: an Event woke every idle
        # runner per offer (8 task steps for one request, 7 of them for nothing).
        self._takers: deque[asyncio.Future[None]] = deque()
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def held(self) -> int:
        """Items offered and not yet done (waiting + being handled)."""
        return self._open

    @property
    def waiting(self) -> int:
        return len(self._items)

    def offer(self, item: T) -> bool:
        """Queue ``item``; False (and nothing queued) when the mailbox is full."""
        if self._open >= self.capacity:
            return False
        self._open += 1
        self._idle.clear()
        self._items.append(item)
        self._wake_one()
        return True

    async def take(self) -> T:
        while not self._items:
            taker: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._takers.append(taker)
            try:
                await taker
            except asyncio.CancelledError:
                # Woken and cancelled before it ran: the wake-up goes to another taker.
                if taker.done() and not taker.cancelled():
                    self._wake_one()
                raise
        item = self._items.popleft()
        if self._items:
            self._wake_one()  # more queued: the next taker too
        return item

    def _wake_one(self) -> None:
        while self._takers:
            taker = self._takers.popleft()
            if not taker.done():  # a cancelled taker is skipped
                taker.set_result(None)
                return

    def done(self) -> None:
        """An item taken earlier is handled: its place frees up."""
        self._open -= 1
        if self._open <= 0:
            self._open = 0
            self._idle.set()

    async def idle(self) -> None:
        """Wait until every offered item is done."""
        await self._idle.wait()
