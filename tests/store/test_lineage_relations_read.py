"""Lineage, event relations, exact reads, titles and waiting, through the SQLite provider."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from contracts.partitions import PartitionScope, partition_of_cwd
from tests.store._corpus import Corpus, bulk_matches, corpus_and_store
from worker.signals import DeadlineExceeded, ExecutionCancelled, ExecutionSignal
from worker.store.protocol import LineageNode, ServiceLimits
from worker.store.sqlite import LOOP_LINEAGE_ROWS, PREVIEW_CHARS, SqliteSessionStore


def sig() -> ExecutionSignal:
    return ExecutionSignal()


def ids(nodes: tuple[LineageNode, ...]) -> list[str]:
    return [node.header.session_id for node in nodes]


def walk(nodes: tuple[LineageNode, ...]) -> list[str]:
    """Every session id in the trees, iteratively (trees may be deep)."""
    out: list[str] = []
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        out.append(node.header.session_id)
        stack.extend(reversed(node.children))
    return out


# -- lineage -------------------------------------------------------------------------------


async def test_deep_chain_both_ways(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    corpus.start("d0")
    for i in range(1, 200):
        corpus.start(f"d{i}", parent=f"d{i - 1}")
    await corpus.flush()

    bottom = await store.lineage("d199", signal=sig())
    assert bottom is not None
    assert bottom.target.session_id == "d199"
    assert [h.session_id for h in bottom.ancestors] == [f"d{i}" for i in range(198, -1, -1)]
    assert bottom.missing_ancestor_id is None and bottom.descendants == ()

    top = await store.lineage("d0", signal=sig())
    assert top is not None and top.ancestors == ()
    assert walk(top.descendants) == [f"d{i}" for i in range(1, 200)]
    node = top.descendants[0]
    depth = 1
    while node.children:
        assert len(node.children) == 1
        node = node.children[0]
        depth += 1
    assert depth == 199

    middle = await store.lineage("d100", signal=sig())
    assert middle is not None
    assert len(middle.ancestors) == 100 and len(walk(middle.descendants)) == 99


@pytest.mark.parametrize("size", [LOOP_LINEAGE_ROWS - 1, LOOP_LINEAGE_ROWS, LOOP_LINEAGE_ROWS + 1])
async def test_lineage_is_whole_at_the_loop_thread_cap(
    env: tuple[Corpus, SqliteSessionStore], size: int
) -> None:
    """A walk capped on the loop thread and one read again on a reader give the whole
    lineage: chains and trees of exactly the cap's size, and one row either side."""
    corpus, store = env
    corpus.start("k0")
    for i in range(1, size):
        corpus.start(f"k{i}", parent=f"k{i - 1}")
    corpus.start("fan")
    for i in range(size - 1):
        corpus.start(f"f{i:03d}", parent="fan")
    await corpus.flush()

    bottom = await store.lineage(f"k{size - 1}", signal=sig())
    assert bottom is not None
    assert [h.session_id for h in bottom.ancestors] == [f"k{i}" for i in range(size - 2, -1, -1)]
    top = await store.lineage("k0", signal=sig())
    assert top is not None and walk(top.descendants) == [f"k{i}" for i in range(1, size)]
    fan = await store.lineage("fan", signal=sig())
    assert fan is not None and ids(fan.descendants) == [f"f{i:03d}" for i in range(size - 1)]


