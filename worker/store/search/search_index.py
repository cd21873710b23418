"""The search index: a tantivy index derived from the SQLite store, partitioned by workspace.

Over 400 lines: the index's schema and the follower that fills it change together.

SQLite stays the store of record and the authority; this index only proposes candidate
event ids, which the store then checks in SQL (workspace, snapshot, filters) in the same
read transaction that produces the payload.

**Partitioning.** Every token is prefixed with its workspace's key (derived from the cwd,
never from a query), so a term's posting list holds one workspace's events only: a
workspace-scoped query reads its own workspace's postings, whatever the other workspaces
hold. A worker can hold any subset of workspaces in one index.

**Ranking statistics.** Every event also carries, in its derived field, markers of its own
workspace: the bare key (so the key's document frequency is the workspace's event count),
``<key>~t`` on a title or on the session's first prompt (what the session was about),
``<key>~c`` on a user or assistant message, ``<key>~l`` on a long one and ``<key>~s`` on a
short one (``ranking.LONG_WORDS``, ``SHORT_WORDS``); and a ``prior`` from its length.
``worker.store.search.ranking`` scores from these and from workspace-prefixed terms only, so no
statistic of another workspace enters a score.

**Exactly once.** The index follows the store's ``events`` table by id (ids only grow:
``AUTOINCREMENT``) and applies the store's ``search_deletions`` (written by purge in the
purge's own transaction). Each commit also stores, in one reserved document, the highest
event id and deletion id it covers and the store's stream sequence then, so after a crash
at any point the follower resumes from what the index really holds: nothing is lost or
doubled. An index of another version, or made from another store file (the store's
``index_uid``), is rebuilt from the store.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import structlog
import tantivy

from contracts.harness import first_prompt
from worker.store import tables
from worker.store.database import Database
from worker.store.event_codec import indexed_payload, payload_of
from worker.store.search import analysis, ranking
from worker.store.search.text import searchable_text

log = structlog.get_logger(__name__)

# 2: workspace markers and the length prior (ranking from the workspace's own statistics).
# 3 (issue 42): the first prompt's marker on that event alone, whatever the batches; words
# longer than analysis.MAX_TOKEN_CHARS indexed whole and by parts; the paragraphs of titles
# and first prompts hashed (``lead``, ``lp``) for the shared-prompt discount.
# 4 (issue 41): base64 runs (images, pasted certificates) left out of the indexed text
# (``search.text``): an index of version 3 holds their junk terms, and is rebuilt.
SEARCH_INDEX_VERSION: Final = 4
_VERSION_FILE: Final = "sessionquery-search.json"
_TOKENIZER: Final = "sq_whitespace"
# The reserved document holding the follower's position (ids never contain "~").
_META_SID: Final = "~meta"
# What one event contributes to the index at most: the whole event (events are at most
# 1 MiB by the ingest limit), unlike the store's 64 KiB searchable-text column.
INDEX_TEXT_CAP_BYTES: Final = 1 << 20
# Marker suffixes (word tokens never hold "~"): a title or first prompt, a conversation event.
TITLE_MARK: Final = "~t"
CONVERSATION_MARK: Final = "~c"
LONG_MARK: Final = "~l"
SHORT_MARK: Final = "~s"
LEAD_MARK: Final = "~p"  # in the ``lead`` field: a title or first prompt's paragraph, hashed
_CONVERSATION_SURFACES: Final = frozenset({"user", "assistant"})
TITLE_TYPE: Final = "session/title"
# How much of the first prompt must open the event's text to call it the first prompt.
_LEAD_CHARS: Final = 200
# The follower's ``body_cap`` is the store's text cap less this (``WriterCore.open``).
_BODY_CAP_MARGIN: Final = 4
_WRITER_HEAP_BYTES: Final = 32 * 2**20  # the default; the writer's limits set it
_FOLLOW_CHUNK: Final = 2000


def search_index_path(db_path: str | Path) -> Path:
    """The search index's directory, beside the store file."""
    return Path(f"{db_path}.search")


