"""Each part of the writer's memory is bounded by its setting (issue 41; not timed).

The tantivy writer's heap, the busy-time commit interval, SQLite's page cache and memory
map, the analysis caches, the batch's bytes; and the settings reach the writer's child
process.
"""

from __future__ import annotations

import asyncio
import mmap
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests._events import event
from worker.config import WorkerConfig
from worker.replica.ingest_actor import IngestActor
from worker.replica.writer_settings import writer_limits
from worker.store.index.writer import SqliteIndexWriter
from worker.store.index.writer_core import QUIET_COMMIT_GAP_S, WriterCore
from worker.store.index.writer_limits import LIMITS_ENV, MIB, WriterLimits
from worker.store.index.writer_pages import THREAD_NAME, SearchPager, mappings_under
from worker.store.index.writer_process import ProcessIndexWriter
from worker.store.search import analysis, search_follower, search_schema
from worker.store.writer_protocol import IngestItem, Rejected

LIMITS = WriterLimits(
    search_heap_mib=20,
    search_commit_ms=3000,
    sqlite_cache_mib=3,
    sqlite_mmap_mib=5,
    analysis_cache_words=50,
    release_ms=250,
)


class _SpyIndex:
    """A tantivy index that records how its writers are opened."""

    def __init__(self, index: Any, calls: list[dict[str, Any]]) -> None:
        self._index, self._calls = index, calls

    def writer(self, **kwargs: Any) -> Any:
        self._calls.append(kwargs)
        return self._index.writer(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)


def test_writer_opens_each_part_with_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    real_open = search_schema.open_index
    monkeypatch.setattr(search_follower, "open_index", lambda p: _SpyIndex(real_open(p), calls))
    core = WriterCore.open(
        tmp_path / "index.sqlite", text_cap_bytes=4096, max_event_bytes=65536, limits=LIMITS
    )
    try:
        assert calls == [{"heap_size": 20 * MIB, "num_threads": 1}]
        assert core.conn.value("PRAGMA cache_size") == -3 * 1024
        assert core.conn.value("PRAGMA mmap_size") == 5 * MIB
        assert core.search is not None and core.search._commit_interval == 3.0
        assert analysis._CACHE_LIMIT == 50
    finally:
        core.close()
        analysis.set_cache_limit(WriterLimits().analysis_cache_words)


def test_analysis_caches_stay_within_their_bound() -> None:
    try:
        analysis.set_cache_limit(40)
        words = " ".join(f"word{i}x someIdentifier{i}" for i in range(300))
        exact, derived = analysis.index_fields(words, "k:")
        for held in (analysis._exact_of, analysis._derived_of, analysis._stems):
            # one text's own words may pass the bound; the next text starts afresh
            assert len(held) <= 600
        analysis.index_fields("a small text", "k:")
        assert len(analysis._exact_of) <= 40
        # The bound changes what is kept, never the tokens.
        analysis.set_cache_limit(100_000)
        assert analysis.index_fields(words, "k:") == (exact, derived)
    finally:
        analysis.set_cache_limit(WriterLimits().analysis_cache_words)


def test_limits_refuse_what_tantivy_or_sqlite_would() -> None:
    with pytest.raises(ValueError, match="search_heap_mib"):
        WriterLimits(search_heap_mib=8)
    with pytest.raises(ValueError, match="negative"):
        WriterLimits(sqlite_cache_mib=-1)
    with pytest.raises(ValueError, match="negative"):
        WriterLimits(release_ms=-1)
    assert WriterLimits.from_json(LIMITS.to_json()) == LIMITS


def test_worker_settings_map_to_the_writer_limits() -> None:
    config = WorkerConfig(
        writer_search_heap_mib=20,
        writer_search_commit_ms=3000,
        writer_sqlite_cache_mib=3,
        writer_sqlite_mmap_mib=5,
        writer_analysis_cache_words=50,
        writer_release_ms=250,
    )
    assert writer_limits(config) == LIMITS
    assert writer_limits(WorkerConfig()) == WriterLimits()


