"""The SQLite schema of the index, shared by the writer and the readers.

One file, WAL mode: the store of record for everything the tools read. Full-text search
runs on a separate search index derived from ``events`` (``worker.store.search.search_follower``),
which follows ``events.id`` (``AUTOINCREMENT``: ids are never reused, even after a purge)
and ``search_deletions``. Each session carries its workspace token ``ws`` (derived from
the cwd); the exact ``sessions.cwd = ?`` comparison in SQL stays the authority.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import orjson

from contracts.harness import first_prompt
from worker.store import event_codec, tables
from worker.store.errors import SchemaVersionError as SchemaVersionError

if TYPE_CHECKING:
    from worker.store.database import Database

# The one place the index layout's version lives. Bump it with every layout change and add
# the step from the version before to ``MIGRATIONS`` when one can be done in place; without
# a step, an index of the older version is rebuilt from the stream (``version_action``).
SCHEMA_VERSION: Final = 7

# A session's first few message/user texts, each cut, kept with its header (tables.py
# holds the count: the search index reads it too).
TITLE_PROMPTS: Final = tables.TITLE_PROMPTS
TITLE_PROMPT_CHARS: Final = 400

# A partial index per type a read asks for by type: (session_id, seq) of that type's rows,
# with the type (the reads name it: covering).
_TYPE_INDEXES_DDL: Final = "\n".join(
    f"CREATE INDEX IF NOT EXISTS {name} ON events (session_id, seq, type) WHERE type = '{kind}';"
    for kind, name in tables.TYPE_INDEXES.items()
)

# version -> the statements that take a file of that version to the next one, or the
# function that does (a step that needs Python: packing every event).
MIGRATIONS: Final[dict[int, str | Callable[[Database], None]]] = {
    1: """