def workspace_key(ws: str) -> str:
    """The token prefix of a workspace, from the store's workspace token (cwd-derived)."""
    return ws[2:12] + ":"


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("id", indexed=True, fast=True)
    builder.add_text_field("sid", tokenizer_name="raw", fast=True)
    builder.add_text_field("ex", tokenizer_name=_TOKENIZER, index_option="position")
    builder.add_text_field("nm", tokenizer_name=_TOKENIZER, index_option="position")
    builder.add_text_field("type", tokenizer_name="raw")
    builder.add_text_field("surface", tokenizer_name="raw")
    builder.add_integer_field("time", indexed=True, fast=True)
    builder.add_unsigned_field("seq", indexed=True, fast=True)
    builder.add_unsigned_field("sseq", indexed=True, fast=True)
    # ranking.prior of the event's length, the engine's per-document score factor.
    builder.add_float_field("prior", fast=True)
    # A title or first prompt: ``<key>~p<hash>`` of each of its paragraphs, normalised
    # (``lead_paragraphs``), so the workspace's sessions sharing one are counted at query
    # time (``ranking.shared_bonus``); and each paragraph's derived tokens prefixed with its
    # hash, so a query can tell whether its words are in a shared paragraph.
    builder.add_text_field("lead", tokenizer_name="raw", fast=True)
    builder.add_text_field("lp", tokenizer_name=_TOKENIZER, index_option="position")
    # The reserved document's position fields.
    builder.add_unsigned_field("deleted", fast=True)
    builder.add_unsigned_field("uid", fast=True)
    return builder.build()


SCHEMA: Final = _schema()


def open_index(path: Path) -> tantivy.Index:
    index = tantivy.Index(SCHEMA, path=str(path), reuse=True)
    index.register_tokenizer(
        _TOKENIZER, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
    )
    return index


@dataclass(frozen=True, slots=True)
class Position:
    """What a commit of the search index covers."""

    event_id: int = 0  # every event with a smaller or equal id is indexed
    deletion_id: int = 0  # every search deletion with a smaller or equal id is applied
    stream_seq: int = 0  # the store's stream sequence when those were read
    uid: int = 0  # the store file it follows


def read_position(searcher: tantivy.Searcher) -> Position:
    query = tantivy.Query.term_query(SCHEMA, "sid", _META_SID)
    hits = searcher.search(query, 1, count=False).hits
    if not hits:
        return Position()
    address = [hits[0][1]]
    return Position(
        event_id=int(searcher.fast_field_values("id", address)[0] or 0),
        deletion_id=int(searcher.fast_field_values("deleted", address)[0] or 0),
        stream_seq=int(searcher.fast_field_values("sseq", address)[0] or 0),
        uid=int(searcher.fast_field_values("uid", address)[0] or 0),
    )


# -- the writer's side ---------------------------------------------------------------------


