"""The index writer against a real SQLite file: folding, duplicates, rejects, relations, purge.

Over 400 lines: the writer's checks and folds, one rule per test.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

from contracts.partitions import NO_CWD_KEY, workspace_key
from contracts.subjects import Subjects
from tests._events import event, subject_of
from tests._index import connect
from worker.store.files import schema
from worker.store.files.integrity import check_integrity, content_checksum
from worker.store.index.writer import SqliteIndexWriter
from worker.store.search.query import compile_query
from worker.store.search.search_reader import QueryBuilder, SearchIndexReader, scope_clauses, top
from worker.store.search.text import searchable_text
from worker.store.writer_protocol import IngestItem

SUBJECTS = Subjects()


def start(session_id: str, cwd: str | None = "/work/a", parent: str | None = None) -> bytes:
    payload: dict[str, Any] = {"cwd": cwd}
    if parent is not None:
        payload["parent_session_id"] = parent
    return event(session_id, 1, "session/start", surface="system", payload=payload)


def items(*bodies: bytes, first: int = 1) -> list[IngestItem]:
    return [IngestItem(stream_seq=first + i, data=b) for i, b in enumerate(bodies)]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index.sqlite"


@pytest.fixture
async def writer(db: Path) -> AsyncIterator[SqliteIndexWriter]:
    async with await SqliteIndexWriter.open(db, text_cap_bytes=64, max_event_bytes=2048) as w:
        yield w


def search_ids(db: Path, text: str, cwd: str = "/work/a") -> set[int]:
    """Event ids the search index finds for ``text`` in ``cwd``'s workspace, all words."""
    reader = SearchIndexReader.open(db)
    assert reader is not None
    scope, _ = scope_clauses(as_of_seq=2**62)
    view = reader.view()
    query = QueryBuilder(compile_query(text), schema.workspace_token(cwd), view).all_words(scope)
    return {c.event_id for c in top(view.searcher, query, 1000)}


