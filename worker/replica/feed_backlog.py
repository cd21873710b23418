"""What an event feed received while the ingest mailbox was full, as bytes in one buffer.

The server sends ahead of the messages handed on (measured at 100k events: up to ~56,000
messages, 22 MiB, waiting behind a full mailbox). Waiting in nats-py's subscription queue,
each was a ``Msg`` with its subject, reply, headers and payload: ~27 MiB of small objects
spread over CPython's 1 MiB arenas, which a few long-lived objects allocated meanwhile kept
after the burst (RssAnon after ingest 1.9x a restarted worker's). Here a message costs its
bytes in one ``bytearray``, which the allocator gives back whole.

Entries keep their order: a message, or a control reply (a flow-control answer) deferred
until every message before it has been handed on.
"""

from __future__ import annotations

import struct
from typing import Final

from worker.store.writer_protocol import IngestItem

# stream sequence (0: a deferred control reply; stream sequences start at 1), subject
# length, payload length.
_ENTRY: Final = struct.Struct("<QII")
_REPLY_SEQ: Final = 0
# Read entries are cut off the front once they are this many bytes and half the buffer.
_COMPACT_BYTES: Final = 1 << 20


class FeedBacklog:
    """A FIFO of messages and deferred control replies, one buffer for all."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._read = 0  # offset of the next entry
        self._entries = 0

    def __len__(self) -> int:
        return self._entries

    @property
    def size_bytes(self) -> int:
        """The bytes its entries not yet taken hold (what the process holds for them)."""
        return len(self._buffer) - self._read

    def add_message(self, stream_seq: int, subject: str, data: bytes) -> None:
        self._add(stream_seq, subject.encode(), data)

    def add_reply(self, subject: str) -> None:
        """A control reply to publish once every message added before it is handed on."""
        self._add(_REPLY_SEQ, subject.encode(), b"")

    def take(self) -> IngestItem | str:
        """The oldest entry: a message, or the subject of a deferred reply (a ``str``)."""
        if not self._entries:
            raise IndexError("the feed backlog is empty")
        seq, subject_len, data_len = _ENTRY.unpack_from(self._buffer, self._read)
        start = self._read + _ENTRY.size
        subject = self._buffer[start : start + subject_len].decode()
        data = bytes(self._buffer[start + subject_len : start + subject_len + data_len])
        self._read = start + subject_len + data_len
        self._entries -= 1
        self._compact()
        return subject if seq == _REPLY_SEQ else IngestItem(seq, data, subject)

    def _add(self, seq: int, subject: bytes, data: bytes) -> None:
        self._buffer += _ENTRY.pack(seq, len(subject), len(data))
        self._buffer += subject
        self._buffer += data
        self._entries += 1

    def _compact(self) -> None:
        if not self._entries:
            # Emptied: a new buffer, so the burst's memory goes back to the allocator whole.
            self._buffer = bytearray()
            self._read = 0
        elif self._read >= _COMPACT_BYTES and self._read * 2 >= len(self._buffer):
            del self._buffer[: self._read]
            self._read = 0
