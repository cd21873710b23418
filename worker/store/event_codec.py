"""How an event is stored: its JSON once, zstd-compressed, in ``events.doc`` (issue 41).

The store keeps one column per event: the event's JSON as received (redacted), compressed
as one zstd frame with a dictionary trained on the store's own first events (``zdict``; the
frame names its dictionary, so rows written before it was trained, with none, stay
readable). A long event (4 KiB and more) is two frames instead: its searchable text, then
its JSON compressed with that text as the frame's dictionary, so the text is there once
and a search reads it without parsing the JSON (``EventPacker.pack``). What a read wants
of an event comes from the SQL functions every connection of the worker has
(``Database.open``):

- ``event_json(doc)``: the JSON text, byte for byte as stored;
- ``event_text(doc, type[, cap_bytes])``: the searchable text (``search.text``) of its
  payload, cut to ``cap_bytes`` (default: the store's ``text_cap_bytes``, recorded in
  ``meta`` by the writer), which the excerpts, previews and the search index read.

Why per-row frames and a dictionary: a read of one event decompresses that event only
(a few microseconds), and most events are small (p50 under 1 KB), where a frame without a
dictionary saves little; the dictionary brings them to about a third. Why not store the
searchable text beside the JSON: it is a projection of the JSON (strings, no keys), so it
would be the text twice again; a small event's text is derived from its JSON (a few
microseconds), a long one's is the frame its JSON refers to.
"""

from __future__ import annotations

import hashlib
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

# A preview's source: enough of the text to fill a collapsed preview without deriving a
# 64 KiB text per row (the text cut at this many bytes holds at least that many characters).
PREVIEW_SOURCE_CHARS: Final = 1000
PREVIEW_SOURCE_BYTES: Final = 4 * PREVIEW_SOURCE_CHARS
# The surfaces whose events carry a ``preview_key`` (the conversation: what tells copied
# sessions apart, ``search/copies.py``).
KEYED_SURFACES: Final = frozenset(("user", "assistant"))

# Events from this size on are stored as their text's frame then their JSON's (``pack``).
SPLIT_BYTES: Final = 4096
# A text shorter is no dictionary zstd takes (an image with a caption is split too: its
# reads then skip parsing the image's JSON).
_MIN_SPLIT_TEXT: Final = 8
ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
# A split doc: one byte (its text whole, or cut at the writer's cap), the text frame's
# length (4 bytes, little-endian), the text frame, the JSON frame.
_SPLIT_WHOLE: Final = 1
_SPLIT_CUT: Final = 2
_SPLIT_HEAD: Final = 5

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


def payload_of(raw_json: str | bytes) -> dict[str, Any]:
    """The payload of an event's stored JSON ({} when it has none)."""
    try:
        event = orjson.loads(raw_json)
    except orjson.JSONDecodeError:
        return {}
    payload = event.get("payload") if isinstance(event, dict) else None
    return payload if isinstance(payload, dict) else {}


def body_of(kind: str, raw_json: str | bytes, cap_bytes: int) -> str:
    """The event's searchable text, cut to ``cap_bytes``."""
    return searchable_text(indexed_payload(kind, payload_of(raw_json)), cap_bytes)


def preview_key(
    raw_json: str | bytes, kind: str, surface: str, body: str | None = None
) -> int | None:
    """``events.preview_key``: a 64-bit digest of a conversation event's preview source
    (``substr(event_text(doc, type, PREVIEW_SOURCE_BYTES), 1, PREVIEW_SOURCE_CHARS)``),
    written with the row, so telling copied sessions apart compares integers instead of
    decompressing and deriving the text of thousands of rows per search; None for the
    other surfaces. ``body``: the event's text at a cap of at least
    ``PREVIEW_SOURCE_BYTES`` when the caller has it (cut, it is the text at that cap)."""
    if surface not in KEYED_SURFACES:
        return None
    if body is None:
        body = body_of(kind, raw_json, PREVIEW_SOURCE_BYTES)
    source = _cut(body, _size(body), PREVIEW_SOURCE_BYTES)[:PREVIEW_SOURCE_CHARS]
    digest = hashlib.blake2b(source.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)  # SQLite's INTEGER is signed


