"""How an event is stored: its JSON once, zstd-compressed, in ``events.doc`` (issue 41).

The store keeps one column of text per event: the event's JSON as received (redacted),
compressed as one zstd frame with a dictionary trained on the store's own first events
(``zdict``; the frame names its dictionary, so rows written before it was trained, with
none, stay readable). Everything else a read wants of an event is derived from it where it
is read, by SQL functions every connection of the worker has (``Database.open``):

- ``event_json(doc)``: the JSON text, byte for byte as stored;
- ``event_text(doc, type[, cap_bytes])``: the searchable text (``search.text``) of its
  payload, cut to ``cap_bytes`` (default: the store's ``text_cap_bytes``, recorded in
  ``meta`` by the writer), which the excerpts, previews and the search index read.

Why per-row frames and a dictionary: a read of one event decompresses that event only
(a few microseconds), and most events are small (p50 under 1 KB), where a frame without a
dictionary saves little; the dictionary brings them to about a third. Why not store the
searchable text instead: it is a projection of the JSON (strings, no keys), and the tools
return the JSON itself, so it would be the text twice again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, Final

import orjson
import zstandard

from worker.store.search.text import searchable_text

# The store's searchable-text cap when the writer has recorded none (config's default).
DEFAULT_TEXT_CAP_BYTES: Final = 64 * 1024
TEXT_CAP_KEY: Final = "text_cap_bytes"
LEVEL: Final = 3  # measured: level 6 saves 3% more at three times the CPU
DICT_BYTES: Final = 64 * 1024
# Samples for training: enough events that the dictionary sees the store's shapes, each
# cut (a long tool output teaches little past its start), bounded in memory.
TRAIN_MIN_SAMPLES: Final = 2000
TRAIN_MIN_BYTES: Final = 1 << 20
TRAIN_MAX_BYTES: Final = 8 << 20
SAMPLE_BYTES: Final = 8 * 1024

ZDICT_DDL: Final = """
CREATE TABLE IF NOT EXISTS zdict (
    id   INTEGER PRIMARY KEY,
    data BLOB NOT NULL
)"""
_DICT_OF: Final = "SELECT data FROM zdict WHERE id = ?"
_NEWEST_DICT: Final = "SELECT id AS id, data AS data FROM zdict ORDER BY id DESC LIMIT 1"
_PUT_DICT: Final = "INSERT OR IGNORE INTO zdict (id, data) VALUES (?, ?)"
_TEXT_CAP: Final = "SELECT value FROM meta WHERE key = ?"
_TABLE: Final = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"


def indexed_payload(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload whose strings are searchable. A session/start's parent id is lineage (the
    sessions table holds it), not text: indexed, it would show in excerpts and previews even
    when the parent belongs to another workspace, whose ids are never printed."""
    if kind == "session/start" and "parent_session_id" in payload:
        return {k: v for k, v in payload.items() if k != "parent_session_id"}
    return payload


def payload_of(raw_json: str) -> dict[str, Any]:
    """The payload of an event's stored JSON ({} when it has none)."""
    try:
        event = orjson.loads(raw_json)
    except orjson.JSONDecodeError:
        return {}
    payload = event.get("payload") if isinstance(event, dict) else None
    return payload if isinstance(payload, dict) else {}


def body_of(kind: str, raw_json: str, cap_bytes: int) -> str:
    """The event's searchable text, cut to ``cap_bytes``."""
    return searchable_text(indexed_payload(kind, payload_of(raw_json)), cap_bytes)


