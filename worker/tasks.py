"""Ending a task without swallowing a cancellation addressed to the caller.

``task.cancel(); with suppress(CancelledError): await task`` hides two different events
behind one exception: the task ending as asked (expected, nothing to report) and the
*caller* being cancelled while it waited (which must go on up). Swallowing the second
breaks every bound above: ``asyncio.wait_for`` around a stop that passes through such a
line never times out, and the stop runs on into whatever hangs next. ``cancel_and_wait``
tells them apart with ``Task.cancelling()``.

Shared by every layer, like ``worker.logs`` and ``worker.retry``: it imports nothing from
``worker``.
"""

from __future__ import annotations

import asyncio
from typing import Any


def cancelled_from_outside() -> bool:
    """Whether the running task has a cancellation request of its own pending."""
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it has ended. Its own ``CancelledError`` ends here;
    the caller's cancellation propagates. Any other exception of the task is raised."""
    task.cancel()
    await wait_ended(task)


async def wait_ended(task: asyncio.Future[Any]) -> None:
    """Wait for ``task`` (cancelled elsewhere, or running on); the task's own
    cancellation ends here, the caller's propagates."""
    try:
        await task
    except asyncio.CancelledError:
        if cancelled_from_outside():
            raise