class SearchIndexWriter:
    """The follower that keeps the search index equal to the store. One per index; it runs
    wherever the store's single writer runs, on that writer's connection."""

    def __init__(
        self,
        path: Path,
        conn: Database,
        *,
        body_cap_bytes: int,
        commit_interval_s: float = 0.25,
        heap_bytes: int = _WRITER_HEAP_BYTES,
    ) -> None:
        self._path = path
        self._conn = conn
        self._body_cap = body_cap_bytes
        self._commit_interval = commit_interval_s
        self._heap_bytes = heap_bytes
        uid = _store_uid(conn)
        self._index = self._open_or_rebuild(uid)
        # None after a failed step: a tantivy writer whose worker thread failed (a full
        # disk) is dead for good ("An index writer was killed"), so the next step makes a
        # new one, which works again once there is room.
        self._writer: tantivy.IndexWriter | None = self._new_writer()
        self._index.config_reader("Manual")
        self._index.reload()
        committed = read_position(self._index.searcher())
        self._position = Position(
            committed.event_id, committed.deletion_id, committed.stream_seq, uid
        )
        self._committed = self._position
        self._progress = _Progress()
        self._dirty = committed.uid != uid  # a fresh index records its uid at once
        self._last_commit = time.monotonic()

    def _open_or_rebuild(self, uid: int) -> tantivy.Index:
        reason = _stale_reason(self._path, uid)
        if reason is not None:
            if self._path.exists():
                log.warning("rebuilding the search index", path=str(self._path), reason=reason)
                shutil.rmtree(self._path)
            self._path.mkdir(parents=True)
            (self._path / _VERSION_FILE).write_text(
                json.dumps({"version": SEARCH_INDEX_VERSION, "uid": uid})
            )
        return open_index(self._path)

    def _new_writer(self) -> tantivy.IndexWriter:
        return self._index.writer(heap_size=self._heap_bytes, num_threads=1)

    def _live_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self._new_writer()
        return self._writer

    @property
    def position(self) -> Position:
        return self._position

    @property
    def behind(self) -> bool:
        """Whether the store holds events or deletions the index has not taken yet."""
        found, at = self._conn.rows(tables.SEARCH_AHEAD)
        row, position = found[0], self._position
        return bool(
            row[at["event_id"]] > position.event_id
            or row[at["deletion_id"]] > position.deletion_id
            # messages that added no event still count
            or row[at["stream_seq"]] > position.stream_seq
        )

    @property
    def dirty(self) -> bool:
        return self._dirty

    def follow(self, max_events: int = _FOLLOW_CHUNK) -> int:
        """Take up to ``max_events`` new events (and every new deletion) from the store.
        Nothing is visible to searches before ``commit``. Returns the events added."""
        conn = self._conn
        writer = self._live_writer()
        stream_seq = int(conn.value(tables.META_VALUE, ("stream_seq",)))
        deletion_id = self._apply_deletions(writer)
        rows, at = conn.rows(
            tables.SEARCH_EVENTS_AFTER,
            {
                "after": self._position.event_id,
                "limit": max_events,
                "prompts": tables.TITLE_PROMPTS,
            },
        )
        values = at.getter(tables.SEARCH_DOCUMENT_NAMES)
        for row in rows:
            writer.add_document(_document(values(row), self._body_cap))
        last_id = int(rows[-1][at["id"]]) if rows else self._position.event_id
        if rows and len(rows) == max_events:
            # More may follow: the stream sequence covered is the last added event's.
            stream_seq = int(rows[-1][at["stream_seq"]])
        if (
            rows
            or deletion_id != self._position.deletion_id
            or stream_seq != self._position.stream_seq
        ):
            self._dirty = True
        if self._dirty:
            self._position = Position(last_id, deletion_id, stream_seq, self._position.uid)
        self._progress.step(len(rows), lambda: self._remaining(last_id))
        return len(rows)

    def _remaining(self, last_id: int) -> int:
        return int(self._conn.value("SELECT count(*) FROM events WHERE id > ?", (last_id,)))

    def _apply_deletions(self, writer: tantivy.IndexWriter) -> int:
        rows, at = self._conn.rows(tables.DELETIONS_AFTER, (self._position.deletion_id,))
        session_id = at["session_id"]
        for row in rows:
            writer.delete_documents_by_term("sid", row[session_id])
        return int(rows[-1][at["id"]]) if rows else self._position.deletion_id

    def commit(self) -> None:
        """Publish what was added, with the position it covers, atomically."""
        if not self._dirty:
            return
        position = self._position
        writer = self._live_writer()
        writer.delete_documents_by_term("sid", _META_SID)
        meta = tantivy.Document()
        meta.add_text("sid", _META_SID)
        meta.add_unsigned("id", position.event_id)
        meta.add_unsigned("deleted", position.deletion_id)
        meta.add_unsigned("sseq", position.stream_seq)
        meta.add_unsigned("uid", position.uid)
        writer.add_document(meta)
        writer.commit()
        self._committed = position
        self._dirty = False
        self._last_commit = time.monotonic()

    def reset(self) -> None:
        """Drop what was added since the last commit, and resume from that commit: a
        failed step is then re-done whole, never half twice. The writer goes with it
        (dropping it discards its uncommitted work and releases the index lock): one that
        failed may be dead, and a rollback does not always revive it."""
        self._writer = None
        self._position = self._committed
        self._dirty = True  # re-commits the position: harmless, and always consistent

    def commit_due(self) -> bool:
        return self._dirty and self.interval_passed()

    def interval_passed(self) -> bool:
        return self.since_commit() >= self._commit_interval

    def since_commit(self) -> float:
        """Seconds since the last commit."""
        return time.monotonic() - self._last_commit

    def catch_up(self) -> int:
        """Follow until nothing is left, committing as it goes. Returns events added."""
        total = 0
        while True:
            added = self.follow()
            total += added
            if added < _FOLLOW_CHUNK:
                break
            if self.commit_due():
                self.commit()
        self.commit()
        return total

    def close(self) -> None:
        """Commit what was taken, then release the index (its lock) for the next writer."""
        try:
            self.commit()
        except Exception:
            log.warning(
                "search index: last commit failed; it resumes from the one before", exc_info=True
            )
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.wait_merging_threads()