class EventCodec:
    """A connection's reading side: frames back to JSON and text. The dictionaries are read
    from the connection's own ``zdict`` when a frame first names one (they never change)."""

    __slots__ = ("_decoders", "_doc", "_json", "_raw", "_stored", "_text", "_text_cap", "_value")

    def __init__(self, value: Callable[[str, tuple[object, ...]], Any]) -> None:
        # The connection's one-value lookup (``Database.value``): the dictionaries and the
        # text cap are read through the store's one way into SQLite.
        self._value = value
        self._decoders: dict[int, zstandard.ZstdDecompressor] = {}
        self._text_cap: int | None = None
        # The row last read: a read often asks for a row's JSON, its preview and its text.
        self._doc: bytes | None = None
        # Its JSON as decompressed (parsed as bytes: a str would be encoded again), and as
        # text once asked for.
        self._raw: bytes | None = None
        self._json: str | None = None
        # A long event's stored text: (text, its UTF-8 size, whether the writer cut it).
        self._stored: tuple[str, int, bool] | None = None
        # A text derived from the JSON: (cap, text, its UTF-8 size); a shorter cap's text is
        # a cut of it.
        self._text: tuple[int, str, int] | None = None

    def define(self, define: Callable[[str, int, Callable[..., Any]], None]) -> None:
        define("event_json", 1, self.json)
        define("event_text", 2, self.text)
        define("event_text", 3, self.text)

    def _row(self, doc: bytes) -> None:
        if doc != self._doc:
            self._doc, self._raw, self._json, self._stored, self._text = doc, None, None, None, None

    def json(self, doc: bytes | None) -> str | None:
        if doc is None:
            return None
        self._row(doc)
        if self._json is None:
            self._json = self._raw_of(doc).decode("utf-8")
        return self._json

    def _raw_of(self, doc: bytes) -> bytes:
        if self._raw is None:
            if doc[:4] == ZSTD_MAGIC:
                self._raw = self._frame(doc)
            else:
                text, _, _ = self._split_text(doc)
                raw = zstandard.ZstdCompressionDict(
                    text.encode("utf-8"), dict_type=zstandard.DICT_TYPE_RAWCONTENT
                )
                end = _SPLIT_HEAD + int.from_bytes(doc[1:_SPLIT_HEAD], "little")
                self._raw = zstandard.ZstdDecompressor(dict_data=raw).decompress(doc[end:])
        return self._raw

    def json_and_preview_source(self, doc: bytes, kind: str) -> tuple[str, str]:
        """The row's JSON and its preview's source (``sql.EVENT_COLS``' ``body_start``), in
        one call from Python: a window's read, where two SQL function calls a row cost
        about 2 us of the 7 its decoding took."""
        source = self.text(doc, kind, PREVIEW_SOURCE_BYTES)
        raw = self.json(doc)
        assert source is not None and raw is not None
        return raw, source[:PREVIEW_SOURCE_CHARS]

    def text_and_preview_source(self, doc: bytes, kind: str) -> tuple[str, str]:
        """The row's text (at the store's cap) and its preview's source, cut from it: a
        search's page rows, decoded in Python (as ``json_and_preview_source``)."""
        text = self.text(doc, kind)
        source = self.text(doc, kind, PREVIEW_SOURCE_BYTES)
        assert text is not None and source is not None
        return text, source[:PREVIEW_SOURCE_CHARS]

    def text(self, doc: bytes | None, kind: str, cap_bytes: int | None = None) -> str | None:
        if doc is None:
            return None
        self._row(doc)
        if doc[:4] != ZSTD_MAGIC:  # a long event: its text is stored, no JSON to parse
            stored, size, cut = self._split_text(doc)
            if cap_bytes is None or (size <= cap_bytes and not cut):
                return stored
            if cap_bytes <= size:
                return _cut(stored, size, cap_bytes)
        cap = self._cap() if cap_bytes is None else cap_bytes
        held = self._text
        if held is not None:
            held_cap, held_text, held_size = held
            if cap == held_cap or (cap > held_cap and held_size < held_cap):
                return held_text  # the same cut, or the whole text already
            if cap < held_cap:
                return _cut(held_text, held_size, cap)
        text = body_of(kind, self._raw_of(doc), cap)
        self._text = (cap, text, _size(text))
        return text

    def _split_text(self, doc: bytes) -> tuple[str, int, bool]:
        if self._stored is None:
            end = _SPLIT_HEAD + int.from_bytes(doc[1:_SPLIT_HEAD], "little")
            text = self._frame(doc[_SPLIT_HEAD:end]).decode("utf-8")
            self._stored = (text, _size(text), doc[0] == _SPLIT_CUT)
        return self._stored

    def _frame(self, frame: bytes) -> bytes:
        dict_id = zstandard.get_frame_parameters(frame).dict_id
        decoder = self._decoders.get(dict_id)
        if decoder is None:
            decoder = self._decoders[dict_id] = self._decoder(dict_id)
        return decoder.decompress(frame)

    def _decoder(self, dict_id: int) -> zstandard.ZstdDecompressor:
        if dict_id == 0:
            return zstandard.ZstdDecompressor()
        data = self._value(_DICT_OF, (dict_id,))
        if data is None:
            raise ValueError(f"event frame names zstd dictionary {dict_id}, not in the store")
        return zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(data))

    def _cap(self) -> int:
        if self._text_cap is None:
            try:
                cap = self._value(_TEXT_CAP, (TEXT_CAP_KEY,))
            except sqlite3.OperationalError:  # no meta table yet
                cap = None
            self._text_cap = int(cap) if cap else DEFAULT_TEXT_CAP_BYTES
        return self._text_cap


