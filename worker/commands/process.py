"""The ``serve`` process: signals, bounded stop, exit, and the lines it says to a person."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Final

import structlog
from nats.aio.client import Client as NATS

if TYPE_CHECKING:
    from worker.worker import Worker

log = structlog.get_logger("worker.commands.serve")

DRAIN_TIMEOUT_S: Final = 10.0


class Watchdog:
    """Exits the process ``bound_s`` after it is armed, from a thread of its own, so no
    coroutine can hold the exit back: not a blocked event loop, not a layer that swallows
    the cancellation a ``wait_for`` would rely on. Armed when the stop signal arrives (or
    when the stop begins, for a stop with no signal); the exit it forces is rc 1."""

    def __init__(self, bound_s: float) -> None:
        self.bound_s = bound_s
        self._timer: threading.Timer | None = None

    @property
    def armed(self) -> bool:
        return self._timer is not None

    def arm(self) -> None:
        """Start the countdown; a second call keeps the first one's."""
        if self._timer is None:
            self._timer = threading.Timer(self.bound_s, self._expire)
            self._timer.daemon = True
            self._timer.start()

    def disarm(self) -> None:
        """For a caller that goes on living after the stop (a test, an embedding)."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _expire(self) -> None:
        log.error("stop took longer than the shutdown timeout; exiting now", timeout_s=self.bound_s)
        exit_now(1)


def signal_event(watchdog: Watchdog) -> asyncio.Event:
    """Set on the first SIGTERM or SIGINT, which also arms ``watchdog``; a second one exits
    at once."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def requested(signum: signal.Signals) -> None:
        if stop.is_set():
            say(f"{signum.name} again: exiting now")
            exit_now(130 if signum == signal.SIGINT else 143)
        watchdog.arm()
        say(f"{signum.name}: stopping gracefully within {watchdog.bound_s:g} s (again to exit now)")
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, requested, sig)
    return stop


async def bounded_stop(worker: Worker, watchdog: Watchdog) -> None:
    """``worker.stop`` under ``watchdog`` (armed now if no signal armed it): past its bound
    the process exits at once (the index is consistent: the stream replays whatever was
    not applied)."""
    watchdog.arm()
    await worker.stop()


def exit_now(code: int) -> None:
    # Children die with us: the writer and the embedded server have PR_SET_PDEATHSIG.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def close(nc: NATS) -> None:
    # drain() flushes what we still owe the server; it can hang after a batched fetch,
    # so it is bounded and close() always follows.
    with contextlib.suppress(Exception):
        await asyncio.wait_for(nc.drain(), DRAIN_TIMEOUT_S)
    with contextlib.suppress(Exception):
        await nc.close()


def say(line: str) -> None:
    """Human-facing lines on stdout (logs go to stderr)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def refuse(message: object) -> None:
    """The one line ``serve`` prints on stderr when it cannot start or goes on."""
    print(f"sessionquery serve: {message}", file=sys.stderr)