class _Progress:
    """Logs a long catch-up (a rebuild) every few seconds: done, left, rate, ETA."""

    _EVERY_S: Final = 5.0
    _BIG_STEP: Final = 1000  # steps this large mean a backlog, not live ingestion

    def __init__(self) -> None:
        self._started: float | None = None
        self._done = 0
        self._logged = 0.0

    def step(self, added: int, remaining: Callable[[], int]) -> None:
        now = time.monotonic()
        if self._started is None:
            if added < self._BIG_STEP:
                return
            self._started, self._logged = now, now
        self._done += added
        if added < self._BIG_STEP:
            log.info(
                "search index caught up",
                events=self._done,
                seconds=round(now - self._started, 1),
            )
            self._started, self._done = None, 0
            return
        if now - self._logged >= self._EVERY_S:
            left = remaining()
            rate = self._done / max(now - self._started, 1e-6)
            log.info(
                "search index catching up",
                events=self._done,
                remaining=left,
                events_per_s=round(rate),
                eta_s=round(left / rate) if rate else None,
            )
            self._logged = now


def _store_uid(conn: Database) -> int:
    return int(conn.value(tables.META_VALUE, ("index_uid",)) or 0)


def _stale_reason(path: Path, uid: int) -> str | None:
    version_file = path / _VERSION_FILE
    try:
        recorded = json.loads(version_file.read_text())
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError):
        return "unreadable version file"
    if not isinstance(recorded, dict) or recorded.get("version") != SEARCH_INDEX_VERSION:
        return f"version {recorded.get('version') if isinstance(recorded, dict) else '?'}"
    if recorded.get("uid") != uid:
        return "made from another store file"
    return None


def _document(row: Sequence[Any], body_cap: int) -> tantivy.Document:
    """The event's document. Its text is the store's searchable text (what excerpts read,
    cut at the store's cap), or, when that was cut (``body_cap``: the cap less a margin),
    the whole payload's, up to ``INDEX_TEXT_CAP_BYTES``."""
    (
        event_id,
        session_id,
        seq,
        kind,
        surface,
        time_ms,
        stream_seq,
        ws,
        raw,
        prompts,
        before,
    ) = row
    payload = payload_of(raw)
    body = searchable_text(indexed_payload(kind, payload), body_cap + _BODY_CAP_MARGIN)
    text = body
    # Cut at the cap in bytes: a character is at most 4 of them, so a shorter body was not.
    if 4 * len(body) >= body_cap and len(body.encode("utf-8")) >= body_cap:
        text = searchable_text(payload, INDEX_TEXT_CAP_BYTES)  # cut: the whole event
    key = workspace_key(ws)
    exact, derived = analysis.index_fields(text, key)
    words = exact.count(" ") + 1 if exact else 0
    doc = tantivy.Document()
    doc.add_unsigned("id", event_id)
    doc.add_text("sid", session_id)
    doc.add_text("ex", exact)
    lead = kind == TITLE_TYPE or _is_first_prompt(body, prompts, before)
    doc.add_text("nm", f"{derived} {_markers(key, lead, surface, words)}")
    if lead:
        scoped: list[str] = []
        for digest, paragraph in lead_paragraphs(key, body):
            doc.add_text("lead", key + LEAD_MARK + digest)
            scoped.append(analysis.index_fields(paragraph, f"{digest}:")[1])
        doc.add_text("lp", " ".join(p for p in scoped if p))
    doc.add_text("type", kind)
    doc.add_text("surface", surface)
    doc.add_integer("time", time_ms)
    doc.add_unsigned("seq", seq)
    doc.add_unsigned("sseq", stream_seq)
    doc.add_float("prior", ranking.prior(words))
    return doc