class EventCodec:
    """A connection's reading side: frames back to JSON and text. The dictionaries are read
    from the connection's own ``zdict`` when a frame first names one (they never change)."""

    __slots__ = ("_conn", "_decoders", "_last_doc", "_last_json", "_text_cap")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._decoders: dict[int, zstandard.ZstdDecompressor] = {}
        self._text_cap: int | None = None
        # A read often asks for the JSON and the text of one row: decompress it once.
        self._last_doc: bytes | None = None
        self._last_json = ""

    def define(self, define: Callable[[str, int, Callable[..., Any]], None]) -> None:
        define("event_json", 1, self.json)
        define("event_text", 2, self.text)
        define("event_text", 3, self.text)

    def json(self, doc: bytes | None) -> str | None:
        if doc is None:
            return None
        if doc == self._last_doc:
            return self._last_json
        dict_id = zstandard.get_frame_parameters(doc).dict_id
        decoder = self._decoders.get(dict_id)
        if decoder is None:
            decoder = self._decoders[dict_id] = self._decoder(dict_id)
        text = decoder.decompress(doc).decode("utf-8")
        self._last_doc, self._last_json = doc, text
        return text

    def text(self, doc: bytes | None, kind: str, cap_bytes: int | None = None) -> str | None:
        raw = self.json(doc)
        if raw is None:
            return None
        return body_of(kind, raw, self._cap() if cap_bytes is None else cap_bytes)

    def _decoder(self, dict_id: int) -> zstandard.ZstdDecompressor:
        if dict_id == 0:
            return zstandard.ZstdDecompressor()
        row = self._conn.execute(_DICT_OF, (dict_id,)).fetchone()
        if row is None:
            raise ValueError(f"event frame names zstd dictionary {dict_id}, not in the store")
        return zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(row[0]))

    def _cap(self) -> int:
        if self._text_cap is None:
            try:
                row = self._conn.execute(_TEXT_CAP, (TEXT_CAP_KEY,)).fetchone()
            except sqlite3.OperationalError:  # no meta table yet
                row = None
            self._text_cap = int(row[0]) if row and row[0] else DEFAULT_TEXT_CAP_BYTES
        return self._text_cap


class EventPacker:
    """The writer's side: JSON text to a frame. Frames use no dictionary until enough of the
    store's events were seen to train one; the dictionary is then stored (``zdict``) in the
    transaction of the first rows that use it, and again (``INSERT OR IGNORE``) in every
    transaction after, so a rolled back first one never leaves rows naming a missing one."""

    def __init__(self, dict_id: int = 0, dict_data: bytes | None = None) -> None:
        self._dict_id = dict_id
        self._dict_data = dict_data
        self._samples: list[bytes | bytearray | memoryview[int]] = []
        self._sample_bytes = 0
        self._plain = zstandard.ZstdCompressor(level=LEVEL, write_checksum=False)
        self._encoder = self._plain
        if dict_data is not None:
            self._encoder = _encoder(dict_data)

    @classmethod
    def of_store(cls, conn: Any) -> EventPacker:
        """The packer that goes on with the store's newest dictionary (``conn``: a
        ``Database``)."""
        if not conn.value(_TABLE, ("zdict",)):
            return cls()
        found, at = conn.rows(_NEWEST_DICT)
        if not found:
            return cls()
        return cls(int(found[0][at["id"]]), bytes(found[0][at["data"]]))

    @property
    def dict_id(self) -> int:
        return self._dict_id

    def pack(self, raw_json: str) -> bytes:
        data = raw_json.encode("utf-8")
        if self._dict_data is None:
            self._learn(data)
        return self._encoder.compress(data)

    def store(self, conn: Any) -> None:
        """Record the dictionary in use in ``conn``'s open transaction (a no-op when it
        is there already, or when frames use none)."""
        if self._dict_data is not None:
            conn.run(_PUT_DICT, (self._dict_id, self._dict_data))

    def train_from(self, samples: list[bytes], dict_id: int) -> None:
        """Train at once on ``samples`` (a migration's sample of the store)."""
        self._samples = [s[:SAMPLE_BYTES] for s in samples]
        self._sample_bytes = sum(len(s) for s in self._samples)
        self._train(dict_id, force=True)

    def _learn(self, data: bytes) -> None:
        if self._sample_bytes >= TRAIN_MAX_BYTES:
            return  # training failed on everything kept: frames stay without one
        sample = data[:SAMPLE_BYTES]
        self._samples.append(sample)
        self._sample_bytes += len(sample)
        if len(self._samples) >= TRAIN_MIN_SAMPLES and self._sample_bytes >= TRAIN_MIN_BYTES:
            self._train(self._dict_id + 1, force=False)

    def _train(self, dict_id: int, *, force: bool) -> None:
        try:
            trained = zstandard.train_dictionary(DICT_BYTES, self._samples, dict_id=dict_id)
        except zstandard.ZstdError:
            if force or self._sample_bytes >= TRAIN_MAX_BYTES:
                self._samples, self._sample_bytes = [], TRAIN_MAX_BYTES
            return  # too few or too alike: try again with more
        data = trained.as_bytes()
        self._dict_id, self._dict_data = dict_id, data
        self._encoder = _encoder(data)
        self._samples, self._sample_bytes = [], 0


def _encoder(dict_data: bytes) -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(
        level=LEVEL,
        dict_data=zstandard.ZstdCompressionDict(dict_data),
        write_checksum=False,
        write_dict_id=True,
    )
