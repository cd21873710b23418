"""The named statements of the index file's and the vector file's tables, table by table,
for every user outside the request path (the writer, the search index and semantic
followers, the checks, the operator commands' reports), and the column names the request
path reads a header and an event by. The request path's reads, joins of several tables,
are in ``sql.py``; the batch's inserts are the writer's (``index/writer_core.py``).

A statement read by ``Database.rows`` names each column it is read by (``AS``): SQLite
leaves a result column's name unspecified without one. A statement read by
``Database.value`` selects one column.
"""

from __future__ import annotations

from typing import Final

# A session's first few message/user texts, kept with its header: the tools derive the
# title of a session without one from them (the first the user wrote, harness text
# skipped: a presentation rule, so the store keeps them as they came), and the search
# index marks the first prompt among them.
TITLE_PROMPTS: Final = 4

# -- sessions and events as the request path reads them (``sql`` selects them) ------------

# A session's header, in ``SessionHeader``'s field order.
HEADER_NAMES: Final = (
    "session_id",
    "cwd",
    "parent_session_id",
    "availability",
    "created_ms",
    "updated_ms",
    "last_seq",
    "event_count",
)
# An event's summary, in ``EventSummary``'s field order; its session id is named apart from
# the header's.
EVENT_NAMES: Final = (
    "event_session_id",
    "seq",
    "event_id",
    "type",
    "surface",
    "time_ms",
    "body_start",
)

# -- meta (key, value): the stream identity, sequence, epoch, index ids -------------------

META_VALUE: Final = "SELECT value FROM meta WHERE key = ?"
META_ALL: Final = "SELECT key AS key, value AS value FROM meta"
META_PUT: Final = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"
META_PUT_NEW: Final = "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)"
META_SET: Final = "UPDATE meta SET value = ? WHERE key = ?"
META_NEXT_EPOCH: Final = "UPDATE meta SET value = value + 1 WHERE key = 'epoch'"

# -- sqlite_master ------------------------------------------------------------------------

TABLE_COUNT: Final = "SELECT count(*) FROM sqlite_master"
TABLE_EXISTS: Final = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"

# -- search_deletions (id, session_id): purged sessions, for the indexes that follow ------

DELETIONS_AFTER: Final = (
    "SELECT id AS id, session_id AS session_id FROM search_deletions WHERE id > ? ORDER BY id"
)

# -- events -------------------------------------------------------------------------------

# The event types a read asks for by type, each with a partial index of its rows
# (``schema``): a session's last step (the request path's ``latest_seq_of_type``) and its
# user messages before an event (``SEARCH_EVENTS_AFTER``'s first prompt). A read of
# another type walks the session's events by (session_id, seq).
TYPE_INDEXES: Final = {"message/user": "events_user", "step/start": "events_step"}

EVENT_IDS: Final = "SELECT id AS id FROM events"
NEWEST_EVENT_ID: Final = "SELECT coalesce(max(id), 0) FROM events"
EVENTS_IN_ORDER: Final = (
    "SELECT session_id AS session_id, seq AS seq, event_json(doc) AS raw_json FROM events"
    " ORDER BY session_id, seq"
)

# -- events as the search index takes them (``search_follower.SearchIndexWriter``) -------

