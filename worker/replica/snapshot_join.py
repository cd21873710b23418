"""Joining from a snapshot: a worker that starts on an empty home restores one.

A worker that starts on an empty home (no index file) with ``snapshot_join=restore``
takes the newest snapshot of its stream and partition set (``worker.replica.snapshots``:
the bucket and its naming) that verifies (the store's checks: digest, schema version,
stream identity, partition set, sequence within the stream), and its ingestion then
starts past the covered sequence the restored index records (exactly once, as after any
restart). A snapshot that fails a check is refused with one warning naming the reason,
and the next older one is tried; with none left the worker replays the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

import structlog
from nats.aio.client import Client as NATS
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api
from nats.js.object_store import ObjectStore

from worker.failures import RuntimeFailure
from worker.replica.continuity import StreamState
from worker.replica.snapshots import (
    SnapshotPolicy,
    announced,
    bind_bucket,
    discard,
    held_partitions,
    listed,
    object_prefix,
)
from worker.store.errors import SnapshotRefused
from worker.store.files import index_file
from worker.store.files.snapshot_manifest import Expectation, SnapshotManifest, check_manifest

log = structlog.get_logger("worker.replica.snapshot_join")

_FETCH_BATCH: Final = 32
_FETCH_WAIT_S: Final = 10.0
_DOWNLOAD_SUFFIX: Final = ".snapshot-download"


class SnapshotDownloadFailed(RuntimeFailure):
    """The object could not be read whole (the restore falls back to the next or replay)."""


@dataclass(frozen=True, slots=True)
class Join:
    """How a worker's index started, for its status and its start-up log line: restored
    from a snapshot (which object, the stream seq it covers), a replay of the stream from
    its start (and why no snapshot), or an index file resumed (from its applied seq)."""

    how: Literal["snapshot", "replay", "resume"]
    # The object restored, for a snapshot; None otherwise.
    snapshot: str | None = None
    # The stream seq the index held when ingestion started: the snapshot's, the resumed
    # file's, 0 for a replay.
    stream_seq: int = 0
    # Why a replay (no snapshot stored, none verified, joining by snapshot off, ...).
    reason: str | None = None

    def report(self) -> dict[str, Any]:
        return {
            "how": self.how,
            "snapshot": self.snapshot,
            "stream_seq": self.stream_seq,
            "reason": self.reason,
        }


async def join_from_snapshot(nc: NATS, config: Any, stream: StreamState) -> Join:
    """On an empty home, restore the newest snapshot that verifies; otherwise say why not:
    a replay (joining by snapshot is off, no snapshot of this stream and partition set,
    none verified, the bucket unreadable) or a resume (the home holds an index)."""
    policy = SnapshotPolicy.of(config)
    db = Path(config.db_path)
    if not await asyncio.to_thread(_home_empty, db):
        return Join("resume", stream_seq=await asyncio.to_thread(_resumed_seq, db))
    if policy.join != "restore":
        return Join("replay", reason="--snapshot-join replay")
    try:
        return await _join(nc, config, policy, db, stream)
    except Exception as exc:
        # The bucket unreachable or unreadable: joining by replay is always possible.
        log.warning(
            "snapshot look-up failed; replaying the stream",
            error=type(exc).__name__,
            detail=str(exc)[:200],
        )
        return Join("replay", reason=f"snapshot look-up failed ({type(exc).__name__})")


def _resumed_seq(db: Path) -> int:
    """The resumed file's applied seq; 0 when it cannot be read at all (the preflight that
    follows decides what such a file is, and a corrupt one is rebuilt and said so)."""
    try:
        return index_file.applied_seq(db)
    except sqlite3.DatabaseError:
        return 0


async def _join(
    nc: NATS, config: Any, policy: SnapshotPolicy, db: Path, stream: StreamState
) -> Join:
    js = nc.jetstream()
    store = await bind_bucket(js, policy, create=False)
    if store is None:
        return Join("replay", reason=f"no snapshot bucket {policy.bucket}")
    partitions = held_partitions(config, stream.partitions)
    expect = Expectation(
        stream_name=stream.name,
        stream_created=stream.created,
        first_seq=stream.first_seq,
        last_seq=stream.last_seq,
        partitions=partitions,
        redaction=policy.redaction,
    )
    prefix = object_prefix(stream.name, partitions)
    candidates = sorted(
        (info for info in await listed(store) if info.name.startswith(prefix)),
        key=lambda info: info.name,
        reverse=True,
    )
    for info in candidates:
        restored = await _try_restore(nc, store, info, db, expect)
        if restored is not None:
            return Join("snapshot", snapshot=info.name, stream_seq=restored.stream_seq)
    if candidates:
        log.warning("no snapshot could be used; replaying the stream", tried=len(candidates))
        return Join("replay", reason=f"none of {len(candidates)} snapshots verified")
    return Join("replay", reason=f"no snapshot of {prefix.rstrip('/')} in {policy.bucket}")


async def _try_restore(
    nc: NATS, store: ObjectStore, info: api.ObjectInfo, db: Path, expect: Expectation
) -> SnapshotManifest | None:
    from worker.store.files import snapshot_restore

    started = time.monotonic()
    download = Path(f"{db}{_DOWNLOAD_SUFFIX}")
    try:
        manifest, digest = announced(info)
        check_manifest(manifest, expect)  # before downloading: the restore checks again
        written = await _download(nc, store, info, download)
        downloaded = time.monotonic()
        restored = await asyncio.to_thread(
            functools.partial(
                snapshot_restore.restore,
                download,
                digest,
                db,
                expect=expect,
                archive_sha256=written,
            )
        )
    except (SnapshotRefused, SnapshotDownloadFailed) as exc:
        log.warning("snapshot refused; falling back to replay", snapshot=info.name, reason=str(exc))
        return None
    finally:
        await asyncio.to_thread(discard, download)
    log.info(
        "index restored from a snapshot",
        snapshot=info.name,
        stream_seq=restored.stream_seq,
        bytes=info.size,
        seconds=round(time.monotonic() - started, 2),
        download_s=round(downloaded - started, 2),
    )
    return restored


async def _download(nc: NATS, store: ObjectStore, info: api.ObjectInfo, target: Path) -> str:
    """The object's chunks into ``target``, through a pull consumer of our own (nats-py's
    ``ObjectStore.get`` reads ~20 MiB/s: flow-control stalls on its push consumer); returns
    the SHA-256 of the bytes written, hashed as they arrive."""
    js = nc.jetstream()
    bucket = info.bucket
    sub = await js.pull_subscribe(
        f"$O.{bucket}.C.{info.nuid}",
        stream=f"OBJ_{bucket}",
        config=api.ConsumerConfig(
            ack_policy=api.AckPolicy.NONE,
            mem_storage=True,
            num_replicas=1,
            inactive_threshold=60.0,  # one left by a crash disappears by itself
        ),
    )
    size = int(info.size or 0)
    written = 0
    digest = hashlib.sha256()
    try:
        out = await asyncio.to_thread(target.open, "wb")
        with out:
            while written < size:
                try:
                    msgs = await sub.fetch(_FETCH_BATCH, timeout=_FETCH_WAIT_S)
                except NatsTimeoutError:
                    raise SnapshotDownloadFailed(
                        f"object {info.name[:120]}: no chunk within {_FETCH_WAIT_S:.0f} s"
                        f" ({written} of {size} bytes read)"
                    ) from None
                block = b"".join(msg.data for msg in msgs)
                await asyncio.to_thread(_write_hashed, out, digest, block)
                written += len(block)
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    if written != size:
        raise SnapshotDownloadFailed(f"object {info.name[:120]}: {written} bytes, {size} recorded")
    return digest.hexdigest()


def _write_hashed(out: BinaryIO, digest: Any, block: bytes) -> None:
    out.write(block)
    digest.update(block)


def _home_empty(db: Path) -> bool:
    return not any(Path(f"{db}{suffix}").exists() for suffix in ("", *index_file.SIDE_FILES))
