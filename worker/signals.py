"""The execution signal: how cancellation and deadlines reach every layer.

A signal is created per tool execution by the runtime. It fires once, either because the
requester cancelled (with an exact reason) or because the deadline passed. Layers below
check it before starting work and subscribe to it to interrupt running work; the store
interrupts the running SQLite statement. Nothing here imports nats.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

DEADLINE_REASON: Final = "deadline exceeded"


class ExecutionAborted(Exception):
    """The execution was stopped from outside; ``reason`` is preserved exactly."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ExecutionCancelled(ExecutionAborted):
    """The requester (or shutdown) cancelled the execution."""


class DeadlineExceeded(ExecutionAborted):
    """The execution's deadline passed."""

    def __init__(self, reason: str = DEADLINE_REASON) -> None:
        super().__init__(reason)


class ExecutionSignal:
    """Fires at most once. Must be created inside a running event loop.

    ``deadline`` is in ``loop.time()`` seconds. A child signal fires when its parent fires
    (with the parent's reason) or at its own, possibly tighter, deadline.
    """

    def __init__(self, *, deadline: float | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._error: ExecutionAborted | None = None
        self._fired = asyncio.Event()
        self._callbacks: list[Callable[[ExecutionAborted], None]] = []
        self._timer: asyncio.TimerHandle | None = None
        self.deadline = deadline
        if deadline is not None:
            if deadline <= self._loop.time():
                self._fire(DeadlineExceeded())
            else:
                self._timer = self._loop.call_at(deadline, self._fire, DeadlineExceeded())

    @classmethod
    def after(cls, seconds: float) -> ExecutionSignal:
        return cls(deadline=asyncio.get_running_loop().time() + seconds)

    @property
    def aborted(self) -> bool:
        return self._error is not None

    @property
    def error(self) -> ExecutionAborted | None:
        return self._error

    def remaining(self) -> float | None:
        """Seconds until the deadline, or None without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - self._loop.time())

    def cancel(self, reason: str) -> None:
        self._fire(ExecutionCancelled(reason))

    def raise_if_aborted(self) -> None:
        if self._error is not None:
            raise self._error

    async def wait(self) -> ExecutionAborted:
        await self._fired.wait()
        assert self._error is not None
        return self._error

    def on_abort(self, callback: Callable[[ExecutionAborted], None]) -> Callable[[], None]:
        """Call ``callback`` when the signal fires (at once if it already has).

        Returns a function that removes the callback.
        """
        if self._error is not None:
            callback(self._error)
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    def child(self, *, timeout: float | None = None) -> ExecutionSignal:
        """A signal that fires with this one, or after ``timeout`` seconds if sooner."""
        deadline = self.deadline
        if timeout is not None:
            own = self._loop.time() + timeout
            deadline = own if deadline is None else min(deadline, own)
        child = ExecutionSignal(deadline=deadline)
        if self._error is not None:
            child._fire(self._error)
        else:
            remove = self.on_abort(child._fire)
            child.on_abort(lambda _err: remove())
        return child

    def close(self) -> None:
        """Release the deadline timer once the execution is over."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self, error: ExecutionAborted) -> None:
        if self._error is not None:
            return
        self._error = error
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._fired.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(error)