CREATE TABLE IF NOT EXISTS deadletters (
    stream_seq INTEGER PRIMARY KEY,
    reason     TEXT NOT NULL,
    kind       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS deadletters_kind ON deadletters (kind);
UPDATE meta SET value = 2 WHERE key = 'schema_version';
""",
    # 3: full-text search moved to the search index beside the file
    # (worker.store.search.search_follower): no events_fts; events.id AUTOINCREMENT (ids never
    # reused, which the search index relies on: the table is rebuilt with its rows);
    # search_deletions; index_uid.
    2: """
DROP TABLE IF EXISTS events_fts;
DROP INDEX IF EXISTS events_scope;
CREATE TABLE events_v3 (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    event_id   TEXT NOT NULL,
    type       TEXT NOT NULL,
    surface    TEXT NOT NULL,
    time_ms    INTEGER NOT NULL,
    stream_seq INTEGER NOT NULL,
    ws         TEXT NOT NULL,
    body       TEXT NOT NULL,
    raw_json   TEXT NOT NULL,
    UNIQUE (session_id, seq)
);
INSERT INTO events_v3 (id, session_id, seq, event_id, type, surface, time_ms, stream_seq,
                       ws, body, raw_json)
    SELECT id, session_id, seq, event_id, type, surface, time_ms, stream_seq, ws, body,
           raw_json FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;
CREATE INDEX IF NOT EXISTS events_session_type ON events (session_id, type, seq);
CREATE TABLE IF NOT EXISTS search_deletions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('index_uid', random() & 4611686018427387903);
UPDATE meta SET value = 3 WHERE key = 'schema_version';
""",
    # 4: events.ws dropped (the search index takes a session's workspace from sessions.ws):
    # 23 bytes per event, 2.7% of the file.
    3: """
ALTER TABLE events DROP COLUMN ws;
UPDATE meta SET value = 4 WHERE key = 'schema_version';
""",
    # 5: sessions.prompts (the first message/user texts, for the tools' title fallback),
    # filled from the events already held.
    4: f"""
ALTER TABLE sessions ADD COLUMN prompts TEXT;
UPDATE sessions SET prompts = (SELECT nullif(json_group_array(p), '[]') FROM (
    SELECT substr(json_extract(e.raw_json, '$.payload.text'), 1, {TITLE_PROMPT_CHARS}) AS p
    FROM events e WHERE e.session_id = sessions.session_id AND e.type = 'message/user'
    ORDER BY e.seq LIMIT {TITLE_PROMPTS}) WHERE typeof(p) = 'text');
UPDATE meta SET value = 5 WHERE key = 'schema_version';
""",
    # 6 (issue 41): the event's JSON stored once, compressed (``events.doc``, a zstd frame
    # with the store's dictionary, ``zdict``); ``body`` and ``raw_json`` dropped (the text
    # was stored twice, uncompressed). The searchable text is derived where it is read.
    5: lambda conn: _pack_events(conn),
    # 7 (issue 41): the index of every event's type (7% of the store) replaced by partial
    # indexes of the types a read asks for (``tables.TYPE_INDEXES``: 2% of it).
    6: f"""
DROP INDEX IF EXISTS events_session_type;
{_TYPE_INDEXES_DDL}
UPDATE meta SET value = 7 WHERE key = 'schema_version';
""",
}

# Events sampled to train the dictionary of a migrated store.
_MIGRATION_SAMPLES: Final = 5000


def _pack_events(conn: Database) -> None:
    """Step 5 -> 6: every event's JSON into one frame, in id order, ids and the
    ``AUTOINCREMENT`` record kept (ids are never reused)."""
    cap = conn.value(tables.META_VALUE, (event_codec.TEXT_CAP_KEY,))
    packer = event_codec.EventPacker(
        text_cap_bytes=int(cap) if cap else event_codec.DEFAULT_TEXT_CAP_BYTES
    )
    conn.run(event_codec.ZDICT_DDL)
    # Spread over the whole history, not its first days.
    every = max(1, int(conn.value("SELECT count(*) FROM events")) // _MIGRATION_SAMPLES)
    sample, _ = conn.rows(
        "SELECT CAST(raw_json AS BLOB) AS raw FROM events"
        f" WHERE id % ? = 0 ORDER BY id LIMIT {_MIGRATION_SAMPLES}",
        (every,),
    )
    if len(sample) >= event_codec.TRAIN_MIN_SAMPLES // 4:
        packer.train_from([bytes(r[0]) for r in sample], dict_id=1)
    packer.store(conn)
    conn.define_function("event_pack", 2, packer.pack)
    conn.define_function("event_preview_key", 3, event_codec.preview_key)
    last = conn.value("SELECT seq FROM sqlite_sequence WHERE name = 'events'")
    for statement in (
        _EVENTS_V6.replace("CREATE TABLE IF NOT EXISTS events", "CREATE TABLE events_v6"),
        "INSERT INTO events_v6 (id, session_id, seq, event_id, type, surface, time_ms,"
        " stream_seq, doc, preview_key) SELECT id, session_id, seq, event_id, type, surface,"
        " time_ms, stream_seq, event_pack(raw_json, type),"
        " event_preview_key(raw_json, type, surface) FROM events ORDER BY id",
        "DROP TABLE events",
        "ALTER TABLE events_v6 RENAME TO events",
        "CREATE INDEX IF NOT EXISTS events_session_type ON events (session_id, type, seq)",
    ):
        conn.run(statement)
    if last is not None:
        conn.run("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'events'", (int(last),))
    conn.run("UPDATE meta SET value = 6 WHERE key = 'schema_version'")


# The events table: the event's JSON once, as one zstd frame (``event_codec``), and for a
# conversation event a digest of its preview's source (``event_codec.preview_key``).
_EVENTS_V6: Final = """
CREATE TABLE IF NOT EXISTS events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    event_id   TEXT NOT NULL,
    type       TEXT NOT NULL,
    surface    TEXT NOT NULL,
    time_ms    INTEGER NOT NULL,
    stream_seq INTEGER NOT NULL,
    doc        BLOB NOT NULL,
    preview_key INTEGER,
    UNIQUE (session_id, seq)
)"""


def version_action(found: int, path: str) -> str:
    """What to do with an index file of schema ``found``: ``"current"``, ``"migrate"`` (every
    step to the current version exists) or ``"rebuild"``; a newer file raises."""
    if found == SCHEMA_VERSION:
        return "current"
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"index {path} has schema version {found}, newer than this worker's"
            f" {SCHEMA_VERSION}: run a newer sessionquery on it, or give this one another"
            " --db (the file is left untouched)"
        )
    if all(v in MIGRATIONS for v in range(max(found, 1), SCHEMA_VERSION)) and found >= 1:
        return "migrate"
    return "rebuild"


def migrate(conn: Database) -> int:
    """Apply the in-place steps from the file's version to the current one, each in its
    own transaction; returns the version found."""
    found = read_version(conn)
    version = found
    while version < SCHEMA_VERSION:
        step = MIGRATIONS[version]
        with conn.transaction():
            if callable(step):
                step(conn)
            else:
                for statement in step.split(";"):
                    if statement.strip():
                        conn.run(statement)
        version += 1
    if found < 7 <= SCHEMA_VERSION:
        # The rewritten events table (6) and the dropped index (7) left their pages free:
        # give them back.
        conn.run("VACUUM")
    return found


def read_version_from(meta: dict[str, object]) -> int:
    value = meta.get("schema_version")
    return value if isinstance(value, int) else 0


def read_version(conn: Database) -> int:
    """The file's schema version; 0 for a file without one (no meta table or row)."""
    try:
        value = conn.value(tables.META_VALUE, ("schema_version",))
    except sqlite3.OperationalError:
        return 0
    return int(value or 0)


