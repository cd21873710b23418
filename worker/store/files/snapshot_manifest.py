"""The snapshot archive's format: its members, its manifest, and what a restore requires of it.

A snapshot is a consistent copy of the index to ship to another worker (``snapshot_take``),
put in place there by ``snapshot_restore``.

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
  store after a restore (``search_follower``). Carried rather than rebuilt at restore because
  indexing is most of ingestion's cost (``bench/snapshot_join.py`` measures it);
- ``vectors.sqlite``, when the index has a vector file (``--semantic on``): a backup of it
  taken after the search index is pinned and before the store is copied, so it too is
  never ahead of the store. It records the store's ``index_uid``, which a restore keeps, so
  the joining worker's embedding follower keeps these vectors and embeds only what came
  after: a worker joins with semantic search at once, not after re-embedding (at 7-9
  vectors/s on two cores, hours for a large index).

The SHA-256 digest of the whole archive travels beside it (the archive cannot hold its own
digest): a restore checks it first, then the manifest against what the restoring worker
expects (``Expectation``), then the extracted file, and only then moves the files into
place, so a refused snapshot leaves nothing behind. A restore goes onto an empty home only.

No NATS here: where snapshots are stored and found is ``worker.replica.snapshots``'.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Final

from contracts.partitions import PartitionSet
from worker.store.errors import SnapshotRefused
from worker.store.files import schema
from worker.store.search.search_schema import SEARCH_INDEX_VERSION

SNAPSHOT_FORMAT: Final = 1
MANIFEST_MEMBER: Final = "manifest.json"
STORE_MEMBER: Final = "index.sqlite"
SEARCH_MEMBER: Final = "search"
VECTORS_MEMBER: Final = "vectors.sqlite"


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
    # The publishing worker's credential rules (``RedactionSpec.fingerprint``); "" when a
    # manifest names none, which a worker with rules refuses (it replays the stream).
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