def _environ(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")


async def test_the_writer_child_gets_the_limits(tmp_path: Path) -> None:
    writer = await ProcessIndexWriter.open(tmp_path / "index.sqlite", limits=LIMITS)
    try:
        pid = writer.pid
        assert pid is not None
        environ = _environ(pid)
        found = [v for v in environ if v.startswith(LIMITS_ENV.encode() + b"=")]
        assert len(found) == 1
        raw = found[0].split(b"=", 1)[1]
        assert WriterLimits(**orjson.loads(raw)) == LIMITS
    finally:
        await writer.close()


async def test_a_batch_closes_at_its_byte_bound(tmp_path: Path) -> None:
    async def sink(r: Rejected) -> None:
        raise AssertionError(r)

    async with await SqliteIndexWriter.open(tmp_path / "index.sqlite") as writer:
        big = "x" * 3000
        bodies = [event("s", 1, "session/start")]
        bodies += [event("s", n, payload={"text": big}) for n in range(2, 11)]
        # A batch closes once it holds 8,000 bytes or more: the start and three ~3.2 KB
        # messages, then three and three (without the bound: one batch of ten).
        actor = IngestActor(
            writer, dead_letter=sink, batch_size=500, batch_ms=1000, batch_bytes=8000
        )
        for i, body in enumerate(bodies, start=1):
            await actor.put(IngestItem(i, body))
        actor.stop()
        await actor.run()
        assert actor.stats.applied == 10
        assert actor.stats.batches == 3


def test_a_quiet_writer_commits_at_most_every_quiet_gap(tmp_path: Path) -> None:
    core = WriterCore.open(tmp_path / "index.sqlite", text_cap_bytes=4096, max_event_bytes=65536)
    try:
        batch = core.prepare([IngestItem(1, event("s", 1, "session/start"))])
        core.apply(batch, commit_search=True)  # committed just now
        core.apply(core.prepare([IngestItem(2, event("s", 2))]))
        assert core.search_pending()
        # Quiet for IDLE_S would commit at once; right after a commit it waits out the gap.
        wait = core.search_wait(0.02)
        assert wait is not None and 0.2 < wait <= QUIET_COMMIT_GAP_S
    finally:
        core.close()


def _mapped_kib(path: Path) -> int:
    """The RSS of this process's mappings of ``path`` (KiB), from /proc/self/smaps."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(None, 5)
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
            inside = len(head) == 6 and head[5] == str(path)
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_the_pager_gives_back_the_mapped_pages_of_search_files_alone(tmp_path: Path) -> None:
    search_dir, other_dir = tmp_path / "index.sqlite.search", tmp_path / "other"
    search_dir.mkdir()
    other_dir.mkdir()
    files = {d: d / "seg.idx" for d in (search_dir, other_dir)}
    maps = []
    for path in files.values():
        path.write_bytes(os.urandom(4 * MIB))
        with path.open("rb") as fh:
            maps.append(mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ))
    try:
        content = [bytes(m) for m in maps]  # every page touched
        assert min(_mapped_kib(p) for p in files.values()) >= 4096
        pager = SearchPager(search_dir)
        if pager.disabled:
            pytest.skip("no madvise here")
        assert pager.release() >= 4 * MIB
        if pager.disabled:
            pytest.skip("MADV_PAGEOUT refused here (an older kernel)")
        assert _mapped_kib(files[search_dir]) < 1024  # given back
        assert _mapped_kib(files[other_dir]) >= 4096  # not a search file: kept
        assert [bytes(m) for m in maps] == content  # read again, the same bytes
    finally:
        for m in maps:
            m.close()


def test_maps_lines_name_the_search_files_only() -> None:
    maps = (
        "7f0000000000-7f0000004000 r--s 00000000 fd:01 12 /h/index.sqlite.search/a.idx\n"
        "7f0000004000-7f0000005000 r--s 00000000 fd:01 13 /h/index.sqlite.search2/b.idx\n"
        "7f0000005000-7f0000006000 rw-p 00000000 00:00 0 \n"
        "7f0000006000-7f0000008000 r--p 00000000 fd:01 14 /h/index.sqlite\n"
    )
    assert mappings_under(Path("/h/index.sqlite.search"), maps) == [(0x7F0000000000, 0x4000)]


def _thread_names(pid: int) -> set[str]:
    return {(task / "comm").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir()}


async def test_the_writer_child_runs_its_pager(tmp_path: Path) -> None:
    writer = await ProcessIndexWriter.open(tmp_path / "index.sqlite", limits=LIMITS)
    try:
        pid = writer.pid
        assert pid is not None
        for _ in range(100):  # the thread names itself as it starts
            if THREAD_NAME in _thread_names(pid):
                break
            await asyncio.sleep(0.05)
        assert THREAD_NAME in _thread_names(pid)
    finally:
        await writer.close()
    off = WriterLimits(release_ms=0)
    writer = await ProcessIndexWriter.open(tmp_path / "index.sqlite", limits=off)
    try:
        pid = writer.pid
        assert pid is not None
        await asyncio.sleep(0.5)
        assert THREAD_NAME not in _thread_names(pid)
    finally:
        await writer.close()
