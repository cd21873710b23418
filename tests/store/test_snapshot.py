"""Snapshots of the index (``worker.store.files.snapshot_take``, ``snapshot_restore``): taken
beside a running writer, restored onto an empty home, and refused (with nothing left behind)
when any check fails."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from contracts.partitions import PartitionSet
from contracts.redaction import RedactionSpec
from tests._index import table_rows
from tests.store._corpus import Corpus, search, writer_and_store
from worker.store.errors import SnapshotRefused
from worker.store.files import snapshot_manifest, snapshot_restore, snapshot_take
from worker.store.files.snapshot_manifest import Expectation
from worker.store.index.writer import SqliteIndexWriter
from worker.store.search.search_schema import search_index_path

STREAM = "SESSIONS_SNAP"
CREATED = "2026-12-04T10:00:00+00:00"
ALL16 = PartitionSet.all(16)


def expectation(**over: object) -> Expectation:
    values: dict[str, object] = {
        "stream_name": STREAM,
        "stream_created": CREATED,
        "first_seq": 1,
        "last_seq": 10_000,
        "partitions": ALL16,
    }
    values.update(over)
    return Expectation(**values)  # type: ignore[arg-type]


async def fill(corpus: Corpus, sessions: range, *, cwd: str = "/w/main") -> None:
    for n in sessions:
        sid = f"s-{n}"
        corpus.start(sid, cwd=cwd)
        for k in range(5):
            corpus.say(sid, f"snapshot words {n} item{k} 检索测试")
    await corpus.flush()


async def indexed(path: Path, sessions: range) -> Corpus:
    writer = await SqliteIndexWriter.open(path)
    await writer.bind_stream(STREAM, CREATED, 1)
    corpus = Corpus(writer=writer, path=path)
    await fill(corpus, sessions)
    await writer.sync_search()
    return corpus


def take(db: Path, out: Path, partitions: PartitionSet = ALL16) -> snapshot_take.Snapshot:
    with out.open("wb") as sink:
        return snapshot_take.take(db, sink, partitions=partitions)


async def test_round_trip_then_catch_up_equals_the_whole_history(tmp_path: Path) -> None:
    source = tmp_path / "a" / "index.sqlite"
    source.parent.mkdir()
    corpus = await indexed(source, range(20))
    try:
        archive = tmp_path / "snap.tar"
        taken = take(source, archive)  # the writer is still open: a live copy
        covered = corpus.stream_seq
        assert taken.manifest.stream_seq == covered
        assert taken.manifest.search_files > 0
        # The source goes on after the snapshot: the restored copy must catch up alone.
        await fill(corpus, range(20, 30))
        await corpus.writer.sync_search()
        later = corpus.pending, corpus.stream_seq
    finally:
        await corpus.writer.close()
    assert later[1] > covered

    target = tmp_path / "b" / "index.sqlite"
    target.parent.mkdir()
    restored = snapshot_restore.restore(archive, taken.sha256, target, expect=expectation())
    assert restored == taken.manifest
    assert table_rows(target)["meta"] != table_rows(source)["meta"]  # behind: only what it covered
    # Replay past the covered sequence: the same events, from the same stream positions.
    replay = Corpus(writer=await SqliteIndexWriter.open(target), path=target)
    replay.stream_seq = covered
    replay.clock_ms = corpus.clock_ms - 10 * 6 * 1000
    await fill(replay, range(20, 30))
    await replay.writer.sync_search()
    await replay.writer.close()
    assert table_rows(target) == table_rows(source)

    async with writer_and_store(target) as (_, store):
        page = await search(store, "item3 检索", page_size=100)
    async with writer_and_store(source) as (_, store):
        whole = await search(store, "item3 检索", page_size=100)
    assert [(h.header, h.excerpt, h.score) for h in page.hits] == [
        (h.header, h.excerpt, h.score) for h in whole.hits
    ]
    assert len(page.hits) == 30


async def test_a_flipped_byte_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    source = tmp_path / "index.sqlite"
    corpus = await indexed(source, range(3))
    await corpus.writer.close()
    archive = tmp_path / "snap.tar"
    taken = take(source, archive)
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0x01
    archive.write_bytes(bytes(data))
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(SnapshotRefused, match="digest"):
        snapshot_restore.restore(archive, taken.sha256, home / "index.sqlite", expect=expectation())
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"stream_created": "2026-12-05T00:00:00+00:00"}, "re-created"),
        ({"stream_name": "OTHER"}, "this worker.s is OTHER"),
        ({"partitions": PartitionSet.parse("0-7", 16)}, "partitions all of 16"),
        ({"partitions": PartitionSet.all(8)}, "partitions all of 16"),
        ({"last_seq": 5}, "past the stream's last seq"),
        ({"first_seq": 100}, "would be missing"),
        # taken (with no rules recorded) by a worker other than one redacting with these
        (
            {"redaction": RedactionSpec(extra=(("acme", "ACME-[0-9]+"),)).fingerprint()},
            "other credential redaction rules",
        ),
    ],
)
async def test_a_snapshot_for_another_stream_set_or_range_is_refused(
    tmp_path: Path, over: dict[str, object], reason: str
) -> None:
    source = tmp_path / "index.sqlite"
    corpus = await indexed(source, range(3))
    await corpus.writer.close()
    archive = tmp_path / "snap.tar"
    taken = take(source, archive)
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(SnapshotRefused, match=reason):
        snapshot_restore.restore(
            archive, taken.sha256, home / "index.sqlite", expect=expectation(**over)
        )
    assert list(home.iterdir()) == []


async def test_the_sequence_just_before_the_streams_first_is_enough(tmp_path: Path) -> None:
    source = tmp_path / "index.sqlite"
    corpus = await indexed(source, range(2))
    await corpus.writer.close()
    archive = tmp_path / "snap.tar"
    taken = take(source, archive)
    seq = taken.manifest.stream_seq
    target = tmp_path / "home" / "index.sqlite"
    target.parent.mkdir()
    snapshot_restore.restore(
        archive, taken.sha256, target, expect=expectation(first_seq=seq + 1, last_seq=seq)
    )
    assert table_rows(target) == table_rows(source)


async def test_restore_refuses_a_home_that_is_not_empty(tmp_path: Path) -> None:
    source = tmp_path / "index.sqlite"
    corpus = await indexed(source, range(2))
    await corpus.writer.close()
    archive = tmp_path / "snap.tar"
    taken = take(source, archive)
    with pytest.raises(SnapshotRefused, match="empty home"):
        snapshot_restore.restore(archive, taken.sha256, source, expect=expectation())


async def test_an_archive_with_a_path_outside_its_folder_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "index.sqlite"
    corpus = await indexed(source, range(2))
    await corpus.writer.close()
    good = tmp_path / "good.tar"
    take(source, good)
    # The real manifest, then a member that would land outside the staging folder.
    bad = tmp_path / "bad.tar"
    with tarfile.open(good) as original, tarfile.open(bad, "w") as out:
        manifest = original.getmember(snapshot_manifest.MANIFEST_MEMBER)
        out.addfile(manifest, original.extractfile(manifest))
        escape = tarfile.TarInfo("search/../../escaped")
        escape.size = 1
        out.addfile(escape, io.BytesIO(b"x"))
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(SnapshotRefused, match="unexpected archive member"):
        snapshot_restore.restore(
            bad, snapshot_restore.sha256_of(bad), home / "index.sqlite", expect=expectation()
        )
    assert list(home.iterdir()) == []
    assert not (tmp_path / "escaped").exists()


async def test_without_a_search_index_the_store_is_followed_anew(tmp_path: Path) -> None:
    source = tmp_path / "index.sqlite"
    corpus = await indexed(source, range(4))
    await corpus.writer.close()
    import shutil

    shutil.rmtree(search_index_path(source))
    archive = tmp_path / "snap.tar"
    taken = take(source, archive)
    assert taken.manifest.search_files == 0
    target = tmp_path / "home" / "index.sqlite"
    target.parent.mkdir()
    snapshot_restore.restore(archive, taken.sha256, target, expect=expectation())
    async with writer_and_store(target) as (writer, store):
        await writer.sync_search()
        page = await search(store, "item2")
    assert len(page.hits) == 4
