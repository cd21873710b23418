"""Snapshots of the index: a consistent copy to ship to another worker, and its restore.

Over 400 lines: writing, verifying and restoring one archive format must agree line by line.

A snapshot is one tar archive (written as a stream, never held in memory whole):

- ``manifest.json``: the snapshot format, the schema and search-index versions, the stream
  it replicates (name and creation time: a re-created stream is another stream), the
  partition set it holds (label and count), and the stream sequence it covers;
- ``index.sqlite``: a copy of the store made with SQLite's online backup API in one step
  (one read transaction: a consistent state, while the writer child keeps writing: WAL
  readers never block the writer);
- ``search/...``: the search index's files as of a commit taken *before* the SQLite copy,
  so it is never ahead of the store. A search index behind the store is sound: it records
  the event id and deletion id each commit covers, and the follower catches up from the
  store after a restore (``search_index``). Carried rather than rebuilt at restore because
  indexing is most of ingestion's cost (``bench/snapshot_join.py`` measures it);
- ``vectors.sqlite``, when the index has a vector file (``--semantic on``): a backup of it
  taken after the search index is pinned and before the store is copied, so it too is
  never ahead of the store. It records the store's ``index_uid``, which a restore keeps, so
  the joining worker's embedding follower keeps these vectors and embeds only what came
  after: a worker joins with semantic search at once, not after re-embedding (at 7-9
  vectors/s on two cores, hours for a large index).

The SHA-256 digest of the whole archive travels beside it (the archive cannot hold its own
digest): ``restore`` checks it first, then the manifest against what the restoring worker
expects (``Expectation``), then the extracted file, and only then moves the files into
place, so a refused snapshot leaves nothing behind. A restore goes onto an empty home only.

No NATS here: where snapshots are stored and found is ``worker.replica.snapshots``'.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tarfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, Final

from contracts.partitions import PartitionSet
from worker.store import tables
from worker.store.database import Database
from worker.store.errors import SnapshotRefused as SnapshotRefused
from worker.store.files import index_file, schema
from worker.store.search.search_index import SEARCH_INDEX_VERSION, search_index_path
from worker.store.search.semantic.vectors import vectors_path

SNAPSHOT_FORMAT: Final = 1
MANIFEST_MEMBER: Final = "manifest.json"
STORE_MEMBER: Final = "index.sqlite"
SEARCH_MEMBER: Final = "search"
VECTORS_MEMBER: Final = "vectors.sqlite"
# tantivy's own bookkeeping (the GC list, lock files) is not part of a commit: a restored
# index starts its own.
_SEARCH_SKIP: Final = frozenset({".managed.json", ".tantivy-meta.lock", ".tantivy-writer.lock"})
_SEARCH_META: Final = "meta.json"
_PIN_ATTEMPTS: Final = 50
_COPY_BYTES: Final = 1 << 20
_MAX_MANIFEST_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class SnapshotManifest:
    """What a snapshot holds: checked against the restoring worker before it is used."""

    format: int
    schema_version: int
    search_index_version: int
    stream_name: str
    stream_created: str
    partitions: str  # PartitionSet.label
    partition_count: int
    stream_seq: int  # the stream sequence the copy is complete through
    history_from: int
    search_files: int  # 0: no search index in the archive (the store is followed anew)
    taken_ms: int
    # The publishing worker's credential rules (``RedactionSpec.fingerprint``); "" in a
    # snapshot taken before they were recorded.
    redaction: str = ""

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> SnapshotManifest:
        try:
            raw = json.loads(data)
            optional = {"redaction": ""}
            return cls(**{name: raw.get(name, optional[name]) if name in optional
                          else raw[name] for name in cls.__slots__})  # fmt: skip
        except (ValueError, TypeError, KeyError) as exc:
            raise SnapshotRefused(f"unreadable snapshot manifest ({type(exc).__name__})") from None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot taken: its manifest, and the archive's size and SHA-256 (hex)."""

    manifest: SnapshotManifest
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the restoring worker requires of a snapshot: its stream, as the server reports
    it now, and its own partition set."""

    stream_name: str
    stream_created: str
    first_seq: int
    last_seq: int
    partitions: PartitionSet
    redaction: str = ""  # the joining worker's rules (``RedactionSpec.fingerprint``)


def check_manifest(manifest: SnapshotManifest, expect: Expectation) -> None:
    """Raises ``SnapshotRefused`` naming the first check ``manifest`` fails (pure)."""
    if manifest.format != SNAPSHOT_FORMAT:
        raise SnapshotRefused(f"snapshot format {manifest.format}, expected {SNAPSHOT_FORMAT}")
    if manifest.schema_version != schema.SCHEMA_VERSION:
        raise SnapshotRefused(
            f"schema version {manifest.schema_version}, this worker's is {schema.SCHEMA_VERSION}"
        )
    if manifest.search_files and manifest.search_index_version != SEARCH_INDEX_VERSION:
        raise SnapshotRefused(
            f"search index version {manifest.search_index_version},"
            f" this worker's is {SEARCH_INDEX_VERSION}"
        )
    if manifest.stream_name != expect.stream_name:
        raise SnapshotRefused(
            f"taken from stream {manifest.stream_name}, this worker's is {expect.stream_name}"
        )
    if manifest.stream_created != expect.stream_created:
        raise SnapshotRefused(
            f"taken from stream {manifest.stream_name} created {manifest.stream_created};"
            f" the stream now was created {expect.stream_created} (re-created)"
        )
    wanted = expect.partitions
    if manifest.partitions != wanted.label or manifest.partition_count != wanted.count:
        raise SnapshotRefused(
            f"holds partitions {manifest.partitions} of {manifest.partition_count},"
            f" this worker holds {wanted.label} of {wanted.count}"
        )
    if manifest.redaction != expect.redaction:
        # Its text was redacted by other rules: a replay applies this worker's.
        raise SnapshotRefused("taken under other credential redaction rules than this worker's")
    if manifest.stream_seq > expect.last_seq:
        raise SnapshotRefused(
            f"covers stream seq {manifest.stream_seq}, past the stream's last seq"
            f" {expect.last_seq} (the stream was reset)"
        )
    if manifest.stream_seq + 1 < expect.first_seq:
        raise SnapshotRefused(
            f"covers stream seq {manifest.stream_seq}, but the stream now starts at seq"
            f" {expect.first_seq}: events {manifest.stream_seq + 1}..{expect.first_seq - 1}"
            " would be missing"
        )


# -- taking ---------------------------------------------------------------------------------


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


# -- restoring ------------------------------------------------------------------------------


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_COPY_BYTES):
            digest.update(block)
    return digest.hexdigest()


def restore(
    archive: str | Path,
    sha256: str,
    db_path: str | Path,
    *,
    expect: Expectation,
    archive_sha256: str | None = None,
) -> SnapshotManifest:
    """Put the snapshot in ``archive`` in place as the index at ``db_path``, or raise
    ``SnapshotRefused`` with the reason (nothing is left behind then).

    Checked in order: the home is empty (no index file, no search index), the archive's
    SHA-256 is ``sha256``, its manifest matches ``expect``, the extracted store passes
    what the manifest says. The restored file gets an index id of
    its own: it is a new file, not the one the snapshot was taken from.
    ``archive_sha256``: the digest of the archive's bytes as the caller wrote them (a
    download hashes them as they arrive), which spares reading the archive once more.
    """
    db = Path(db_path)
    for suffix in ("", *index_file.SIDE_FILES):
        if Path(f"{db}{suffix}").exists():
            raise SnapshotRefused(
                f"{db}{suffix} exists: a snapshot is restored only onto an empty home"
            )
    found = archive_sha256 or sha256_of(archive)
    if found != sha256.lower():
        raise SnapshotRefused(
            f"archive digest sha256:{found[:16]}... is not the recorded {sha256[:16]}..."
        )
    staging = Path(f"{db}.restore-{uuid.uuid4().hex[:8]}")
    try:
        manifest = _extract(Path(archive), staging, expect)
        _check_store(staging / STORE_MEMBER, manifest)
        search = staging / SEARCH_MEMBER
        if search.is_dir():
            os.replace(search, search_index_path(db))
        if (staging / VECTORS_MEMBER).is_file():
            for stale in ("-wal", "-shm"):  # an old file's log must not replay onto this one
                Path(f"{vectors_path(db)}{stale}").unlink(missing_ok=True)
            os.replace(staging / VECTORS_MEMBER, vectors_path(db))
        os.replace(staging / STORE_MEMBER, db)  # last: the file's presence means restored
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _extract(archive: Path, staging: Path, expect: Expectation) -> SnapshotManifest:
    """Unpack into ``staging``: the manifest first (checked before anything else is
    written), then only the members a snapshot has, as plain files."""
    staging.mkdir(parents=True)
    manifest: SnapshotManifest | None = None
    try:
        with tarfile.open(archive, mode="r|") as members:
            for member in members:
                if manifest is None:
                    manifest = _read_manifest(members, member)
                    check_manifest(manifest, expect)
                    continue
                target = _member_target(staging, member)
                source = members.extractfile(member)
                assert source is not None  # a regular file (checked by _member_target)
                target.parent.mkdir(exist_ok=True)
                with source, open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink, _COPY_BYTES)
    except tarfile.TarError as exc:
        raise SnapshotRefused(f"unreadable archive ({type(exc).__name__})") from None
    if manifest is None:
        raise SnapshotRefused("empty archive")
    if not (staging / STORE_MEMBER).is_file():
        raise SnapshotRefused(f"archive without {STORE_MEMBER}")
    return manifest


def _read_manifest(members: tarfile.TarFile, member: tarfile.TarInfo) -> SnapshotManifest:
    if member.name != MANIFEST_MEMBER or not member.isfile() or member.size > _MAX_MANIFEST_BYTES:
        raise SnapshotRefused(f"the archive does not start with {MANIFEST_MEMBER}")
    handle: IO[bytes] | None = members.extractfile(member)
    assert handle is not None
    with handle:
        return SnapshotManifest.from_json(handle.read())


def _member_target(staging: Path, member: tarfile.TarInfo) -> Path:
    """Where a member goes; anything but the store and flat search files is refused (no
    paths out of the staging directory, no links, no devices)."""
    name = member.name
    if member.isfile():
        if name in (STORE_MEMBER, VECTORS_MEMBER):
            return staging / name
        folder, _, leaf = name.partition("/")
        if folder == SEARCH_MEMBER and leaf and "/" not in leaf and leaf not in ("..", "."):
            return staging / SEARCH_MEMBER / leaf
    raise SnapshotRefused(f"unexpected archive member {name[:80]!r}")


def _check_store(path: Path, manifest: SnapshotManifest) -> None:
    try:
        # No quick_check here: the digest proved these are the bytes the peer's backup
        # wrote, and the worker's preflight checks the file it opens (bounded) anyway.
        state = index_file.inspect(path, quick_check_s=0.0)
    except index_file.CorruptIndex as exc:
        raise SnapshotRefused(f"the archived store is corrupt ({exc})") from None
    assert state is not None
    said = (
        manifest.schema_version,
        manifest.stream_seq,
        manifest.stream_name,
        manifest.stream_created,
    )
    found = (state.schema_version, state.stream_seq, state.stream_name, state.stream_created)
    if said != found:
        raise SnapshotRefused(f"the archived store does not match its manifest ({found} vs {said})")
    conn = Database.open(path, role="snapshot")
    try:
        conn.run(tables.META_SET, ("ix-" + uuid.uuid4().hex, index_file.INDEX_ID))
    finally:
        conn.close()


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0
