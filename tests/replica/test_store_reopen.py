"""A rebuild's swap inside the one store the tools and the operator reads hold: the replica
puts the new file in place (``rebuild.swap``) and the store reopens its path
(``SqliteSessionStore.reopen``), so requests from then on read the new file, its search
index included, and the old file's readers close once the reads on them are done."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from tests.store._corpus import Corpus, search, writer_and_store
from worker.config import WorkerConfig
from worker.replica import rebuild
from worker.replica.continuity import REBUILD_SUFFIX
from worker.signals import ExecutionSignal
from worker.store.sqlite import SqliteSessionStore

BOUND_S = 30  # an upper bound for a hang, never a timing assertion


async def _index(path: Path, session_id: str, text: str) -> None:
    async with writer_and_store(path) as (writer, _reads):
        corpus = Corpus(writer=writer, path=path)
        corpus.start(session_id)
        corpus.say(session_id, text)
        await corpus.flush()


async def test_a_swap_serves_the_new_file_and_closes_the_old(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    await _index(db, "s-old", "the ledger reconciliation finished")
    store = await SqliteSessionStore.open(db)
    signal = ExecutionSignal()
    try:
        assert set(await store.read_titles(["s-old", "s-new"], signal=signal)) == {"s-old"}
        assert [h.header.session_id for h in (await search(store, "ledger")).hits] == ["s-old"]
        await _index(Path(f"{db}{REBUILD_SUFFIX}"), "s-new", "the walrus migration finished")
        old_pool = store._pool  # test-only: the old file's readers, to see them closed
        await rebuild.swap(WorkerConfig(db_path=db), "replaced")
        await store.reopen()
        assert set(await store.read_titles(["s-old", "s-new"], signal=signal)) == {"s-new"}
        # The search index is the new file's too.
        assert [h.header.session_id for h in (await search(store, "walrus")).hits] == ["s-new"]
        assert (await search(store, "ledger")).hits == ()
        # The old readers were closed by the swap: reading them again fails.
        with pytest.raises(Exception):  # noqa: B017 - whichever error a closed pool gives
            old_pool.run_inline(signal, lambda tx: None)
    finally:
        await store.close()


async def test_a_search_begun_before_the_swap_finishes_on_the_old_file(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    await _index(db, "s-old", "the ledger reconciliation finished")
    store = await SqliteSessionStore.open(db, readers=1)
    try:
        await search(store, "ledger")  # the search index opened, the reader warm
        started, go_on = threading.Event(), threading.Event()

        def hold() -> int:
            started.set()
            go_on.wait(BOUND_S)
            return 0  # go on

        # Test-only reach into the pool: the old file's one reader holds its search here.
        (reader,) = store._readers
        reader.on_progress(hold, 1)  # idle now: safe from this thread
        running = asyncio.ensure_future(search(store, "ledger"))
        assert await asyncio.to_thread(started.wait, BOUND_S)
        await _index(Path(f"{db}{REBUILD_SUFFIX}"), "s-new", "the ledger migration finished")
        await rebuild.swap(WorkerConfig(db_path=db), "replaced")
        reopening = asyncio.ensure_future(store.reopen())
        await asyncio.sleep(0.1)
        assert not reopening.done()  # the old readers close only once the search is done
        go_on.set()
        assert [h.header.session_id for h in (await running).hits] == ["s-old"]
        await asyncio.wait_for(reopening, BOUND_S)
        assert [h.header.session_id for h in (await search(store, "ledger")).hits] == ["s-new"]
    finally:
        go_on.set()
        await store.close()