def query(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = connect(db)
    try:
        return list(conn.execute(sql, args))
    finally:
        conn.close()


def header(db: Path, session_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        return dict(row)
    finally:
        conn.close()


async def test_headers_fold_start_title_end(writer: SqliteIndexWriter, db: Path) -> None:
    result = await writer.apply(
        items(
            start("s-1", cwd="/work/a", parent="s-0"),
            event("s-1", 2, "session/title", payload={"title": "first"}),
            event("s-1", 3),
            event("s-1", 4, "session/title", payload={"title": "second"}),
        )
    )
    assert (result.applied, result.duplicates, result.rejected) == (4, 0, ())
    h = header(db, "s-1")
    assert h["cwd"] == "/work/a"
    assert h["parent_session_id"] == "s-0"
    assert h["title"] == "second"
    assert h["availability"] == "live"
    assert h["last_seq"] == 4 and h["event_count"] == 4
    assert h["created_ms"] == 1796202001000  # 2026-12-02T09:00:01Z
    assert h["updated_ms"] == 1796202004000

    await writer.apply(items(event("s-1", 5, "session/end", surface="system"), first=5))
    h = header(db, "s-1")
    assert h["availability"] == "persisted"
    assert h["last_seq"] == 5 and h["updated_ms"] == 1796202005000


async def test_updated_is_the_latest_time_not_the_last_event(
    writer: SqliteIndexWriter, db: Path
) -> None:
    await writer.apply(
        items(
            start("s-1"),
            event("s-1", 2, time="2026-12-03T00:00:00Z"),
            event("s-1", 3, time="2026-12-02T10:00:00+01:00"),
        )
    )
    assert header(db, "s-1")["updated_ms"] == 1796256000000


async def test_session_without_cwd(writer: SqliteIndexWriter, db: Path) -> None:
    await writer.apply(items(event("s-1", 1, "session/start", payload={})))
    h = header(db, "s-1")
    assert h["cwd"] is None and h["parent_session_id"] is None and h["ws"] == "wsnone"


async def test_stored_event_is_byte_exact_and_searchable(
    writer: SqliteIndexWriter, db: Path
) -> None:
    raw = b'{"session_id":"s-1",  "seq":1,"event_id":"e","type":"session/start",' + (
        b'"surface":"system","time":"2026-12-02T09:00:00Z","payload":{"cwd":"/w","n":"\\u00e9t\\u00e9"}}'
    )
    await writer.apply(items(raw))
    [(raw_json, body)] = query(db, "SELECT event_json(doc), event_text(doc, type) FROM events")
    assert raw_json == raw.decode()
    assert body == "/w\nété"
    assert search_ids(db, "ete", cwd="/w") == search_ids(db, "été", cwd="/w") != set()
    assert query(db, "SELECT ws FROM sessions") == [(schema.workspace_token("/w"),)]


async def test_duplicates_are_ignored(writer: SqliteIndexWriter, db: Path) -> None:
    first = await writer.apply(items(start("s-1"), event("s-1", 2), event("s-1", 2)))
    assert (first.applied, first.duplicates) == (2, 1)
    # Redelivered under new stream sequences (a republish): still one copy each.
    again = await writer.apply(items(start("s-1"), event("s-1", 2, payload={"x": "y"}), first=4))
    assert (again.applied, again.duplicates, again.rejected) == (0, 2, ())
    assert query(db, "SELECT count(*) FROM events") == [(2,)]
    assert header(db, "s-1")["event_count"] == 2
    assert check_integrity(db) == []


async def test_replayed_stream_sequences_are_skipped(writer: SqliteIndexWriter, db: Path) -> None:
    batch = items(start("s-1"), event("s-1", 2), b"not json")
    first = await writer.apply(batch)
    assert first.last_stream_seq == 3 and len(first.rejected) == 1
    replay = await writer.apply(batch)
    # Already applied: no second reject either, so a replay does not dead-letter twice.
    assert (replay.applied, replay.duplicates, replay.rejected) == (0, 3, ())
    assert await writer.last_stream_seq() == 3


async def test_stream_seq_counts_rejected_and_duplicates(writer: SqliteIndexWriter) -> None:
    await writer.apply(items(start("s-1")))
    result = await writer.apply(items(start("s-1"), b"{", first=7))
    assert result.last_stream_seq == 8
    assert await writer.last_stream_seq() == 8


@pytest.mark.parametrize(
    ("bodies", "fragment"),
    [
        ([b"x" * 2049], "oversized: the event is 2049 bytes, the maximum is 2048 bytes"),
        ([b'{"session_id": '], "invalid JSON: "),
        ([b"\xff\xfe"], "invalid JSON: not UTF-8 at byte 0"),
        ([event("s-1", 1, "session/start", seq="1")], "contract violation: seq: "),
        ([event("s-1", 1, "session/start", surface="robot")], "surface must be one of"),
        ([event("bad id", 1, "session/start")], "contract violation: session_id: "),
        ([event("s-1", 1, "session/start", time="2026-12-02T09:00:00")], "time: "),
        ([event("s-1", 1, "session/start", extra=1)], "extra: Extra inputs are not permitted"),
        ([b"[1]"], "contract violation: event: "),
        ([event("s-1", 3)], "unknown session s-1: seq 3 (message/user) before its session/start"),
        ([event("s-1", 2, "session/start")], "session/start at seq 2 in session s-1"),
        ([start("s-1"), event("s-1", 2, "session/start")], "it must be seq 1"),
        ([start("s-1"), event("s-1", 4)], "gap in session s-1: expected seq 2, got 4"),
        (
            [start("s-1"), event("s-1", 2, "session/end"), event("s-1", 3)],
            "session s-1 ended at seq 2: seq 3 arrived after its session/end",
        ),
        ([start("s-1"), event("s-1", 2, replaces=[2])], "replaces names earlier positions"),
        ([event("s-1", 1, "session/start", payload={"cwd": 5})], "payload.cwd must be a string"),
        (
            [event("s-1", 1, "session/start", payload={"parent_session_id": "a/b"})],
            "payload.parent_session_id must be an id",
        ),
        (
            [start("s-1"), event("s-1", 2, "session/title", payload={"title": ["x"]})],
            "payload.title must be a string",
        ),
        ([event("s-1", 1, "session/start", cites=[{"session_id": "s", "seq": 0}])], "cites.0.seq"),
    ],
)
async def test_each_reject_reason(
    writer: SqliteIndexWriter, db: Path, bodies: list[bytes], fragment: str
) -> None:
    result = await writer.apply(items(*bodies))
    assert len(result.rejected) == 1
    [rejected] = result.rejected
    assert fragment in rejected.reason
    assert "\n" not in rejected.reason
    assert rejected.stream_seq == len(bodies) and rejected.data == bodies[-1]
    assert result.applied == len(bodies) - 1
    assert check_integrity(db) == []


async def test_subject_must_match_the_session(writer: SqliteIndexWriter, db: Path) -> None:
    s1 = subject_of(SUBJECTS, "s-1")
    result = await writer.apply(
        [IngestItem(1, start("s-1"), subject=s1), IngestItem(2, start("s-2"), subject=s1)]
    )
    assert result.applied == 1
    assert [r.reason for r in result.rejected] == [f"subject {s1} does not match session_id s-2"]


async def test_the_subject_key_must_be_the_sessions_workspace_key(
    writer: SqliteIndexWriter, db: Path
) -> None:
    """A key other than the cwd's would put a session in another partition than its
    workspace: refused at the start and for any later event, the stored form too."""
    own, other = workspace_key("/work/a"), workspace_key("/work/b")
    stored = f"{SUBJECTS.events_prefix}.3.{own}.s-1"  # as the stream stores it
    result = await writer.apply(
        [
            IngestItem(1, start("s-0"), subject=SUBJECTS.events(other, "s-0")),
            IngestItem(2, start("s-1"), subject=stored),
            IngestItem(3, event("s-1", 2), subject=SUBJECTS.events(other, "s-1")),
            IngestItem(4, event("s-1", 2), subject=stored),
            IngestItem(5, start("s-9", None), subject=SUBJECTS.events(NO_CWD_KEY, "s-9")),
        ]
    )
    assert result.applied == 3
    assert [(r.stream_seq, r.reason) for r in result.rejected] == [
        (1, f"workspace key mismatch: subject key {other} in session s-0 seq 1,"
            f" the session's cwd has key {own}"),
        (3, f"workspace key mismatch: subject key {other} in session s-1 seq 2,"
            f" the session's cwd has key {own}"),
    ]  # fmt: skip
    with sqlite3.connect(db) as conn:
        kinds = conn.execute("SELECT kind FROM deadletters ORDER BY stream_seq").fetchall()
    assert kinds == [("workspace key mismatch",)] * 2


async def test_rejects_do_not_stop_good_events(writer: SqliteIndexWriter, db: Path) -> None:
    result = await writer.apply(
        items(start("s-1"), b"junk", event("s-1", 2), event("s-9", 5), event("s-1", 3))
    )
    assert result.applied == 3 and len(result.rejected) == 2
    assert query(db, "SELECT seq FROM events ORDER BY seq") == [(1,), (2,), (3,)]


async def test_relations_are_stored(writer: SqliteIndexWriter, db: Path) -> None:
    await writer.apply(
        items(
            start("s-1"),
            event("s-1", 2),
            event("s-1", 3),
            event(
                "s-1",
                4,
                "compaction",
                replaces=[2, 3, 3],
                cites=[{"session_id": "s-1", "seq": 2}, {"session_id": "s-other", "seq": 9}],
            ),
        )
    )
    assert query(db, "SELECT * FROM replacements ORDER BY replaced_seq") == [
        ("s-1", 4, 2),
        ("s-1", 4, 3),
    ]
    assert query(db, "SELECT * FROM citations ORDER BY cited_session_id") == [
        ("s-1", 4, "s-1", 2),
        ("s-1", 4, "s-other", 9),
    ]


async def test_text_is_capped_per_event(writer: SqliteIndexWriter, db: Path) -> None:
    await writer.apply(items(start("s-1"), event("s-1", 2, payload={"a": "é" * 100})))
    [(body,)] = query(db, "SELECT event_text(doc, type) FROM events WHERE seq = 2")
    assert body == "é" * 32  # 64 bytes of UTF-8
    assert check_integrity(db) == []


def test_searchable_text_walks_values_not_keys() -> None:
    payload = {"tool": "bash", "args": {"cmd": ["ls", "-la"], "n": 3, "ok": True}, "x": None}
    assert searchable_text(payload, 1000) == "bash\nls\n-la"
    assert searchable_text({"keyword": 1}, 1000) == ""


@pytest.mark.parametrize("cap", [0, 1, 2, 3, 4, 5, 7, 11])
def test_searchable_text_cuts_on_a_character_boundary(cap: int) -> None:
    text = searchable_text({"a": "aé€😀", "b": "z"}, cap)
    encoded = text.encode("utf-8")
    assert len(encoded) <= cap
    assert "aé€😀\nz".startswith(text)
    # Maximal: one more character would not fit.
    full = "aé€😀\nz"
    if len(text) < len(full):
        assert len(full[: len(text) + 1].encode("utf-8")) > cap


def test_searchable_text_survives_deep_nesting() -> None:
    payload: Any = "deep"
    for _ in range(5000):
        payload = [payload]
    assert searchable_text({"v": payload}, 100) == "deep"


async def test_purge_by_id_removes_everything_and_bumps_epoch(
    writer: SqliteIndexWriter, db: Path
) -> None:
    notified: list[int] = []
    writer.add_commit_listener(lambda: notified.append(1))
    await writer.apply(
        items(
            start("s-1"),
            event("s-1", 2, replaces=[1], cites=[{"session_id": "s-2", "seq": 1}]),
            start("s-2"),
            event("s-2", 2, cites=[{"session_id": "s-1", "seq": 2}]),
        )
    )
    before = await writer.generation()
    kept = query(db, "SELECT session_id, seq, event_json(doc) FROM events WHERE session_id = 's-2'")
    assert await writer.purge(session_ids=["s-1", "s-missing"]) == 1
    after = await writer.generation()
    assert after.epoch == before.epoch + 1 and after.seq == before.seq
    assert query(db, "SELECT session_id FROM sessions") == [("s-2",)]
    assert query(db, "SELECT count(*) FROM events WHERE session_id = 's-1'") == [(0,)]
    assert query(db, "SELECT count(*) FROM replacements") == [(0,)]
    # s-2's citation of s-1 belongs to s-2 and stays.
    assert query(db, "SELECT session_id FROM citations") == [("s-2",)]
    # The search index let go of them too: s-1's text no longer matches, s-2's does.
    assert len(search_ids(db, "hello")) == 1
    assert search_ids(db, '"s 1"') == set()
    assert check_integrity(db) == []
    assert content_checksum(db)[0] == len(kept) == 2
    assert len(notified) == 2  # one apply, one purge


async def test_purge_older_than(writer: SqliteIndexWriter, db: Path) -> None:
    await writer.apply(
        items(
            start("s-old"),
            event("s-old", 2, time="2026-01-01T00:00:00Z"),
            start("s-new"),
            event("s-new", 2, time="2026-12-24T00:00:00Z"),
        )
    )
    # s-old's latest event is 2026-12-02T09:00:01Z (its start), s-new's is 12-24.
    assert await writer.purge(older_than_ms=1797000000000) == 1
    assert query(db, "SELECT session_id FROM sessions") == [("s-new",)]
    assert check_integrity(db) == []


async def test_purge_of_nothing_keeps_the_epoch(writer: SqliteIndexWriter) -> None:
    await writer.apply(items(start("s-1")))
    epoch = (await writer.generation()).epoch
    assert await writer.purge(session_ids=["s-none"]) == 0
    assert await writer.purge() == 0
    assert (await writer.generation()).epoch == epoch


async def test_a_purged_session_can_start_again(writer: SqliteIndexWriter, db: Path) -> None:
    await writer.apply(items(start("s-1"), event("s-1", 2)))
    await writer.purge(session_ids=["s-1"])
    result = await writer.apply(items(start("s-1", cwd="/work/b"), first=3))
    assert result.applied == 1
    assert header(db, "s-1")["cwd"] == "/work/b"
    assert check_integrity(db) == []


async def test_close_twice_is_harmless(db: Path) -> None:
    writer = await SqliteIndexWriter.open(db)
    await writer.close()
    await writer.close()


async def test_open_creates_the_directory(tmp_path: Path) -> None:
    async with await SqliteIndexWriter.open(tmp_path / "a" / "b" / "index.sqlite") as w:
        assert await w.last_stream_seq() == 0


async def test_state_survives_reopen(db: Path) -> None:
    async with await SqliteIndexWriter.open(db) as w:
        await w.apply(items(start("s-1"), event("s-1", 2)))
    async with await SqliteIndexWriter.open(db) as w:
        assert await w.last_stream_seq() == 2
        result = await w.apply(items(event("s-1", 2), event("s-1", 3), first=3))
        assert (result.applied, result.duplicates) == (1, 1)


async def test_integrity_check_detects_the_search_index_disagreeing_with_the_store(
    db: Path,
) -> None:
    async with await SqliteIndexWriter.open(db) as w:
        await w.apply(items(start("s-1"), event("s-1", 2)))
    assert check_integrity(db) == []
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO events (id, session_id, seq, event_id, type, surface, time_ms,"
        " stream_seq, doc) VALUES (99, 's-x', 1, 'e', 't', 'user', 0, 9, ?)",
        (zstandard.ZstdCompressor().compress(b'{"payload":{"text":"orphan text"}}'),),
    )
    conn.commit()
    assert check_integrity(db, wait_s=0.2) == ["search index: 1 events not yet indexed after 0.2 s"]
    conn.execute("DELETE FROM events WHERE id <> 99")  # indexed, no longer stored
    conn.commit()
    conn.close()
    problems = check_integrity(db, wait_s=0.2)
    assert any("events the store lacks" in p for p in problems), problems
