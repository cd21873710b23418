"""The search semantics before issue 10, self-contained: the baseline of ``bench.relevance``.

A copy of our own code as of commit 0985d23b11c3, so the baseline survives the search
rewrite: the allow-list compiler of ``worker/store/fts_query.py`` (bare words ANDed,
"phrases", ``OR``, ``-exclude``; every term an FTS5 string literal), the searchable text of
``worker/store/search/text.py`` (every string value of the payload, capped at 64 KiB per event),
the workspace token of ``worker/store/files/schema.py``, and the cross-session query of
``SqliteSessionStore.search_sessions``: ``ws:"<token>" AND body:(<compiled>)`` over an FTS5
table with the ``unicode61 remove_diacritics 2`` tokenizer, ranked by
``bm25(events_fts, 0.0, 1.0)``, grouped by session with its best event, the exact cwd
checked, the caller's session excluded.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

TOKENIZER: Final = "unicode61 remove_diacritics 2"
TEXT_CAP_BYTES: Final = 64 * 1024
_UNSAFE: Final = re.compile(r"[\x00\ud800-\udfff]")
_ASCII_TOKEN_CHAR: Final = re.compile(r"[0-9A-Za-z]")


class InvalidQuery(ValueError):
    """The query has nothing to search for (today's search answers with an error)."""


# --- the compiler (fts_query.py) -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Term:
    text: str
    excluded: bool


class _Or:
    """The ``OR`` operator between two terms."""


_OR: Final = _Or()


def compile_query(text: str) -> str:
    items = [
        item
        for item in _lex(_UNSAFE.sub(" ", text))
        if isinstance(item, _Or) or has_tokens(item.text)
    ]
    groups, excluded = _group(items)
    if not groups:
        raise InvalidQuery(text)
    positive = " AND ".join(_group_expression(group) for group in groups)
    if not excluded:
        return positive
    return f"({positive})" + "".join(f" NOT {_literal(term)}" for term in excluded)


def _lex(text: str) -> list[_Term | _Or]:
    items: list[_Term | _Or] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        excluded = text[i] == "-"
        start = i + 1 if excluded else i
        if start < n and text[start] == '"':
            end = text.find('"', start + 1)
            end = n if end < 0 else end
            items.append(_Term(text[start + 1 : end], excluded))
            i = end + 1
            continue
        end = start
        while end < n and not text[end].isspace():
            end += 1
        word = text[start:end]
        if word == "OR" and not excluded:
            items.append(_OR)
        elif word != "AND" or excluded:
            items.append(_Term(word, excluded))
        i = end
    return items


def _group(items: list[_Term | _Or]) -> tuple[list[list[_Term]], list[_Term]]:
    groups: list[list[_Term]] = []
    excluded: list[_Term] = []
    after_positive = pending_or = False
    for item in items:
        if isinstance(item, _Or):
            pending_or = pending_or or after_positive
            after_positive = False
        elif item.excluded:
            excluded.append(item)
            after_positive = pending_or = False
        else:
            if pending_or and groups:
                groups[-1].append(item)
            else:
                groups.append([item])
            after_positive, pending_or = True, False
    return groups, excluded


def _group_expression(group: list[_Term]) -> str:
    if len(group) == 1:
        return _literal(group[0])
    return "(" + " OR ".join(_literal(term) for term in group) + ")"


def _literal(term: _Term) -> str:
    return '"' + term.text.replace('"', '""') + '"'


def has_tokens(term: str) -> bool:
    if _ASCII_TOKEN_CHAR.search(term) is not None:
        return True
    return not term.isascii() and _fts5_has_tokens(_UNSAFE.sub(" ", term))


_probe: sqlite3.Connection | None = None


@lru_cache(maxsize=8192)
def _fts5_has_tokens(term: str) -> bool:
    # Asked of FTS5 itself, so the answer agrees with the tokenizer exactly.
    global _probe
    if _probe is None:
        _probe = sqlite3.connect(":memory:", isolation_level=None)
        _probe.execute(f"CREATE VIRTUAL TABLE probe USING fts5(body, tokenize = '{TOKENIZER}')")
        _probe.execute("CREATE VIRTUAL TABLE probe_vocab USING fts5vocab(probe, 'row')")
    _probe.execute("INSERT INTO probe (rowid, body) VALUES (1, ?)", (term,))
    try:
        row = _probe.execute("SELECT count(*) FROM probe_vocab").fetchone()
    finally:
        _probe.execute("DELETE FROM probe WHERE rowid = 1")
    return bool(row[0])


# --- the indexed text and the workspace token (text.py, schema.py) -------------------------


def searchable_text(payload: object, cap_bytes: int = TEXT_CAP_BYTES) -> str:
    """Every string value of ``payload`` (keys excluded), one per line, cut to
    ``cap_bytes`` of UTF-8 on a character boundary."""
    parts: list[str] = []
    size = -1
    stack: list[object] = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            size += 1 + len(item.encode("utf-8"))
            if size >= cap_bytes:
                break
        elif isinstance(item, dict):
            stack.extend(reversed(item.values()))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    text = "\n".join(parts)
    if size <= cap_bytes:
        return text
    return text.encode("utf-8")[:cap_bytes].decode("utf-8", "ignore")


def workspace_token(cwd: str) -> str:
    return "ws" + hashlib.sha256(cwd.encode("utf-8", "surrogatepass")).hexdigest()[:20]


# --- the index and the query (sqlite.py) ---------------------------------------------------


class LegacyIndex:
    """Today's cross-session search over an in-memory copy of a corpus."""

    def __init__(self, events: Iterable[dict[str, Any]], *, limit: int = 100) -> None:
        self.limit = limit
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.executescript(
            f"""
            CREATE TABLE sessions (session_id TEXT PRIMARY KEY, cwd TEXT NOT NULL);
            CREATE TABLE events (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL);
            CREATE VIRTUAL TABLE events_fts USING fts5 (ws, body, tokenize = '{TOKENIZER}');
            """
        )
        cwd_of: dict[str, str] = {}
        self.conn.execute("BEGIN")
        for rowid, event in enumerate(events, start=1):
            sid = event["session_id"]
            if event["type"] == "session/start":
                cwd_of[sid] = event["payload"]["cwd"]
                self.conn.execute("INSERT INTO sessions VALUES (?, ?)", (sid, cwd_of[sid]))
            self.conn.execute("INSERT INTO events VALUES (?, ?)", (rowid, sid))
            self.conn.execute(
                "INSERT INTO events_fts (rowid, ws, body) VALUES (?, ?, ?)",
                (rowid, workspace_token(cwd_of[sid]), searchable_text(event["payload"])),
            )
        self.conn.execute("COMMIT")

    def search(self, query: str, *, cwd: str, exclude: str) -> list[str]:
        """Session ids, best first; an uncompilable query finds nothing."""
        try:
            compiled = compile_query(query)
        except InvalidQuery:
            return []
        match = f'ws:"{workspace_token(cwd)}" AND body:({compiled})'
        rows = self.conn.execute(
            """
            WITH m AS MATERIALIZED (
                SELECT e.session_id AS sid, bm25(events_fts, 0.0, 1.0) AS score
                FROM events_fts JOIN events e ON e.id = events_fts.rowid
                WHERE events_fts MATCH :match AND e.session_id != :exclude
            ),
            g AS (SELECT sid, min(score) AS score FROM m GROUP BY sid)
            SELECT g.sid FROM g JOIN sessions s ON s.session_id = g.sid
            WHERE s.cwd = :cwd
            ORDER BY g.score, g.sid
            LIMIT :limit
            """,
            {"match": match, "exclude": exclude, "cwd": cwd, "limit": self.limit},
        ).fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        self.conn.close()
