"""Cross-session and single-session search through the SQLite provider (real SQLite, real
writer). Filters are checked against a plain-Python model of the same corpus.

Over 400 lines: the search's semantics, one behaviour per test.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.store._corpus import (
    ALL,
    BASE_MS,
    MAIN,
    NONE,
    Corpus,
    bulk_matches,
    bump_epoch,
    compiled,
    corpus_and_store,
    search,
)
from worker.signals import ExecutionSignal
from worker.store.errors import GenerationChanged, InvalidCursor, InvalidQuery, StoreError
from worker.store.files import schema
from worker.store.protocol import (
    EventFilter,
    EventSearchPage,
    SessionFilter,
    SessionHit,
)
from worker.store.sqlite import SqliteSessionStore

# -- filters against a model ---------------------------------------------------------------


@dataclass
class ModelEvent:
    sid: str
    type: str
    surface: str
    time_ms: int
    text: str


@dataclass
class ModelSession:
    sid: str
    cwd: str
    parent: str | None
    created_ms: int
    updated_ms: int = 0
    persisted: bool = False
    events: list[ModelEvent] = field(default_factory=list)


TYPES = ("message/user", "message/assistant", "tool/call", "tool/result")
SURFACE_OF = {
    "message/user": "user",
    "message/assistant": "assistant",
    "tool/call": "assistant",
    "tool/result": "tool",
}


async def build_model(corpus: Corpus) -> dict[str, ModelSession]:
    rng = random.Random(20261202)
    model: dict[str, ModelSession] = {}
    for i in range(36):
        sid = f"s{i:02d}"
        cwd = MAIN if i % 9 else "/w/other"  # every ninth session is foreign
        roots = [s for s in model if model[s].parent is None and model[s].cwd == cwd]
        parent = rng.choice(roots) if roots and i % 3 == 1 else None
        if i % 11 == 5:
            parent = "ghost"  # a parent that is not indexed
        created = BASE_MS + i * 100_000
        session = ModelSession(sid, cwd, parent, created, created)
        corpus.start(sid, cwd=cwd, parent=parent, time_ms=created)
        for k in range(1, rng.randint(2, 7)):
            type_ = rng.choice(TYPES)
            text = rng.choice(["needle in the haystack", "nothing here", "needle again", "hay"])
            time_ms = created + k * 1000
            corpus.event(sid, type_, {"text": text}, surface=SURFACE_OF[type_], time_ms=time_ms)
            session.events.append(ModelEvent(sid, type_, SURFACE_OF[type_], time_ms, text))
            session.updated_ms = time_ms
        if i % 4 == 0:
            session.updated_ms += 1000
            corpus.event(sid, "session/end", {}, surface="system", time_ms=session.updated_ms)
            session.persisted = True
        model[sid] = session
    await corpus.flush()
    return model


def expected(
    model: dict[str, ModelSession], sessions: SessionFilter, events: EventFilter
) -> dict[str, int]:
    """Session id -> matching events, computed from the model alone."""
    out: dict[str, int] = {}
    for s in model.values():
        if s.cwd != MAIN or s.sid in sessions.exclude_session_ids:
            continue
        if sessions.session_ids is not None and s.sid not in sessions.session_ids:
            continue
        if sessions.parent_session_ids is not None and not (
            s.parent in sessions.parent_session_ids or (sessions.include_roots and s.parent is None)
        ):
            continue
        lo, hi = sessions.created_from_ms, sessions.created_to_ms
        if (lo is not None and s.created_ms < lo) or (hi is not None and s.created_ms > hi):
            continue
        lo, hi = sessions.updated_from_ms, sessions.updated_to_ms
        if (lo is not None and s.updated_ms < lo) or (hi is not None and s.updated_ms > hi):
            continue
        availability = "persisted" if s.persisted else "live"
        if sessions.availability is not None and availability not in sessions.availability:
            continue
        n = sum(
            1
            for e in s.events
            if "needle" in e.text
            and (events.types is None or e.type in events.types)
            and (events.surfaces is None or e.surface in events.surfaces)
            and (events.time_from_ms is None or e.time_ms >= events.time_from_ms)
            and (events.time_to_ms is None or e.time_ms <= events.time_to_ms)
        )
        if n:
            out[s.sid] = n
    return out


MID = BASE_MS + 15 * 100_000
LATE = BASE_MS + 27 * 100_000
FILTERS: list[tuple[str, SessionFilter, EventFilter]] = [
    ("none", ALL, NONE),
    ("session_ids", SessionFilter(session_ids=("s01", "s04", "s09", "s30", "nope")), NONE),
    ("parents", SessionFilter(parent_session_ids=("s00", "s02", "s03")), NONE),
    ("parents+roots", SessionFilter(parent_session_ids=("s02",), include_roots=True), NONE),
    ("roots only", SessionFilter(parent_session_ids=(), include_roots=True), NONE),
    ("no parent allowed", SessionFilter(parent_session_ids=()), NONE),
    ("ghost parent", SessionFilter(parent_session_ids=("ghost",)), NONE),
    ("created from", SessionFilter(created_from_ms=MID), NONE),
    ("created to", SessionFilter(created_to_ms=MID), NONE),  # inclusive: s15 itself
    ("created between", SessionFilter(created_from_ms=MID, created_to_ms=LATE), NONE),
    ("updated from", SessionFilter(updated_from_ms=MID + 3000), NONE),
    ("updated to", SessionFilter(updated_to_ms=MID + 3000), NONE),
    ("persisted", SessionFilter(availability=("persisted",)), NONE),
    ("live", SessionFilter(availability=("live",)), NONE),
    ("both availabilities", SessionFilter(availability=("live", "persisted")), NONE),
    ("excluded", SessionFilter(exclude_session_ids=("s01", "s02", "s03")), NONE),
    ("types", ALL, EventFilter(types=("tool/result",))),
    ("types ORed", ALL, EventFilter(types=("tool/result", "message/user"))),
    ("unknown type", ALL, EventFilter(types=("compaction",))),
    ("surfaces", ALL, EventFilter(surfaces=("assistant",))),
    ("surfaces ORed", ALL, EventFilter(surfaces=("user", "tool"))),
    ("time from", ALL, EventFilter(time_from_ms=MID)),
    ("time to", ALL, EventFilter(time_to_ms=MID + 2000)),
    ("time between", ALL, EventFilter(time_from_ms=MID, time_to_ms=LATE)),
    (
        "combined",
        SessionFilter(availability=("live",), created_from_ms=BASE_MS + 500_000),
        EventFilter(types=("message/assistant", "tool/result"), time_to_ms=LATE),
    ),
    (
        "combined with parents",
        SessionFilter(parent_session_ids=("s00", "s02"), include_roots=True),
        EventFilter(surfaces=("assistant", "tool")),
    ),
]


async def test_filters_alone_and_combined_match_the_model(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    model = await build_model(corpus)
    nonempty = 0
    for name, sessions, events in FILTERS:
        page = await search(store, "needle", sessions=sessions, events=events)
        got = {hit.header.session_id: hit.matching_events for hit in page.hits}
        want = expected(model, sessions, events)
        assert got == want, name
        assert page.next_cursor is None, name
        for hit in page.hits:
            assert hit.header.cwd == MAIN
            assert hit.event.session_id == hit.header.session_id
            assert "needle" in hit.event.preview
            assert "[needle]" in hit.excerpt
        # "filters removed every match": only when something in scope matched at all
        assert page.filtered_out == (not want and (sessions, events) != (ALL, NONE)), name
        nonempty += bool(want)
    assert nonempty >= len(FILTERS) - 4  # the corpus really exercises the filters


async def test_query_without_matches_is_not_filtered_out(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("a")
    corpus.say("a", "needle")
    corpus.start("me")
    corpus.say("me", "only the caller says zebra")
    await corpus.flush()
    page = await search(store, "walrus", events=EventFilter(types=("tool/result",)))
    assert page.hits == () and not page.filtered_out
    # The caller's own session is scope, not a filter: its match does not count.
    mine = SessionFilter(exclude_session_ids=("me",), availability=("persisted",))
    page = await search(store, "zebra", sessions=mine)
    assert page.hits == () and not page.filtered_out
    assert (
        await search(store, "zebra", sessions=SessionFilter(availability=("persisted",)))
    ).filtered_out


async def test_invalid_query_is_raised_not_empty(env: tuple[Corpus, SqliteSessionStore]) -> None:
    _, store = env
    with pytest.raises(InvalidQuery):
        await search(store, "!!! ---")
    with pytest.raises(InvalidQuery):
        await store.search_events(
            compiled("-only"),
            session_id="x",
            events=NONE,
            cursor=None,
            page_size=5,
            signal=ExecutionSignal(),
        )


# -- workspace scope -----------------------------------------------------------------------


async def test_workspace_filter_applies_before_limit(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("mine", cwd=MAIN)
    corpus.say("mine", "the rare needle")
    await corpus.flush()
    # 10,000 foreign matches, all stronger than ours. Half of them even carry our
    # workspace token (a token collision), so only the exact cwd comparison keeps them out.
    bulk_matches(corpus.path, corpus=corpus, cwd="/w/other", sessions=500, events_per_session=10,
                 text="needle needle", prefix="far")  # fmt: skip
    bulk_matches(corpus.path, corpus=corpus, cwd="/w/mainX", sessions=500, events_per_session=10,
                 text="needle needle", prefix="twin")  # fmt: skip
    conn = sqlite3.connect(str(corpus.path), isolation_level=None)
    try:
        token = schema.workspace_token(MAIN)
        conn.execute("UPDATE sessions SET ws = ? WHERE session_id LIKE 'twin%'", (token,))
    finally:
        conn.close()
    await corpus.writer.sync_search()
    page = await search(store, "needle", page_size=1)
    assert [hit.header.session_id for hit in page.hits] == ["mine"]
    assert page.next_cursor is None
    other = await search(store, "needle", cwd="/w/other", page_size=100)
    assert len(other.hits) == 100 and other.next_cursor is not None
    assert {hit.header.cwd for hit in other.hits} == {"/w/other"}
    assert (await search(store, "needle", cwd="/w/nobody")).hits == ()


# -- grouping and ranking ------------------------------------------------------------------


async def test_a_long_weak_session_does_not_drown_a_short_strong_one(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("long")
    filler = " ".join(f"word{i}" for i in range(60))
    for _ in range(300):
        corpus.say("long", f"{filler} needle {filler}")
    corpus.start("short")
    corpus.say("short", "needle needle: the flaky needle test")
    corpus.start("middle")
    corpus.say("middle", f"needle {filler}")
    await corpus.flush()
    page = await search(store, "needle", page_size=2)
    assert [hit.header.session_id for hit in page.hits] == ["short", "middle"]
    assert [hit.matching_events for hit in page.hits] == [1, 1]
    assert page.hits[0].score < page.hits[1].score  # bm25: lower is better
    rest = await search(store, "needle", page_size=2, cursor=page.next_cursor)
    assert [(hit.header.session_id, hit.matching_events) for hit in rest.hits] == [("long", 300)]
    assert rest.next_cursor is None
    assert rest.hits[0].excerpt.count("[needle]") == 1


async def test_best_event_and_excerpt_are_the_strongest_match(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    corpus.start("a")
    corpus.say("a", "a weak mention of flaky among many other words " * 5)
    best = corpus.say("a", "flaky flaky test", type_="tool/result", surface="tool")
    await corpus.flush()
    (hit,) = (await search(store, "flaky")).hits
    assert hit.event.seq == best and hit.event.type == "tool/result"
    assert hit.excerpt == "[flaky] [flaky] test"
    assert hit.matching_events == 2


# -- cursors -------------------------------------------------------------------------------


async def uniform_corpus(corpus: Corpus, names: list[str]) -> None:
    # Identical texts give identical scores, so the order is by session id alone and any
    # change of the matched set would show up as a shifted page.
    for name in names:
        corpus.start(name)
        corpus.say(name, "the needle text")
    await corpus.flush()


async def test_cursor_pages_cover_everything_once(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    names = [f"m{i:02d}" for i in range(23)]
    await uniform_corpus(corpus, names)
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await search(store, "needle", cursor=cursor, page_size=5)
        seen += [hit.header.session_id for hit in page.hits]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == names and pages == 5


def shape(hit: SessionHit) -> tuple[str, int, int, str]:
    return (hit.header.session_id, hit.event.seq, hit.matching_events, hit.excerpt)


async def test_later_pages_see_the_corpus_of_the_first_page(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    await uniform_corpus(corpus, [f"m{i:02d}" for i in range(15)])
    first = await search(store, "needle", page_size=5)
    second_before = await search(store, "needle", page_size=5, cursor=first.next_cursor)
    # Appends between pages: new sessions that would sort first, more matches in old ones.
    await uniform_corpus(corpus, ["a0", "a1", "a2"])
    corpus.say("m07", "the needle text")
    corpus.say("m12", "the needle text")
    await corpus.flush()
    second = await search(store, "needle", page_size=5, cursor=first.next_cursor)
    # Same sessions, same best events, same counts (headers are current, by design).
    assert [shape(hit) for hit in second.hits] == [shape(hit) for hit in second_before.hits]
    assert second.generation == first.generation
    third = await search(store, "needle", page_size=5, cursor=second.next_cursor)
    assert [hit.header.session_id for hit in third.hits] == [f"m{i}" for i in range(10, 15)]
    assert all(hit.matching_events == 1 for hit in third.hits)
    assert third.next_cursor is None
    fresh = await search(store, "needle", page_size=5)
    assert [hit.header.session_id for hit in fresh.hits][:3] == ["a0", "a1", "a2"]
    assert fresh.generation.seq > first.generation.seq


async def test_generation_changed_after_purge_and_epoch_bump(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    await uniform_corpus(corpus, [f"m{i:02d}" for i in range(6)])
    first = await search(store, "needle", page_size=2)
    assert first.next_cursor is not None
    assert await corpus.writer.purge(session_ids=["m05"]) == 1
    with pytest.raises(GenerationChanged):
        await search(store, "needle", page_size=2, cursor=first.next_cursor)
    again = await search(store, "needle", page_size=2)
    assert again.generation.epoch == first.generation.epoch + 1
    bump_epoch(corpus.path)
    with pytest.raises(GenerationChanged):
        await search(store, "needle", page_size=2, cursor=again.next_cursor)


async def test_a_foreign_or_broken_cursor_is_invalid(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    await uniform_corpus(corpus, [f"m{i:02d}" for i in range(6)])
    first = await search(store, "needle", page_size=2)
    cursor = first.next_cursor
    assert cursor is not None
    for bad in ("", "!!!", "bm90IGpzb24", cursor[:-3], cursor + "AAAA"):
        with pytest.raises(InvalidCursor):
            await search(store, "needle", page_size=2, cursor=bad)
    # Well-formed but forged numbers: out of SQLite's range, or negative.
    fields = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    for key, value in (("g", 2**70), ("o", -1), ("e", "1"), ("o", True)):
        forged = base64.urlsafe_b64encode(json.dumps({**fields, key: value}).encode()).decode()
        with pytest.raises(InvalidCursor):
            await search(store, "needle", page_size=2, cursor=forged)
    far = base64.urlsafe_b64encode(json.dumps({**fields, "o": 10**12}).encode()).decode()
    beyond = await search(store, "needle", page_size=2, cursor=far)
    assert beyond.hits == () and beyond.next_cursor is None
    # A cursor is bound to its query, scope and filters.
    with pytest.raises(InvalidCursor):
        await search(store, "text", page_size=2, cursor=cursor)
    with pytest.raises(InvalidCursor):
        await search(store, "needle", cwd="/w/other", page_size=2, cursor=cursor)
    with pytest.raises(InvalidCursor):
        await search(store, "needle", events=EventFilter(types=("x",)), cursor=cursor)
    with pytest.raises(InvalidCursor):
        await store.search_events(
            compiled("needle"), session_id="m00", events=NONE, cursor=cursor, page_size=2,
            signal=ExecutionSignal(),
        )  # fmt: skip


# -- one session ---------------------------------------------------------------------------


async def test_search_events_in_one_session(env: tuple[Corpus, SqliteSessionStore]) -> None:
    corpus, store = env
    corpus.start("a")
    seqs = [corpus.say("a", f"needle number {i}") for i in range(12)]
    tool = corpus.say("a", "needle needle from a tool", type_="tool/result", surface="tool")
    corpus.start("b")
    corpus.say("b", "needle needle needle")
    await corpus.flush()

    async def events(
        filters: EventFilter = NONE, cursor: str | None = None, size: int = 100, sid: str = "a"
    ) -> EventSearchPage | None:
        return await store.search_events(
            compiled("needle"), session_id=sid, events=filters, cursor=cursor, page_size=size,
            signal=ExecutionSignal(),
        )  # fmt: skip

    page = await events()
    assert page is not None
    assert page.header.session_id == "a" and page.header.last_seq == tool
    assert {hit.event.seq for hit in page.hits} == {*seqs, tool}
    # Every event holds the word once: shorter events first (repeating it earns nothing),
    # equal ones in session order.
    assert [hit.event.seq for hit in page.hits] == [*seqs, tool]
    assert all(hit.event.session_id == "a" for hit in page.hits)
    assert all("[needle]" in hit.excerpt for hit in page.hits)

    ranged = await events(EventFilter(seq_from=seqs[2], seq_to=seqs[5]))
    assert ranged is not None
    assert {hit.event.seq for hit in ranged.hits} == set(seqs[2:6])
    typed = await events(EventFilter(types=("tool/result",), surfaces=("tool",)))
    assert typed is not None and [hit.event.seq for hit in typed.hits] == [tool]

    collected: list[int] = []
    cursor = None
    while True:
        p = await events(cursor=cursor, size=4)
        assert p is not None
        collected += [hit.event.seq for hit in p.hits]
        cursor = p.next_cursor
        if cursor is None:
            break
    assert sorted(collected) == sorted([*seqs, tool]) and len(collected) == 13

    empty = await events(EventFilter(seq_from=1000))
    assert empty is not None and empty.hits == () and empty.filtered_out
    none = await store.search_events(
        compiled("walrus"),
        session_id="a",
        events=NONE,
        cursor=None,
        page_size=5,
        signal=ExecutionSignal(),
    )
    assert none is not None and none.hits == () and not none.filtered_out
    assert await events(sid="missing") is None


async def test_a_broken_index_is_an_error_not_an_empty_result(
    env: tuple[Corpus, SqliteSessionStore],
) -> None:
    corpus, store = env
    await uniform_corpus(corpus, ["m00"])
    assert (await search(store, "needle")).hits
    conn = sqlite3.connect(corpus.path, isolation_level=None)
    try:
        conn.execute("ALTER TABLE events RENAME TO events_gone")
    finally:
        conn.close()
    with pytest.raises(StoreError):
        await search(store, "needle")
    assert (await store.generation(signal=ExecutionSignal())).seq > 0  # the reader still works


# -- arbitrary queries through the provider ------------------------------------------------

QUERY_TEXT = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.lists(
        st.sampled_from(['"', "(", ")", "*", "^", ":", "-", "NEAR", "OR", "NOT", "needle", " "]),
        max_size=15,
    ).map("".join),
)


@pytest.fixture
def provider_loop(tmp_path: Path) -> Iterator[tuple[asyncio.AbstractEventLoop, SqliteSessionStore]]:
    """A loop of this test's own, so hypothesis can drive the async provider per example."""
    loop = asyncio.new_event_loop()
    manager = corpus_and_store(tmp_path)
    corpus, store = loop.run_until_complete(manager.__aenter__())
    loop.run_until_complete(uniform_corpus(corpus, ["m0", "m1"]))
    try:
        yield loop, store
    finally:
        loop.run_until_complete(manager.__aexit__(None, None, None))
        loop.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=QUERY_TEXT)
def test_any_query_is_a_page_or_invalid_query(
    provider_loop: tuple[asyncio.AbstractEventLoop, SqliteSessionStore], text: str
) -> None:
    loop, store = provider_loop
    try:
        page = loop.run_until_complete(search(store, text))
    except InvalidQuery:
        return
    assert all(hit.header.cwd == MAIN for hit in page.hits)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.lists(st.text(alphabet="()*^:+{}.,;!?/\\'", min_size=1, max_size=4), max_size=6))
def test_syntax_noise_around_a_word_still_finds_it(
    provider_loop: tuple[asyncio.AbstractEventLoop, SqliteSessionStore], junk: list[str]
) -> None:
    loop, store = provider_loop
    page = loop.run_until_complete(search(store, " ".join(["needle", *junk])))
    assert [hit.header.session_id for hit in page.hits] == ["m0", "m1"]
