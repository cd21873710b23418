"""How the store keeps an event (issue 41): its JSON once, as a zstd frame, with a
dictionary trained on the store's own events; the searchable text derived, binary runs
left out of it; nothing lost across a restart, a rebuild and the migration from schema 5."""

from __future__ import annotations

import base64
import hashlib
import random
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._events import event
from tests._index import connect, events_as_text
from worker.signals import ExecutionSignal
from worker.store import event_codec, results, sql, tables
from worker.store.files import schema
from worker.store.index.writer_core import WriterCore
from worker.store.search import analysis
from worker.store.search.query import compile_query
from worker.store.search.search_reader import QueryBuilder, SearchIndexReader, scope_clauses, top
from worker.store.search.search_schema import search_index_path, workspace_key
from worker.store.search.text import searchable_text, without_blobs
from worker.store.sqlite import SqliteSessionStore
from worker.store.writer_protocol import IngestItem

CWD = "/work/a"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _start(session_id: str) -> bytes:
    return event(session_id, 1, "session/start", surface="system", payload={"cwd": CWD})


def _items(bodies: list[bytes]) -> list[IngestItem]:
    return [IngestItem(stream_seq=n + 1, data=b) for n, b in enumerate(bodies)]


def _open(db: Path) -> WriterCore:
    return WriterCore.open(db, text_cap_bytes=64 * 1024, max_event_bytes=1 << 20)


def _apply(db: Path, bodies: list[bytes]) -> None:
    core = _open(db)
    try:
        for at in range(0, len(bodies), 500):
            chunk = _items(bodies)[at : at + 500]
            result = core.apply(core.prepare(chunk))
            assert not result.rejected, result.rejected[:1]
        core.catch_up_search()
    finally:
        core.close()


def _rows(db: Path, sql: str, *args: object) -> list[tuple[Any, ...]]:
    conn = connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _stored(db: Path) -> dict[tuple[str, int], bytes]:
    rows = _rows(db, "SELECT session_id, seq, event_json(doc) FROM events")
    return {(sid, seq): raw.encode("utf-8") for sid, seq, raw in rows}


def _published(bodies: list[bytes]) -> dict[tuple[str, int], bytes]:
    out = {}
    for body in bodies:
        doc = orjson.loads(body)
        out[(doc["session_id"], doc["seq"])] = body
    return out


def _matches(db: Path, text: str) -> set[int]:
    reader = SearchIndexReader(search_index_path(db))
    scope, _ = scope_clauses(as_of_seq=2**62)
    view = reader.view()
    plan = compile_query(text)
    query = QueryBuilder(plan, schema.workspace_token(CWD), view).all_words(scope)
    return {c.event_id for c in top(view.searcher, query, 1000)}


def _image(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size)).decode("ascii")


def archive_corpus(sessions: int, events: int, seed: int = 41) -> list[bytes]:
    """Archive-shaped events, deterministic: short prompts, assistant prose, tool calls,
    long tool outputs (logs, code), a base64 image now and then, non-ASCII text."""
    rng = random.Random(seed)
    words = [
        "build",
        "failed",
        "fixture",
        "import",
        "retry",
        "timeout",
        "pytest",
        "worker",
        "queue",
        "héllo",
        "日本語",
        "ok",
    ]
    out: list[bytes] = []
    for s in range(sessions):
        sid = f"s-arch-{s}"
        out.append(_start(sid))
        for seq in range(2, events + 1):
            kind = rng.choice(("message/user", "message/assistant", "tool/call", "tool/result"))
            text = " ".join(rng.choice(words) for _ in range(rng.randrange(3, 40)))
            payload: dict[str, Any] = {"text": text}
            if kind == "tool/result":
                log = "\n".join(
                    f"2026-03-01T12:00:{n % 60:02d}Z INFO step {n} {rng.choice(words)}"
                    for n in range(rng.randrange(1, 200))
                )
                payload = {"tool": "bash", "output": log}
                if rng.random() < 0.05:
                    payload["image"] = {"media_type": "image/png", "data": _image(rng, 3000)}
            surface = {"message/assistant": "assistant", "message/user": "user"}.get(kind, "tool")
            out.append(event(sid, seq, kind, surface=surface, payload=payload))
    return out