class EventPacker:
    """The writer's side: JSON text to a frame. Frames use no dictionary until enough of the
    store's events were seen to train one; the dictionary is then stored (``zdict``) in the
    transaction of the first rows that use it, and again (``INSERT OR IGNORE``) in every
    transaction after, so a rolled back first one never leaves rows naming a missing one."""

    def __init__(
        self,
        dict_id: int = 0,
        dict_data: bytes | None = None,
        *,
        text_cap_bytes: int = DEFAULT_TEXT_CAP_BYTES,
    ) -> None:
        self._text_cap = text_cap_bytes
        self._dict_id = dict_id
        self._dict_data = dict_data
        self._samples: list[bytes | bytearray | memoryview[int]] = []
        self._sample_bytes = 0
        self._plain = zstandard.ZstdCompressor(level=LEVEL, write_checksum=False)
        self._encoder = self._plain
        if dict_data is not None:
            self._encoder = _encoder(dict_data)

    @classmethod
    def of_store(cls, conn: Any, *, text_cap_bytes: int = DEFAULT_TEXT_CAP_BYTES) -> EventPacker:
        """The packer that goes on with the store's newest dictionary (``conn``: a
        ``Database``)."""
        if not conn.value(_TABLE, ("zdict",)):
            return cls(text_cap_bytes=text_cap_bytes)
        found, at = conn.rows(_NEWEST_DICT)
        if not found:
            return cls(text_cap_bytes=text_cap_bytes)
        newest = int(found[0][at["id"]]), bytes(found[0][at["data"]])
        return cls(*newest, text_cap_bytes=text_cap_bytes)

    @property
    def text_cap(self) -> int:
        return self._text_cap

    @property
    def dict_id(self) -> int:
        return self._dict_id

    def pack(self, raw_json: str, kind: str = "", body: str | None = None) -> bytes:
        """The event's ``doc``. A long event (``SPLIT_BYTES``) is its searchable text's frame
        and then its JSON's, compressed with that text as its dictionary: the text is kept
        once (the JSON's strings become references into it), and a search reads it without
        decompressing and parsing the JSON (measured 10 us instead of 120 for a 10 KB
        event). ``body``: that text (``body_of`` at the store's cap) when the caller has
        it."""
        data = raw_json.encode("utf-8")
        if self._dict_data is None:
            self._learn(data)
        if len(data) < SPLIT_BYTES:
            return self._encoder.compress(data)
        if body is None:
            body = body_of(kind, raw_json, self._text_cap)
        text = body.encode("utf-8")
        if len(text) < _MIN_SPLIT_TEXT:
            return self._encoder.compress(data)
        text_frame = self._encoder.compress(text)
        raw = zstandard.ZstdCompressionDict(text, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        json_frame = zstandard.ZstdCompressor(
            level=LEVEL, dict_data=raw, write_checksum=False, write_dict_id=False
        ).compress(data)
        # Cut at the cap, or within a character of it: a longer cap re-derives from the JSON.
        flag = _SPLIT_CUT if len(text) > self._text_cap - 4 else _SPLIT_WHOLE
        head = bytes((flag,)) + len(text_frame).to_bytes(_SPLIT_HEAD - 1, "little")
        return head + text_frame + json_frame

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


def _size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _cut(text: str, size: int, cap: int) -> str:
    """``text`` (``size`` bytes of UTF-8) cut to ``cap`` bytes on a character boundary, as
    ``searchable_text`` cuts (its text cut shorter is its text at the shorter cap)."""
    if size <= cap:
        return text
    if size == len(text):  # ASCII
        return text[:cap]
    return text.encode("utf-8")[:cap].decode("utf-8", "ignore")


def _encoder(dict_data: bytes) -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(
        level=LEVEL,
        dict_data=zstandard.ZstdCompressionDict(dict_data),
        write_checksum=False,
        write_dict_id=True,
    )