# The events after ``:after``, each with its session's workspace token and, on a user
# message, the session's first prompts and how many user messages came before it (at most
# ``:prompts``, read from the index alone); the event's JSON, from which the follower
# derives its text; and the JSON of the event it answers (its context, issue 42): of an
# assistant message the last user message before it, of a user message the last message
# before it, of a tool result the call it cites in its session. Each is read from the
# session's own order (seq), never from what else the batch held: every event of lower
# seq is stored before it (seqs are contiguous), so every layout finds the same one.
_SEARCH_EVENTS_AFTER: Final = """
SELECT q.*, c.type AS context_type, event_json(c.doc) AS context_json FROM (
    SELECT e.id AS id, e.session_id AS session_id, e.seq AS seq, e.type AS type,
       e.surface AS surface, e.time_ms AS time_ms, e.stream_seq AS stream_seq, s.ws AS ws,
       {json},
       CASE WHEN e.type = 'message/user' THEN s.prompts END AS prompts,
       CASE WHEN e.type = 'message/user' AND s.prompts IS NOT NULL THEN (
           SELECT count(*) FROM (
               SELECT 1 FROM events p
               WHERE p.session_id = e.session_id AND p.type = 'message/user' AND p.seq < e.seq
               LIMIT :prompts))
       END AS before,
       CASE e.type
           WHEN 'message/assistant' THEN (
               SELECT p.seq FROM events p
               WHERE p.session_id = e.session_id AND p.type = 'message/user' AND p.seq < e.seq
               ORDER BY p.seq DESC LIMIT 1)
           WHEN 'message/user' THEN nullif(max(
               coalesce((SELECT p.seq FROM events p WHERE p.session_id = e.session_id
                   AND p.type = 'message/user' AND p.seq < e.seq
                   ORDER BY p.seq DESC LIMIT 1), 0),
               coalesce((SELECT p.seq FROM events p WHERE p.session_id = e.session_id
                   AND p.type = 'message/assistant' AND p.seq < e.seq
                   ORDER BY p.seq DESC LIMIT 1), 0)), 0)
           WHEN 'tool/result' THEN (
               SELECT t.cited_seq FROM citations t JOIN events p
                   ON p.session_id = t.cited_session_id AND p.seq = t.cited_seq
               WHERE t.session_id = e.session_id AND t.seq = e.seq
                   AND t.cited_session_id = e.session_id AND p.type = 'tool/call'
               ORDER BY t.cited_seq LIMIT 1)
       END AS context_seq
    FROM events e JOIN sessions s ON s.session_id = e.session_id
    WHERE e.id > :after ORDER BY e.id LIMIT :limit
) q LEFT JOIN events c ON c.session_id = q.session_id AND c.seq = q.context_seq
ORDER BY q.id
"""
SEARCH_EVENTS_AFTER: Final = _SEARCH_EVENTS_AFTER.format(json="event_json(e.doc) AS raw_json")
# The follower's: the stored ``doc`` in place of the JSON, decoded only for the events whose
# text the writer did not hand it (``SearchIndexWriter.hint``).
SEARCH_DOCS_AFTER: Final = _SEARCH_EVENTS_AFTER.format(json="e.doc AS doc")
# The columns ``search_schema.event_document`` takes, in its order.
SEARCH_DOCUMENT_NAMES: Final = (
    "id",
    "session_id",
    "seq",
    "type",
    "surface",
    "time_ms",
    "stream_seq",
    "ws",
    "raw_json",
    "prompts",
    "before",
    "context_type",
    "context_json",
)
# ``SEARCH_DOCS_AFTER``'s columns: the same, the stored ``doc`` in the JSON's place.
SEARCH_DOC_NAMES: Final = tuple("doc" if n == "raw_json" else n for n in SEARCH_DOCUMENT_NAMES)
# How far the store is past a search index position (events, deletions, stream sequence).
SEARCH_AHEAD: Final = (
    "SELECT (SELECT coalesce(max(id), 0) FROM events) AS event_id,"
    " (SELECT coalesce(max(id), 0) FROM search_deletions) AS deletion_id,"
    " (SELECT value FROM meta WHERE key = 'stream_seq') AS stream_seq"
)

# -- deadletters (stream_seq, reason, kind) -----------------------------------------------

DEAD_LETTERS_BY_KIND: Final = (
    "SELECT kind AS kind, count(*) AS n FROM deadletters GROUP BY kind ORDER BY 2 DESC"
)
# The last ``?`` dead letters, oldest first.
# Events holding a redaction marker, with their session's workspace (``sessionquery
# secrets``): a scan of the stored JSON, an operator's occasional question.
REDACTED_EVENTS: Final = (
    "SELECT s.cwd AS cwd, e.session_id AS session_id, event_json(e.doc) AS raw_json"
    " FROM events e JOIN sessions s ON s.session_id = e.session_id"
    " WHERE instr(event_json(e.doc), '[redacted:') > 0"
)
DEAD_LETTERS_LAST: Final = (
    "SELECT * FROM (SELECT stream_seq AS stream_seq, kind AS kind, reason AS reason"
    " FROM deadletters ORDER BY stream_seq DESC LIMIT ?) ORDER BY stream_seq"
)
# Those after stream sequence ``?``, a thousand at most.
DEAD_LETTERS_AFTER: Final = (
    "SELECT stream_seq AS stream_seq, kind AS kind, reason AS reason FROM deadletters"
    " WHERE stream_seq > ? ORDER BY stream_seq LIMIT 1000"
)

# -- the vector file (``<db>.vectors``): vectors and its own meta --------------------------

VECTOR_SPACES: Final = "SELECT DISTINCT ws AS ws FROM vectors"
VECTORS_AFTER: Final = (
    "SELECT event_id AS event_id, session_id AS session_id, vec AS vec FROM vectors"
    " WHERE ws = ? AND event_id > ? ORDER BY event_id"
)
VECTOR_COUNT: Final = "SELECT count(*) FROM vectors"
VECTOR_PUT: Final = (
    "INSERT OR REPLACE INTO vectors (event_id, ws, session_id, vec, digest) VALUES (?, ?, ?, ?, ?)"
)
VECTORS_OF_SESSION_DROP: Final = "DELETE FROM vectors WHERE session_id = ?"
VECTORS_DROP: Final = "DELETE FROM vectors"
VECTOR_META_RESTART: Final = "DELETE FROM meta WHERE key IN ('through', 'deletions')"
# A rebuilt store's unchanged events reuse the vectors of their chunks (by digest).
VECTORS_KEPT_FOR_REUSE: Final = (
    "INSERT OR IGNORE INTO reusable (digest, vec)"
    " SELECT digest, vec FROM vectors WHERE digest IS NOT NULL"
)
REUSABLE_DROP: Final = "DELETE FROM reusable"
# The model table (key, value): the identity of the model the vectors came from, and the
# embedder's failure while it lasts.
MODEL_ALL: Final = "SELECT key AS key, value AS value FROM model"
MODEL_PUT: Final = "INSERT OR REPLACE INTO model (key, value) VALUES (?, ?)"

# -- checks -------------------------------------------------------------------------------

INTEGRITY_CHECK: Final = "PRAGMA integrity_check"
QUICK_CHECK: Final = "PRAGMA quick_check(5)"
