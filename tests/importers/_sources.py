"""What the whole-source agents' tests share: the events a converter makes of one reading,
the citations in a tool's answer, and ``watch`` following a source that grows (with a real
nats-server) and resuming from its stored token."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import until
from tests.importers.test_watch import has, said, start, stop, watch_command
from worker.importers.source_reading import ReadingConverter, SourceReading


def reading_events(name: str, reading: SourceReading) -> list[dict[str, Any]]:
    """The event bodies a fresh converter named ``name`` makes of one reading."""
    converter = ReadingConverter(name, lambda: reading)
    return [orjson.loads(out.body) for out in converter.feed(1, b"")]


def cites_of(trace: str) -> str:
    """The "Cites" part of a ``session_event_trace`` answer."""
    return trace.split("Cites (")[1].split("Cited by")[0]


async def watch_growth(
    nc: NATS, nats_url: str, subjects: Subjects, bucket: str, fmt: str, path: Path, *,
    before: int, grow: Callable[[], None], after: int,
) -> None:  # fmt: skip
    """``watch`` publishes the ``before`` events a source holds, then the ones ``grow``
    adds (``after`` in all); restarted, it resumes from its stored token and publishes
    nothing again. The generated sessions' times are long past: ``--idle-seconds`` of
    about 30 years keeps them open."""
    command = watch_command(nats_url, subjects, bucket, path, fmt=fmt, idle=1e9, quiet=False)
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
