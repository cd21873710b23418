"""Taking a snapshot: the index's files of one moment written as one tar stream, hashed as
it is written (the format: ``snapshot_manifest``)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tarfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from contracts.partitions import PartitionSet
from worker.store.database import Database
from worker.store.errors import SnapshotRefused
from worker.store.files import index_file, schema
from worker.store.files.snapshot_manifest import (
    MANIFEST_MEMBER,
    SEARCH_MEMBER,
    SNAPSHOT_FORMAT,
    STORE_MEMBER,
    VECTORS_MEMBER,
    SnapshotManifest,
)
from worker.store.search.search_schema import SEARCH_INDEX_VERSION, search_index_path
from worker.store.search.semantic.vectors import vectors_path

# tantivy's own bookkeeping (the GC list, lock files) is not part of a commit: a restored
# index starts its own.
_SEARCH_SKIP: Final = frozenset({".managed.json", ".tantivy-meta.lock", ".tantivy-writer.lock"})
_SEARCH_META: Final = "meta.json"
_PIN_ATTEMPTS: Final = 50


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot taken: its manifest, and the archive's size and SHA-256 (hex)."""

    manifest: SnapshotManifest
    size: int
    sha256: str


def take(
    db_path: str | Path, out: BinaryIO, *, partitions: PartitionSet, redaction: str = ""
) -> Snapshot:
    """Write a consistent snapshot of the index at ``db_path`` to ``out`` as a tar stream.

    Runs beside the writer (in any process): the search index is pinned first (its files
    of one commit held open), then the store is copied with the backup API into a scratch
    file beside it (removed after), so the search index is never ahead of the store.
    """
    db = Path(db_path)
    scratch = Path(f"{db}.snapshot-{uuid.uuid4().hex[:8]}")
    vectors_scratch = Path(f"{scratch}.vectors")
    with _pinned_search(search_index_path(db)) as search, contextlib.ExitStack() as cleanup:
        cleanup.callback(index_file.remove_files, scratch)
        cleanup.callback(index_file.remove_files, vectors_scratch)
        has_vectors = vectors_path(db).exists()
        if has_vectors:
            _backup_file(vectors_path(db), vectors_scratch).close()
        meta = _backup(db, scratch)
        manifest = SnapshotManifest(
            format=SNAPSHOT_FORMAT,
            schema_version=schema.read_version_from(meta),
            search_index_version=SEARCH_INDEX_VERSION,
            stream_name=str(meta.get(index_file.STREAM_NAME) or ""),
            stream_created=str(meta.get(index_file.STREAM_CREATED) or ""),
            partitions=partitions.label,
            partition_count=partitions.count,
            stream_seq=_int(meta.get("stream_seq")),
            history_from=_int(meta.get(index_file.HISTORY_FROM)),
            search_files=len(search),
            taken_ms=int(time.time() * 1000),
            redaction=redaction,
        )
        if not manifest.stream_name:
            raise SnapshotRefused(f"index {db} replicates no stream yet: nothing to snapshot")
        hashing = _HashingWriter(out)
        with tarfile.open(fileobj=hashing, mode="w|", format=tarfile.PAX_FORMAT) as archive:
            _add_bytes(archive, MANIFEST_MEMBER, manifest.to_json())
            with scratch.open("rb") as store:
                _add_file(archive, STORE_MEMBER, store)
            for name, handle in search:
                _add_file(archive, f"{SEARCH_MEMBER}/{name}", handle)
            if has_vectors:
                with vectors_scratch.open("rb") as vectors:
                    _add_file(archive, VECTORS_MEMBER, vectors)
    return Snapshot(manifest, hashing.size, hashing.sha256.hexdigest())


def _backup(db: Path, target: Path) -> dict[str, object]:
    """Copy the store into ``target``; returns the copy's ``meta``."""
    if not db.exists():
        raise SnapshotRefused(f"index {db} does not exist")
    copy = _backup_file(db, target)
    try:
        return index_file.read_meta(copy)
    finally:
        copy.close()


def _backup_file(source_path: Path, target: Path) -> Database:
    """Copy a SQLite file into ``target`` in one backup step (one read transaction); the
    copy, open. It is a plain rollback-journal file: no WAL to ship."""
    source = Database.open(source_path, "read", role="snapshot", busy_timeout_s=30)
    try:
        copy = Database.open(target, role="snapshot")
        try:
            source.copy_into(copy)
            copy.run("PRAGMA journal_mode = DELETE")
        except BaseException:
            copy.close()
            raise
        return copy
    finally:
        source.close()


@contextlib.contextmanager
def _pinned_search(path: Path) -> Iterator[list[tuple[str, BinaryIO]]]:
    """The files of the search index's current commit, each held open (a segment file is
    never changed once committed, and an open file outlives its deletion by the writer's
    garbage collection). Retried when a commit lands while the files are opened: the
    commit read before and after must be the same one. Empty when there is no index."""
    for _ in range(_PIN_ATTEMPTS):
        try:
            before = (path / _SEARCH_META).read_bytes()
        except FileNotFoundError:
            yield []
            return
        handles = _open_commit(path, before)
        if handles is not None:
            try:
                if (path / _SEARCH_META).read_bytes() == before:
                    yield [(_SEARCH_META, io.BytesIO(before)), *handles]
                    return
            finally:
                for _, handle in handles:
                    handle.close()
        time.sleep(0.02)
    raise SnapshotRefused(f"search index {path} kept changing; no commit could be pinned")


def _open_commit(path: Path, meta: bytes) -> list[tuple[str, BinaryIO]] | None:
    """Open every file the commit ``meta`` names (None: one vanished, retry)."""
    segments = [s["segment_id"].replace("-", "") for s in json.loads(meta)["segments"]]
    deletes = {
        s["segment_id"].replace("-", ""): s["deletes"]["opstamp"]
        for s in json.loads(meta)["segments"]
        if s.get("deletes")
    }
    handles: list[tuple[str, BinaryIO]] = []
    for entry in sorted(os.listdir(path)):
        if entry in _SEARCH_SKIP or entry == _SEARCH_META:
            continue
        segment = entry.split(".", 1)[0]
        if entry.endswith(".del") and entry != f"{segment}.{deletes.get(segment)}.del":
            continue  # a deletion file of another commit
        if segment in segments or "." not in entry or not _is_segment_name(segment):
            try:
                handles.append((entry, open(path / entry, "rb")))  # noqa: SIM115 - closed by the caller
            except FileNotFoundError:
                for _, handle in handles:
                    handle.close()
                return None
    return handles


def _is_segment_name(name: str) -> bool:
    return len(name) == 32 and all(c in "0123456789abcdef" for c in name)


class _HashingWriter(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to ``out``."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self.sha256 = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self._out.write(view)
        self.sha256.update(view)
        self.size += view.nbytes
        return view.nbytes


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    archive.addfile(info, io.BytesIO(data))


def _add_file(archive: tarfile.TarFile, name: str, handle: BinaryIO) -> None:
    handle.seek(0, os.SEEK_END)
    info = tarfile.TarInfo(name)
    info.size = handle.tell()
    info.mtime = int(time.time())
    handle.seek(0)
    archive.addfile(info, handle)


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0