def _frame_dict(doc: bytes) -> int:
    """The dictionary id of a doc's (first) frame: a long event's text frame."""
    if not doc.startswith(ZSTD_MAGIC):
        doc = doc[5:]
    return int(zstandard.get_frame_parameters(doc).dict_id)


def test_the_event_json_is_stored_once_as_a_zstd_frame(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    output = "".join(f"pytest output line {n} with needlework\n" for n in range(400))
    bodies = [
        _start("s-1"),
        event("s-1", 2, "tool/result", payload={"output": output}),
        event(
            "s-1", 3, "message/assistant", surface="assistant", payload={"text": "short needlework"}
        ),
    ]
    _apply(db, bodies)

    columns = [r[1] for r in _rows(db, "PRAGMA table_info(events)")]
    assert columns == [
        "id", "session_id", "seq", "event_id", "type", "surface", "time_ms", "stream_seq", "doc",
        "preview_key",
    ]  # fmt: skip
    [(doc, raw, text, preview), (small, small_raw, small_text, _)] = _rows(
        db,
        "SELECT doc, event_json(doc), event_text(doc, type), event_text(doc, type, 100)"
        " FROM events WHERE seq > 1 ORDER BY seq",
    )
    # A long event: its text's frame, then its JSON's (the text as its dictionary).
    assert isinstance(doc, bytes) and doc[0] == 1 and doc[5:9] == ZSTD_MAGIC
    assert raw.encode() == bodies[1]  # byte for byte as published
    assert len(doc) < len(output) / 8  # compressed, the text once
    assert text == output and preview == output[:100]
    # A short one: its JSON's frame alone, the text derived from it where it is read.
    assert small.startswith(ZSTD_MAGIC) and small_raw.encode() == bodies[2]
    assert small_text == "short needlework"
    # The text is nowhere in the file as text: no second copy in any table.
    plain = sqlite3.connect(db)
    try:
        for (table,) in plain.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in plain.execute(f"SELECT * FROM {table}"):
                assert not any(isinstance(v, str) and "needlework" in v for v in row), table
    finally:
        plain.close()
    assert _matches(db, "needlework")


def test_frames_use_a_dictionary_trained_on_the_store_once_it_has_seen_enough(
    tmp_path: Path,
) -> None:
    db = tmp_path / "index.sqlite"
    bodies = archive_corpus(sessions=8, events=400)
    _apply(db, bodies)

    [(dict_id, size)] = _rows(db, "SELECT id, length(data) FROM zdict")
    assert dict_id == 1 and 0 < size <= event_codec.DICT_BYTES
    frames = _rows(db, "SELECT doc FROM events ORDER BY id")
    named = [_frame_dict(d) for (d,) in frames]
    assert named[0] == 0 and named[-1] == 1  # the first events before it was trained
    assert set(named) == {0, 1}
    assert _stored(db) == _published(bodies)


def test_a_long_text_cut_at_the_store_s_cap_is_read_whole_from_the_json(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    output = "".join(f"line {n} of a long build log\n" for n in range(4000))  # > 64 KiB
    _apply(db, [_start("s-1"), event("s-1", 2, "tool/result", payload={"output": output})])
    [(doc, stored, whole, short)] = _rows(
        db,
        "SELECT doc, event_text(doc, type), event_text(doc, type, 1048576),"
        " event_text(doc, type, 1000) FROM events WHERE seq = 2",
    )
    assert doc[0] == 2  # the stored text was cut at the writer's cap
    assert stored == output[: 64 * 1024] and short == output[:1000]
    assert whole == output  # past the cap: derived from the JSON
    assert _matches(db, "4000") == set() and _matches(db, "3999")  # indexed whole


def test_a_long_text_of_wide_characters_cut_at_the_cap_is_indexed_whole(tmp_path: Path) -> None:
    """The cap counts bytes: 30,000 CJK characters are 90,000 of them, so the stored text is
    cut near its 21,845th character, far below the cap in characters. The word past the
    cut is indexed all the same (the whole event's text)."""
    db = tmp_path / "index.sqlite"
    output = "构建日志没有发现任何错误" * 2500 + " 向量索引 " + "完成" * 10
    _apply(db, [_start("s-1"), event("s-1", 2, "tool/result", payload={"output": output})])
    [(stored,)] = _rows(db, "SELECT event_text(doc, type) FROM events WHERE seq = 2")
    assert len(stored.encode("utf-8")) <= 64 * 1024 < len(output.encode("utf-8"))
    assert "向量索引" not in stored
    assert _matches(db, "向量索引")


def test_base64_is_stored_but_never_indexed(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    image = _image(random.Random(1), 6000)
    wrapped = base64.encodebytes(random.Random(2).randbytes(900)).decode("ascii")
    bodies = [
        _start("s-1"),
        event("s-1", 2, "tool/result", payload={"output": f"screenshot taken\n{image}\ndone"}),
        event("s-1", 3, "message/user", payload={"text": f"my cert:\n{wrapped}end of cert"}),
    ]
    _apply(db, bodies)

    [(text2,), (text3,)] = _rows(db, "SELECT event_text(doc, type) FROM events WHERE seq > 1")
    assert "screenshot taken" in text2 and "done" in text2 and image[:40] not in text2
    assert "my cert" in text3 and "end of cert" in text3 and wrapped[:40] not in text3
    assert _stored(db) == _published(bodies)  # the JSON keeps them, byte for byte
    assert _matches(db, "screenshot") and _matches(db, "cert")
    assert not _matches(db, image[:30])
    # Not one of the terms either would have made is in the index (hundreds before).
    assert [t for t in _terms_held(db, image) if len(t) > 16] == []
    assert [t for t in _terms_held(db, wrapped) if len(t) > 16] == []


def _terms_held(db: Path, text: str) -> list[str]:
    """The index terms ``text`` alone would make that the index holds."""
    key = workspace_key(schema.workspace_token(CWD))
    exact, derived = analysis.index_fields(text, key)
    view = SearchIndexReader(search_index_path(db)).view()
    held = [t for t in exact.split() if view.searcher.doc_freq("ex", t)]
    return held + [t for t in derived.split() if view.searcher.doc_freq("nm", t)]


def test_nothing_is_lost_across_a_restart_and_a_rebuild(tmp_path: Path) -> None:
    """Every event of a generated archive reads back byte for byte equal to what was
    published: after the writer is closed and opened again (and takes more), and in a store
    rebuilt from the same messages, whose rows and search results are the same."""
    bodies = archive_corpus(sessions=10, events=450, seed=7)
    db = tmp_path / "index.sqlite"
    _apply(db, bodies[:1500])
    assert _stored(db) == _published(bodies[:1500])
    assert _rows(db, "SELECT count(*) FROM zdict") == [(0,)]  # not yet trained
    core = _open(db)  # a restart: the packer goes on with the stored dictionary
    try:
        tail = _items(bodies)[1500:]
        assert not core.apply(core.prepare(tail)).rejected
        core.catch_up_search()
    finally:
        core.close()
    assert _stored(db) == _published(bodies)
    assert _rows(db, "SELECT count(*) FROM zdict") == [(1,)]

    rebuilt = tmp_path / "rebuilt.sqlite"
    _apply(rebuilt, bodies)
    assert _stored(rebuilt) == _published(bodies)
    for words in ("fixture retry", "héllo", "日本語", "step 17"):
        assert _matches(db, words) == _matches(rebuilt, words), words


def _as_schema_5(db: Path, *, purged_tail: int) -> None:
    """Turn a current store into the layout of schema 5 (the JSON and the searchable text
    as text), with ids given past the last row (a purged tail), as an old worker left it."""
    events_as_text(db)
    conn = connect(db)
    conn.isolation_level = None
    try:
        conn.execute("UPDATE meta SET value = 5 WHERE key = 'schema_version'")
        conn.execute(
            "UPDATE sqlite_sequence SET seq = seq + ? WHERE name = 'events'", (purged_tail,)
        )
    finally:
        conn.close()


def test_a_schema_5_store_is_migrated_in_place(tmp_path: Path) -> None:
    bodies = archive_corpus(sessions=4, events=300, seed=3)
    db = tmp_path / "index.sqlite"
    _apply(db, bodies)
    before = _matches(db, "fixture retry")
    [(last_id,)] = _rows(db, "SELECT seq FROM sqlite_sequence WHERE name = 'events'")
    _as_schema_5(db, purged_tail=5)

    core = _open(db)  # the migration runs here
    core.close()
    assert _rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (schema.SCHEMA_VERSION,)
    ]
    assert "raw_json" not in [r[1] for r in _rows(db, "PRAGMA table_info(events)")]
    assert _rows(db, "SELECT id FROM zdict") == [(1,)]
    assert _stored(db) == _published(bodies)
    assert any(_preview_keys(db).values())  # written by the migration, each checked
    # Ids are never reused: the AUTOINCREMENT record survives the table's rewrite.
    assert _rows(db, "SELECT seq FROM sqlite_sequence WHERE name = 'events'") == [(last_id + 5,)]
    assert _matches(db, "fixture retry") == before


def _preview_keys(db: Path) -> dict[tuple[str, int], int | None]:
    """Each event's ``preview_key``, checked against the digest of the preview source its
    row gives back (what ``search/copies.py`` compares instead of the texts)."""
    rows = _rows(
        db,
        "SELECT session_id, seq, surface, preview_key,"
        " substr(event_text(doc, type, ?), 1, ?) FROM events",
        event_codec.PREVIEW_SOURCE_BYTES,
        event_codec.PREVIEW_SOURCE_CHARS,
    )
    keys: dict[tuple[str, int], int | None] = {}
    for session_id, seq, surface, key, source in rows:
        if surface in ("user", "assistant"):
            digest = hashlib.blake2b(source.encode("utf-8"), digest_size=8).digest()
            assert key == int.from_bytes(digest, "little", signed=True), (session_id, seq)
        else:
            assert key is None, (session_id, seq)
        keys[(session_id, seq)] = key
    return keys


def test_a_conversation_event_s_preview_key_is_the_digest_of_its_preview_source(
    tmp_path: Path,
) -> None:
    db = tmp_path / "index.sqlite"
    long_prose = " ".join(f"paragraph {n} héllo 日本語 of a long answer" for n in range(900))
    bodies = [
        *archive_corpus(sessions=3, events=120, seed=5),
        _start("s-long"),
        # Long events are stored split (their text's frame first): the key must be the
        # digest of the same cut a short event's derived text gives.
        event("s-long", 2, "message/user", surface="user", payload={"text": long_prose}),
        event("s-long", 3, "message/assistant", surface="assistant", payload={"text": "x" * 5000}),
        event("s-long", 4, "message/assistant", surface="assistant", payload={"text": ""}),
    ]
    _apply(db, bodies)
    keys = _preview_keys(db)
    assert keys[("s-long", 2)] is not None and keys[("s-long", 2)] != keys[("s-long", 3)]
    assert sum(k is not None for k in keys.values()) > 150


def test_a_frame_naming_a_missing_dictionary_is_an_error_not_garbage(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    _apply(db, archive_corpus(sessions=8, events=400))
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM zdict")
    conn.commit()
    conn.close()
    try:
        _rows(db, "SELECT event_json(doc) FROM events ORDER BY id DESC LIMIT 1")
    except sqlite3.OperationalError as exc:
        assert "user-defined function raised exception" in str(exc)
    else:
        raise AssertionError("a frame without its dictionary was read")


_PIECES = st.sampled_from(
    [
        "plain words here ",
        "日本語のテキスト ",
        base64.b64encode(bytes(range(256)) * 3).decode("ascii") + " ",
        base64.encodebytes(bytes(range(200)) * 2).decode("ascii"),
        "data:image/png;base64," + base64.b64encode(bytes(range(255, -1, -1)) * 2).decode() + " ",
        "x" * 300 + " ",
        "end\n",
    ]
)


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(_PIECES, min_size=1, max_size=60), cap=st.integers(1, 6000))
def test_a_long_string_scanned_by_its_prefix_gives_the_whole_scan_s_text(
    pieces: list[str], cap: int
) -> None:
    """Cutting a long string's blob scan short never changes the text kept."""
    text = "".join(pieces)
    whole = without_blobs(text).encode("utf-8")[:cap].decode("utf-8", "ignore")
    assert searchable_text({"output": text}, cap) == whole


async def test_a_window_s_events_decoded_in_python_read_as_the_sql_functions_give_them(
    tmp_path: Path,
) -> None:
    """``read_event`` decodes each row's doc in Python (one call a row, not two SQL
    function calls): its JSON and previews are those of ``event_json`` and ``EVENT_COLS``."""
    db = tmp_path / "index.sqlite"
    bodies = archive_corpus(sessions=2, events=60, seed=9)
    bodies.append(
        event("s-arch-1", 61, "message/user", surface="user", payload={"text": "日本語 " * 900})
    )
    _apply(db, bodies)
    expected = {
        seq: (raw, results.preview(source))
        for seq, raw, source in _rows(
            db,
            "SELECT seq, event_json(doc), substr(event_text(doc, type, ?), 1, ?) FROM events"
            " WHERE session_id = 's-arch-1'",
            event_codec.PREVIEW_SOURCE_BYTES,
            event_codec.PREVIEW_SOURCE_CHARS,
        )
    }
    store = await SqliteSessionStore.open(db, readers=1)
    try:
        window = await store.read_event(
            "s-arch-1", 40, before=39, after=21, signal=ExecutionSignal()
        )
    finally:
        await store.close()
    assert window is not None and window.target is not None
    read = [window.target, *window.before, *window.after]
    assert len(read) == 61
    for stored in read:
        assert (stored.raw_json, stored.summary.preview) == expected[stored.summary.seq]


def _event_indexes(db: Path) -> set[str]:
    return {
        n
        for (n,) in _rows(
            db, "SELECT name FROM sqlite_master WHERE tbl_name = 'events' AND type = 'index'"
        )
    }


def _plan(db: Path, sql: str, *args: object) -> str:
    return " / ".join(str(r[3]) for r in _rows(db, f"EXPLAIN QUERY PLAN {sql}", *args))


def test_the_events_indexes_are_the_ones_the_reads_use(tmp_path: Path) -> None:
    """Besides (session_id, seq), an event's type is indexed only where a read asks for
    it by type: a session's last step (the request path) and its user messages before an
    event (the search index's first prompt), each a partial index of that type's rows
    (the index of every row's type was 7% of the store, 2% of these two)."""
    db = tmp_path / "index.sqlite"
    bodies = archive_corpus(sessions=2, events=60, seed=5)
    bodies += [event("s-arch-0", 61, "step/start", surface="system", payload={})]
    _apply(db, bodies)
    assert _event_indexes(db) == {"sqlite_autoindex_events_1", "events_user", "events_step"}
    latest = sql.LATEST_SEQ_OF_TYPE["step/start"]
    assert "COVERING INDEX events_step" in _plan(db, latest, "s-arch-0")
    assert _rows(db, latest, "s-arch-0") == [(61,)]
    before = tables.SEARCH_EVENTS_AFTER.replace(":after", "0").replace(":limit", "10")
    assert "COVERING INDEX events_user" in _plan(db, before.replace(":prompts", "4"))
    users = [
        s
        for (s,) in _rows(
            db,
            "SELECT seq FROM events WHERE session_id = 's-arch-1'"
            " AND type = 'message/user' ORDER BY seq",
        )
    ]
    generic = sql.LATEST_SEQ_OF_TYPE[None]
    assert _rows(db, generic, "s-arch-1", "message/user") == [(users[-1],)]
    assert _rows(db, generic, "s-arch-1", "session/title") == [(None,)]


def test_a_schema_6_store_is_migrated_in_place(tmp_path: Path) -> None:
    bodies = archive_corpus(sessions=4, events=300, seed=9)
    db = tmp_path / "index.sqlite"
    _apply(db, bodies)
    before = _matches(db, "fixture retry")
    conn = connect(db)
    conn.isolation_level = None
    try:  # the layout of schema 6: one index of every event's type
        conn.execute("DROP INDEX events_user")
        conn.execute("DROP INDEX events_step")
        conn.execute("CREATE INDEX events_session_type ON events (session_id, type, seq)")
        conn.execute("UPDATE meta SET value = 6 WHERE key = 'schema_version'")
    finally:
        conn.close()
    size = db.stat().st_size

    _open(db).close()  # the migration runs here
    assert _rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [(7,)]
    assert _event_indexes(db) == {"sqlite_autoindex_events_1", "events_user", "events_step"}
    assert _rows(db, "PRAGMA freelist_count") == [(0,)]  # the old index's pages given back
    assert db.stat().st_size < size
    assert _stored(db) == _published(bodies)
    assert _matches(db, "fixture retry") == before
