"""Restoring a snapshot: the archive checked (digest, manifest, members, the store) and
only then moved into place as an empty home's index (the format: ``snapshot_manifest``)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import uuid
from pathlib import Path
from typing import IO, Final

from worker.store import tables
from worker.store.database import Database
from worker.store.errors import SnapshotRefused
from worker.store.files import index_file
from worker.store.files.snapshot_manifest import (
    MANIFEST_MEMBER,
    SEARCH_MEMBER,
    STORE_MEMBER,
    VECTORS_MEMBER,
    Expectation,
    SnapshotManifest,
    check_manifest,
)
from worker.store.search.search_schema import search_index_path
from worker.store.search.semantic.vectors import vectors_path

_COPY_BYTES: Final = 1 << 20
_MAX_MANIFEST_BYTES: Final = 64 * 1024


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
