"""The ``serve`` process: signals, bounded stop, exit, and the lines it says to a person."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Final

import structlog
from nats.aio.client import Client as NATS

if TYPE_CHECKING:
    from worker.runtime.worker import Worker

log = structlog.get_logger("worker.runtime.serve")

DRAIN_TIMEOUT_S: Final = 10.0


def signal_event(bound_s: float) -> asyncio.Event:
    """Set on the first SIGTERM or SIGINT; a second one exits at once."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def requested(signum: signal.Signals) -> None:
        if stop.is_set():
            say(f"{signum.name} again: exiting now")
            exit_now(130 if signum == signal.SIGINT else 143)
        say(f"{signum.name}: stopping gracefully within {bound_s:g} s (again to exit now)")
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, requested, sig)
    return stop


async def bounded_stop(worker: Worker, within_s: float) -> None:
    """``worker.stop`` within ``within_s``; past it the process exits at once (the index
    is consistent: the stream replays whatever was not applied)."""
    try:
        await asyncio.wait_for(worker.stop(), within_s)
    except TimeoutError:
        log.error("stop took longer than the shutdown timeout; exiting now", timeout_s=within_s)
        exit_now(1)


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