_PARAGRAPH: Final = re.compile(r"\n[ \t]*\n")
# Harness blocks inside a text (a reminder the harness appended to the prompt): not what
# the session was about, so not part of what makes two prompts the same.
_HARNESS_BLOCK: Final = re.compile(
    r"<(system-reminder|command-[a-z]+|local-command-[a-z]+|bash-[a-z]+|environment_context"
    r"|user_instructions|environment_details|task-notification)>.*?</\1>",
    re.DOTALL,
)


def lead_paragraphs(key: str, text: str) -> list[tuple[str, str]]:
    """(hash, paragraph) of each paragraph of a title or first prompt, each once: harness
    blocks removed, whitespace collapsed and case folded before hashing (with the
    workspace's key), so sessions opening with the same pasted template (a CI file, agent
    instructions, an ``/init`` prompt) share its hash whatever they ask after it."""
    found: dict[str, str] = {}
    for paragraph in _PARAGRAPH.split(_HARNESS_BLOCK.sub("\n\n", text)):
        plain = " ".join(paragraph.split()).casefold()
        if plain:
            digest = hashlib.blake2b(f"{key}\0{plain}".encode(), digest_size=8).hexdigest()
            found.setdefault(digest, paragraph)
    return list(found.items())


def _is_first_prompt(body: str, prompts: str | None, before: int | None) -> bool:
    """Whether a ``message/user`` event is its session's first prompt: the first of the
    session's user messages the user wrote (harness text skipped, as the tools' title
    fallback skips it), told by its place among them (``before``: the user messages of
    lower seq). Decided from that event and the ones before it only: the session's stored
    prompts may already hold later ones (the store is ahead of the index, or one batch
    brought them), and a later first prompt's words inside earlier harness text must not
    mark that text on one replica and not on another (issue 42)."""
    if not prompts or before is None:
        return False
    with contextlib.suppress(ValueError, TypeError):
        texts = [str(p) for p in orjson.loads(prompts)]
        if before >= len(texts):
            return False
        held = texts[: before + 1]  # this event's text is the last: its own and earlier
        at = next((n for n, text in enumerate(held) if first_prompt([text]) is not None), None)
        if at != before:
            return False
        # The place is the check; the text guards a user message the prompts skipped
        # (one without text), which would shift the places.
        first = first_prompt([held[at]]) or ""
        return first[:_LEAD_CHARS] in body[: 2 * _LEAD_CHARS + len(first)]
    return False


def _markers(key: str, lead: bool, surface: str, words: int) -> str:
    """The workspace's markers this event carries (after its words, so no phrase of the
    text runs into one)."""
    marks = [key]
    if lead:
        marks.append(key + TITLE_MARK)
    if surface in _CONVERSATION_SURFACES:
        marks.append(key + CONVERSATION_MARK)
    if words > ranking.LONG_WORDS:
        marks.append(key + LONG_MARK)
    elif words <= ranking.SHORT_WORDS:
        marks.append(key + SHORT_MARK)
    return " ".join(marks)