async def test_wide_tree(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    corpus.start("root")
    for c in range(40):
        corpus.start(f"c{c:02d}", parent="root")
        for g in range(3):
            corpus.start(f"g{c:02d}-{g}", parent=f"c{c:02d}")
    corpus.start("elsewhere", cwd="/w/other", parent="c07")  # the provider shows all; tools prune
    await corpus.flush()
    lineage = await store.lineage("root", signal=sig())
    assert lineage is not None
    assert ids(lineage.descendants) == [f"c{c:02d}" for c in range(40)]
    for child in lineage.descendants:
        kids = ids(child.children)
        expected = [f"g{child.header.session_id[1:]}-{g}" for g in range(3)]
        if child.header.session_id == "c07":
            expected.append("elsewhere")
        assert kids == expected
    assert len(walk(lineage.descendants)) == 40 * 4 + 1


async def test_cycles_end_and_place_each_session_once(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    # x -> y -> z -> x: each names a parent that starts later, so the writer accepts it.
    corpus.start("x", parent="z")
    corpus.start("y", parent="x")
    corpus.start("z", parent="y")
    corpus.start("leaf", parent="y")
    corpus.start("self", parent="self")
    await corpus.flush()
    lineage = await store.lineage("x", signal=sig())
    assert lineage is not None
    assert [h.session_id for h in lineage.ancestors] == ["z", "y"]
    assert lineage.missing_ancestor_id is None
    # y and z are already placed as ancestors; only leaf (under y) is not, and y is not
    # repeated to hold it, so it is not reachable from x's descendant trees either.
    assert walk(lineage.descendants) == []
    leaf = await store.lineage("leaf", signal=sig())
    assert leaf is not None
    assert [h.session_id for h in leaf.ancestors] == ["y", "x", "z"]
    assert leaf.descendants == ()
    selfish = await store.lineage("self", signal=sig())
    assert selfish is not None and selfish.ancestors == () and selfish.descendants == ()


async def test_missing_ancestor_and_missing_session(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("orphan-parent", parent="ghost")
    corpus.start("orphan", parent="orphan-parent")
    await corpus.flush()
    lineage = await store.lineage("orphan", signal=sig())
    assert lineage is not None
    assert [h.session_id for h in lineage.ancestors] == ["orphan-parent"]
    assert lineage.missing_ancestor_id == "ghost"
    top = await store.lineage("orphan-parent", signal=sig())
    assert top is not None and ids(top.descendants) == ["orphan"]
    assert await store.lineage("ghost", signal=sig()) is None


# -- relations -----------------------------------------------------------------------------


async def relations_corpus(corpus: Corpus) -> None:
    corpus.start("r")  # seq 1
    for i in range(2, 11):
        replaces = {5: [3, 4], 8: [5], 10: [8, 6]}.get(i, [])
        corpus.say("r", f"event {i}", replaces=replaces)
    corpus.start("o", cwd="/w/other")
    corpus.say("o", "foreign source")  # o:2
    corpus.start("c")
    corpus.say("c", "derived", cites=[("r", 5), ("o", 2), ("ghost", 3), ("r", 999)])  # c:2
    corpus.say("c", "also derived", cites=[("r", 5)])  # c:3
    await corpus.flush()


async def test_replacements_are_transitive_both_ways(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    await relations_corpus(corpus)

    async def seqs(seq: int) -> tuple[list[int], list[int]]:
        rel = await store.event_relations("r", seq, signal=sig())
        assert rel is not None and rel.event is not None and rel.event.seq == seq
        assert rel.header.session_id == "r"
        return [e.seq for e in rel.replaces], [e.seq for e in rel.replaced_by]

    assert await seqs(8) == ([5, 4, 3], [10])
    assert await seqs(3) == ([], [5, 8, 10])
    assert await seqs(10) == ([8, 6, 5, 4, 3], [])
    assert await seqs(6) == ([], [10])
    assert await seqs(7) == ([], [])


async def test_citations_both_ways_with_headers(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    await relations_corpus(corpus)
    rel = await store.event_relations("c", 2, signal=sig())
    assert rel is not None
    by_ref = {(link.ref.session_id, link.ref.seq): link for link in rel.cites}
    assert set(by_ref) == {("r", 5), ("o", 2), ("ghost", 3), ("r", 999)}
    assert by_ref[("r", 5)].header is not None and by_ref[("r", 5)].event is not None
    assert by_ref[("r", 5)].event.preview == "event 5"
    assert by_ref[("o", 2)].header is not None and by_ref[("o", 2)].header.cwd == "/w/other"
    assert by_ref[("ghost", 3)].header is None and by_ref[("ghost", 3)].event is None
    assert by_ref[("r", 999)].header is not None and by_ref[("r", 999)].event is None
    assert rel.cited_by == ()

    source = await store.event_relations("r", 5, signal=sig())
    assert source is not None
    assert [(link.ref.session_id, link.ref.seq) for link in source.cited_by] == [
        ("c", 2),
        ("c", 3),
    ]
    assert all(
        link.header is not None and link.header.session_id == "c" for link in source.cited_by
    )
    assert [e.seq for e in source.replaces] == [4, 3] and [e.seq for e in source.replaced_by] == [
        8,
        10,
    ]


async def test_relations_of_missing_event_or_session(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    await relations_corpus(corpus)
    rel = await store.event_relations("r", 500, signal=sig())
    assert rel is not None and rel.event is None and rel.header.session_id == "r"
    assert await store.event_relations("nope", 1, signal=sig()) is None


# -- exact reads ---------------------------------------------------------------------------


async def test_read_windows_at_the_edges(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    corpus.start("a")  # seq 1
    for i in range(2, 11):
        corpus.say("a", f"text {i}")
    await corpus.flush()

    async def window(seq: int, before: int, after: int) -> tuple[int | None, list[int], list[int]]:
        w = await store.read_event("a", seq, before=before, after=after, signal=sig())
        assert w is not None and w.header.session_id == "a"
        target = w.target.summary.seq if w.target is not None else None
        return target, [e.summary.seq for e in w.before], [e.summary.seq for e in w.after]

    assert await window(1, 3, 2) == (1, [], [2, 3])
    assert await window(10, 2, 5) == (10, [8, 9], [])
    assert await window(5, 0, 0) == (5, [], [])
    assert await window(5, -4, -1) == (5, [], [])
    assert await window(5, 100, 100) == (5, [1, 2, 3, 4], [6, 7, 8, 9, 10])
    assert await window(11, 3, 3) == (None, [8, 9, 10], [])
    assert await window(0, 0, 2) == (None, [], [1, 2])
    assert await store.read_event("zz", 1, before=1, after=1, signal=sig()) is None

    w = await store.read_event("a", 4, before=0, after=0, signal=sig())
    assert w is not None and w.target is not None
    published = orjson.loads(w.target.raw_json)
    assert published["payload"] == {"text": "text 4"} and w.target.payload() == {"text": "text 4"}
    assert w.target.summary.event_id == "e-a-4"


async def test_read_window_is_bounded_by_the_limits(tmp_path: Path) -> None:
    async with corpus_and_store(tmp_path) as (corpus, _):
        corpus.start("a")
        for i in range(30):
            corpus.say("a", f"text {i}")
        await corpus.flush()
        limited = await SqliteSessionStore.open(
            corpus.path, readers=1, limits=ServiceLimits(max_event_window=3)
        )
        async with limited:
            assert limited.limits.max_event_window == 3
            w = await limited.read_event("a", 15, before=20, after=20, signal=sig())
            assert w is not None
            assert [e.summary.seq for e in w.before] == [12, 13, 14]
            assert [e.summary.seq for e in w.after] == [16, 17, 18]


async def test_preview_is_collapsed_and_bounded(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    corpus.start("a")
    corpus.say("a", "first\n\n\t  line   " + "word " * 500)
    await corpus.flush()
    w = await store.read_event("a", 2, before=0, after=0, signal=sig())
    assert w is not None and w.target is not None
    preview = w.target.summary.preview
    assert preview.startswith("first line word word")
    assert "  " not in preview and "\n" not in preview
    assert len(preview) <= PREVIEW_CHARS and preview.endswith("…")


# -- titles, latest seq, waiting -----------------------------------------------------------


async def test_titles_in_one_batch(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    for i in range(1200):
        corpus.start(f"t{i}")
        if i % 2:
            corpus.event(f"t{i}", "session/title", {"title": f"old {i}"}, surface="system")
            corpus.event(f"t{i}", "session/title", {"title": f"title {i}"}, surface="system")
    await corpus.flush()
    wanted = [f"t{i}" for i in range(1200)] + ["missing", "t1", "t3"]
    titles = await store.read_titles(wanted, signal=sig())
    assert set(titles) == {f"t{i}" for i in range(1200)}
    assert titles["t1"].title == "title 1" and titles["t0"].title is None
    assert titles["t1"].header.session_id == "t1" and titles["t1"].header.last_seq == 3
    assert await store.read_titles([], signal=sig()) == {}


async def test_latest_seq_of_type(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    corpus.start("a")
    corpus.event("a", "step/start", {})
    corpus.say("a", "x")
    last_step = corpus.event("a", "step/start", {})
    corpus.say("a", "y")
    await corpus.flush()
    assert await store.latest_seq_of_type("a", "step/start", signal=sig()) == last_step
    assert await store.latest_seq_of_type("a", "compaction", signal=sig()) is None
    assert await store.latest_seq_of_type("zz", "step/start", signal=sig()) is None


async def test_wait_for_seq_wakes_on_commit(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    corpus.start("a")
    await corpus.flush()
    await store.wait_for_seq("a", 1, signal=sig())  # already there
    waiter = asyncio.create_task(store.wait_for_seq("a", 3, signal=sig()))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiter.done()
    corpus.say("a", "two")
    await corpus.flush()
    assert not waiter.done()  # seq 3 does not exist yet, whatever woke it
    corpus.say("a", "three")
    await corpus.flush()
    await asyncio.wait_for(waiter, timeout=30)  # a bound, not a timing assertion


async def test_wait_for_seq_polls_for_other_writers(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    waiter = asyncio.create_task(store.wait_for_seq("far0", 4, signal=sig()))
    await asyncio.sleep(0)
    # Another process's write: plain sqlite3, no in-process notification; then its search
    # index follows (the wait covers it too), still without a notification.
    await asyncio.to_thread(
        bulk_matches, corpus.path, corpus=corpus, cwd="/w/x", sessions=1,
        events_per_session=4, text="t", prefix="far",
    )  # fmt: skip
    for _ in range(5):
        await asyncio.sleep(0.06)  # past a poll: the store holds it, the search index not yet
    assert not waiter.done()
    await corpus.writer.sync_search()
    await asyncio.wait_for(waiter, timeout=30)


async def test_wait_for_seq_is_bounded_by_the_signal(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    _, store = env
    signal = sig()
    waiter = asyncio.create_task(store.wait_for_seq("never", 1, signal=signal))
    await asyncio.sleep(0.01)
    signal.cancel("the user pressed stop")
    with pytest.raises(ExecutionCancelled) as info:
        await waiter
    assert info.value is signal.error and info.value.reason == "the user pressed stop"
    with pytest.raises(DeadlineExceeded):
        await store.wait_for_seq("never", 1, signal=ExecutionSignal.after(0.05))


async def test_wait_for_seq_never_holds_a_session_outside_its_scope(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    """A session of another partition than the request's is waited for exactly like one
    the index lacks: to the signal's bound, however far the index holds it."""
    corpus, store = env
    corpus.start("a", cwd="/work/a")
    corpus.say("a", "two")
    await corpus.flush()
    own = partition_of_cwd("/work/a", 16)
    await store.wait_for_seq("a", 2, signal=sig(), scope=PartitionScope(own, 16))
    other = PartitionScope((own + 1) % 16, 16)
    for session_id in ("a", "never"):
        with pytest.raises(DeadlineExceeded):
            await store.wait_for_seq(session_id, 1, signal=ExecutionSignal.after(0.05), scope=other)
