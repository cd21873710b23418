"""Importing a generated whole source with the real command and reading it back with the
five tools, against a real nats-server and a real worker: shared by the per-agent tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import body, call, config_for, until
from tests.importers.test_import_tools import import_args, sessionquery
from worker.worker import Worker


@asynccontextmanager
async def imported(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path, fmt: str, *paths: Path,
    expected: int,
) -> AsyncIterator[Worker]:  # fmt: skip
    """Import ``paths`` twice (the second publishes nothing new), then index them.

    ``--idle-seconds 0``: every session is over, so each gets its title and its end."""
    args = import_args(nats_url, subjects, *paths, fmt=fmt, idle="0")
    first = await asyncio.to_thread(sessionquery, *args)
    assert first.returncode == 0, first.stderr
    assert f"published {expected} events (0 already in the stream)" in first.stderr, first.stderr
    js = nc.jetstream()
    assert (await js.stream_info(subjects.events_stream)).state.messages == expected
    second = await asyncio.to_thread(sessionquery, *args)
    assert f"published {expected} events ({expected} already in the stream)" in second.stderr
    assert (await js.stream_info(subjects.events_stream)).state.messages == expected
    worker = await Worker.start(nc, config_for(subjects, tmp_path))
    try:

        async def caught_up() -> bool:
            return (await worker.indexed_through()) == expected

        await until(caught_up, within=20)
        yield worker
    finally:
        await worker.stop()
        await js.delete_stream(subjects.events_stream)


async def ask(nc: NATS, worker: Worker, tool: str, caller: str, **args: Any) -> str:
    reply, _ = await call(nc, worker.config.subjects, tool, body(caller=caller, **args))
    assert reply["status"] == "ok", reply
    return str(reply["content"])


def cites_of(trace: str) -> str:
    """The "Cites" part of a ``session_event_trace`` answer."""
    return trace.split("Cites (")[1].split("Cited by")[0]


async def watch_growth(
    nc: NATS, nats_url: str, subjects: Subjects, bucket: str, fmt: str, path: Path, *,
    before: int, grow: Callable[[], None], after: int,
) -> None:  # fmt: skip
    """``watch`` publishes the ``before`` events a source holds, then the ones ``grow``
    adds (``after`` in all); restarted, it resumes from its stored token and publishes
    nothing again."""
    from tests.importers.test_watch import has, said, start, stop, watch_command

    command = watch_command(nats_url, subjects, bucket, path, fmt=fmt, quiet=False)
    first = start(command)
    try:
        await until(lambda: has(nc, subjects, before), within=30)
        await asyncio.to_thread(grow)
        await until(lambda: has(nc, subjects, after), within=30)
    finally:
        code, err = stop(first)
    assert code == 0, err
    assert f"published {after} events (0 already in the stream)" in err, err
    second = start(command)
    await until(lambda: "1/1 files" in said(second), within=30)
    code, err = stop(second)
    assert code == 0 and "published 0 events (0 already in the stream)" in err, err
    assert await has(nc, subjects, after)
    await nc.jetstream().delete_stream(subjects.events_stream)
