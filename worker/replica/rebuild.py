"""The rebuild: a new index built from the stream beside the old one, swapped in once
caught up (the old file is kept, renamed with a timestamp).

``worker.replica.continuity`` decides that a rebuild is needed; this module does it.

For tests only, off unless set: with ``SESSIONQUERY_TEST_REBUILD_HOLD`` naming a file, a
build waits, its new file created and bound to the stream but nothing ingested yet, until
that file exists (logged once, "rebuild held"). A test then looks at a rebuild in progress
for as long as it needs, instead of racing the build's speed against its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog
from nats.aio.client import Client as NATS

from worker.config import WorkerConfig
from worker.replica.continuity import REBUILD_SUFFIX, StreamDiverged, StreamState, bind
from worker.replica.ingest_consumer import EventConsumer
from worker.replica.writer_settings import writer_limits
from worker.store.files import index_file
from worker.store.index.writer_process import open_index_writer
from worker.store.writer_protocol import SessionIndexWriter

log = structlog.get_logger("worker.replica.rebuild")

# Test-only (see the module docstring): the path of a file whose creation releases a build.
HOLD_ENV: Final = "SESSIONQUERY_TEST_REBUILD_HOLD"


@dataclass
class RebuildProgress:
    running: bool = False
    target_seq: int = 0
    applied_seq: int = 0
    reason: str = ""


async def rebuild(
    nc: NATS,
    config: WorkerConfig,
    stream: StreamState,
    *,
    reason: str,
    move_aside_as: str,
    progress: RebuildProgress | None = None,
) -> Path:
    """``build`` then ``swap``: returns the old file's new name."""
    await build(nc, config, stream, reason=reason, progress=progress)
    return await swap(config, move_aside_as)


async def build(
    nc: NATS,
    config: WorkerConfig,
    stream: StreamState,
    *,
    reason: str,
    progress: RebuildProgress | None = None,
) -> Path:
    """Build a new index from the stream into ``<db>.rebuild`` until it holds everything
    the stream held when the build began; returns its path (closed, ready to swap in)."""
    db = config.db_path
    target = Path(f"{db}{REBUILD_SUFFIX}")
    await asyncio.to_thread(index_file.remove_files, target)  # a build cut short before
    progress = progress or RebuildProgress()
    progress.running, progress.target_seq, progress.reason = True, stream.target_seq, reason
    progress.applied_seq = 0
    log.warning(
        "rebuilding the index from the stream",
        reason=reason,
        index=str(db),
        into=str(target),
        stream=stream.name,
        first_seq=stream.first_seq,
        last_seq=stream.last_seq,
    )
    writer = await open_index_writer(
        target,
        mode=config.ingest_writer,
        text_cap_bytes=config.text_cap_bytes,
        max_event_bytes=config.max_event_bytes,
        redaction=config.redaction_spec(),
        limits=writer_limits(config),
    )
    try:
        await bind(writer, stream)
        await _held_for_test(target)
        await _ingest_until_caught_up(nc, writer, config, stream, progress)
    finally:
        await writer.close()
    return target


async def _held_for_test(target: Path) -> None:
    release = os.environ.get(HOLD_ENV)
    if not release:
        return
    log.warning("rebuild held", until_exists=release, into=str(target))
    # A file another process creates: nothing to wait on in this one but the file itself.
    while True:
        if await asyncio.to_thread(os.path.exists, release):
            return
        await asyncio.sleep(0.05)


async def _ingest_until_caught_up(
    nc: NATS,
    writer: SessionIndexWriter,
    config: WorkerConfig,
    stream: StreamState,
    progress: RebuildProgress,
) -> None:
    """Ingest into ``writer`` until it holds ``stream.last_seq``; the consumer then stops."""
    consumer = EventConsumer(
        nc,
        writer,
        subjects=config.subjects,
        batch_size=config.ingest_batch_size,
        batch_ms=config.ingest_batch_ms,
        batch_bytes=config.ingest_batch_bytes,
        mailbox_size=config.ingest_mailbox_size,
        backlog_bytes=config.ingest_backlog_mib * 2**20,
        partitions=config.partitions,
        redaction=config.redaction_spec(),
    )
    running = asyncio.create_task(consumer.run(), name="rebuild-ingest")
    try:
        await _caught_up(consumer, running, stream.target_seq, progress)
    finally:
        consumer.stop()
        with contextlib.suppress(Exception):
            await running


async def swap(config: WorkerConfig, move_aside_as: str) -> Path:
    """Put ``<db>.rebuild`` in place of ``<db>`` (kept as ``<db>.<why>-<time>``)."""
    db = config.db_path
    old = await asyncio.to_thread(_swap, db, Path(f"{db}{REBUILD_SUFFIX}"), move_aside_as)
    log.warning("index rebuilt and swapped in", index=str(db), old_index_kept_as=str(old))
    return old


def _swap(db: Path, rebuilt: Path, move_aside_as: str) -> Path:
    """The old file (and its WAL) renamed aside, the rebuilt one renamed into place."""
    old = index_file.move_aside(db, move_aside_as) if db.exists() else db
    for suffix in index_file.SIDE_FILES:
        side = Path(f"{rebuilt}{suffix}")
        if side.exists():
            os.replace(side, f"{db}{suffix}")
    os.replace(rebuilt, db)
    return old


async def _caught_up(
    consumer: EventConsumer, running: asyncio.Task[None], target: int, progress: RebuildProgress
) -> None:
    while True:
        applied = consumer.actor.stats.last_stream_seq
        progress.applied_seq = applied
        if applied >= target:
            return
        if running.done():
            running.result()  # a failure ends the rebuild
            raise StreamDiverged("the rebuild's ingestion ended before it caught up")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(consumer.actor.wait_applied(target), 2.0)
        log.info("rebuild progress", applied_seq=applied, target_seq=target)
