"""The search document: what an event becomes in the tantivy index, which is derived from the
SQLite store and partitioned by workspace; the index's schema, location and position document.

SQLite stays the store of record and the authority; this index only proposes candidate
event ids, which the store then checks in SQL (workspace, snapshot, filters) in the same
read transaction that produces the payload. ``search_follower`` keeps it up to date.

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
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import tantivy

from contracts.harness import first_prompt
from worker.store.event_codec import indexed_payload, payload_of
from worker.store.search import analysis, ranking
from worker.store.search.text import searchable_text

# 2: workspace markers and the length prior (ranking from the workspace's own statistics).
# 3 (issue 42): the first prompt's marker on that event alone, whatever the batches; words
# longer than analysis.MAX_TOKEN_CHARS indexed whole and by parts; the paragraphs of titles
# and first prompts hashed (``lead``, ``lp``) for the shared-prompt discount.
# 4 (issue 41): base64 runs (images, pasted certificates) left out of the indexed text
# (``search.text``): an index of version 3 holds their junk terms, and is rebuilt.
# 5 (issue 42): ``cx``, the words of the event a message or tool result answers.
SEARCH_INDEX_VERSION: Final = 5
_TOKENIZER: Final = "sq_whitespace"
# The reserved document holding the follower's position (ids never contain "~").
POSITION_SID: Final = "~meta"
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
# The context's words at most (the first ones of the event answered: a question opens
# with what it asks), and the text read for them.
CONTEXT_TERMS: Final = 48
_CONTEXT_CHARS: Final = 4096
# The follower's ``body_cap`` is the store's text cap less this (``WriterCore.open``).
BODY_CAP_MARGIN: Final = 4


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
    # The context (issue 42): the distinct derived words of the event this one answers
    # (``CONTEXT_TERMS`` at most, workspace-prefixed), matched per word: no positions, no
    # frequencies (no phrase or bonus reads them), so it costs little of the index.
    builder.add_text_field("cx", tokenizer_name=_TOKENIZER, index_option="basic")
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
    query = tantivy.Query.term_query(SCHEMA, "sid", POSITION_SID)
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


def event_document(row: Sequence[Any], body_cap: int, body: str | None = None) -> tantivy.Document:
    """The event's document. Its text is the store's searchable text (what excerpts read,
    cut at the store's cap), or, when that was cut (``body_cap``: the cap less a margin),
    the whole payload's, up to ``INDEX_TEXT_CAP_BYTES``. ``body``: that searchable text
    when the caller has it (the writer derived it); the JSON is then parsed only if cut."""
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
        context_type,
        context_json,
    ) = row
    if body is None:
        body = searchable_text(indexed_payload(kind, payload_of(raw)), body_cap + BODY_CAP_MARGIN)
    text = body
    # Cut at the cap in bytes: a character is at most 4 of them, so a shorter body was not.
    if 4 * len(body) >= body_cap and len(body.encode("utf-8")) >= body_cap:
        text = searchable_text(payload_of(raw), INDEX_TEXT_CAP_BYTES)  # cut: the whole event
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
    if context_json is not None:
        context = context_terms(key, str(context_type), context_json)
        if context:
            doc.add_text("cx", context)
    doc.add_text("type", kind)
    doc.add_text("surface", surface)
    doc.add_integer("time", time_ms)
    doc.add_unsigned("seq", seq)
    doc.add_unsigned("sseq", stream_seq)
    doc.add_float("prior", ranking.prior(words))
    return doc


def context_terms(key: str, kind: str, raw: str | bytes) -> str:
    """The context field of an event answering the event ``raw`` (issue 42): the first
    ``CONTEXT_TERMS`` distinct derived words of its text, function words left out (a
    query never requires them), each prefixed with the workspace's key."""
    text = searchable_text(indexed_payload(kind, payload_of(raw)), _CONTEXT_CHARS)
    return " ".join(key + token for token in analysis.first_derived(text, CONTEXT_TERMS))


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