DDL: Final = f"""
-- value: an integer, or text for the stream identity (stream_name, stream_created,
-- index_id): SQLite keeps each value's own type.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT OR IGNORE INTO meta (key, value) VALUES
    ('schema_version', {SCHEMA_VERSION}), ('stream_seq', 0), ('epoch', 1),
    -- Which store file a search index was built from (random, never reused).
    ('index_uid', random() & 4611686018427387903);

CREATE TABLE IF NOT EXISTS sessions (
    session_id        TEXT PRIMARY KEY,
    cwd               TEXT,
    ws                TEXT NOT NULL,
    parent_session_id TEXT,
    title             TEXT,
    -- JSON array of the first message/user texts (TITLE_PROMPTS, TITLE_PROMPT_CHARS each)
    prompts           TEXT,
    availability      TEXT NOT NULL DEFAULT 'live'
                      CHECK (availability IN ('live', 'persisted')),
    created_ms        INTEGER,
    updated_ms        INTEGER,
    last_seq          INTEGER NOT NULL DEFAULT 0,
    event_count       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_cwd ON sessions (cwd);
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions (parent_session_id);

{_EVENTS_V6};
{event_codec.ZDICT_DDL};
{_TYPE_INDEXES_DDL}
-- (session_id, seq) took the place of (session_id, replaced_seq).
CREATE TABLE IF NOT EXISTS replacements (
    session_id   TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    replaced_seq INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq, replaced_seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS replacements_back ON replacements (session_id, replaced_seq);

-- (session_id, seq) was derived from (cited_session_id, cited_seq).
CREATE TABLE IF NOT EXISTS citations (
    session_id       TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    cited_session_id TEXT NOT NULL,
    cited_seq        INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq, cited_session_id, cited_seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS citations_back ON citations (cited_session_id, cited_seq);

-- Sessions removed by purge, for the search index to delete in turn (it records the
-- highest id it applied).
CREATE TABLE IF NOT EXISTS search_deletions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL
);

-- Events the writer refused (also published on the dead-letter subject), in the same
-- transaction as the stream sequence: ``sessionquery status`` and ``deadletters`` read them.
CREATE TABLE IF NOT EXISTS deadletters (
    stream_seq INTEGER PRIMARY KEY,
    reason     TEXT NOT NULL,
    kind       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS deadletters_kind ON deadletters (kind);
"""


def workspace_token(cwd: str | None) -> str:
    """The workspace token of a cwd: derived from the cwd only, never from a query."""
    if cwd is None:
        return "wsnone"
    return "ws" + hashlib.sha256(cwd.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def define_functions(conn: Database) -> None:
    """SQL functions the reads use: ``first_prompt(prompts)``, the first prompt the user
    wrote of a ``sessions.prompts`` value (the title of a session nobody titled)."""
    conn.define_function("first_prompt", 1, _first_prompt)


def _first_prompt(prompts: object) -> str | None:
    if not isinstance(prompts, str):
        return None
    try:
        texts = orjson.loads(prompts)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(texts, list):
        return None
    return first_prompt(tuple(t for t in texts if isinstance(t, str)))


def create(conn: Database) -> None:
    conn.script(DDL)
