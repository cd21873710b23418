"""The frames between an ``IndexWriter`` and its child process (``writer_process``).

Requests go on the child's stdin, replies on a private copy of its stdout (the child's
fd 1 points at stderr so a stray print cannot corrupt a frame): every frame is a ``<BQ``
header (op or status, body length) and its body. Requests are answered in order.

- ``APPLY``: the batch's stream messages as ``(stream seq, body, subject)`` tuples in
  ``marshal``'s format (both ends run the same interpreter, and only the parent writes to
  the pipe); the child checks and parses them, so an ingest burst allocates nothing
  long-lived in the serving process. Reply: ``<qqqI`` (applied, duplicates, last stream
  seq, rejected count), then per rejection ``<QI`` (stream seq, reason length) and the
  reason; the parent still holds the messages' bytes.
- ``APPLY | CHAINED``: the same, written while the apply before it is still in flight;
  the child tries it only if its last apply committed, else answers ``NOT_ATTEMPTED``
  (nothing written) and ingestion retries it after that batch. The child then never waits
  for the parent's event loop between two batches, and a retry is never overtaken.
- ``GENERATION``: reply ``<qq`` (epoch, stream seq). The child sends one unasked once it
  has opened the index (or an ``ERROR`` or ``FILE_LOST`` frame when it could not).
- ``PURGE``: orjson ``{"session_ids": [...], "older_than_ms": int | null}``; reply ``<qqq``
  (removed, epoch, stream seq).
- ``INFO``: reply orjson of the ``meta`` table (stream identity, sequence, index id).
- ``BIND``: orjson ``{"name", "created", "first_seq"}``: record the stream the index
  replicates (``WriterCore.bind_stream``); reply as ``INFO``.
- ``SYNC_SEARCH``: bring the search index up to the store now; empty reply.
- A failed request gets an ``ERROR`` frame with a one-line message; its transaction was
  rolled back.
"""

from __future__ import annotations

import marshal
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from worker.store.index.batch import BatchChecker, PreparedBatch
from worker.store.protocol import Generation
from worker.store.writer_protocol import ApplyResult, IngestItem, Rejected

OP_APPLY: Final = 1
OP_GENERATION: Final = 2
OP_PURGE: Final = 3
OP_INFO: Final = 4
OP_BIND: Final = 5
OP_SYNC_SEARCH: Final = 6
# Or'ed into an apply's op: tried only if the child's last apply committed.
CHAINED: Final = 0x80
STATUS_OK: Final = 0
STATUS_ERROR: Final = 1
STATUS_NOT_ATTEMPTED: Final = 2
# The child cannot write the index its worker opened (removed or replaced): not retried.
STATUS_FILE_LOST: Final = 3

HEADER: Final = struct.Struct("<BQ")
_RESULT: Final = struct.Struct("<qqqI")
_REJECTED: Final = struct.Struct("<QI")
_GENERATION: Final = struct.Struct("<qq")
_PURGED: Final = struct.Struct("<qqq")


def frame(op: int, body: bytes = b"") -> bytes:
    return HEADER.pack(op, len(body)) + body


@dataclass(frozen=True, slots=True)
class FramedBatch:
    """A batch as ``PipeTransport.prepare`` framed it: the bytes for the pipe, and the
    messages (for the dead letters, whose bytes the reply does not carry back)."""

    frame: bytes
    items: Sequence[IngestItem]

    def chained(self) -> bytes:
        """The frame with ``CHAINED`` set."""
        framed = bytearray(self.frame)
        framed[0] |= CHAINED
        return bytes(framed)


def encode_batch(items: Sequence[IngestItem]) -> bytes:
    """A whole ``APPLY`` frame, header included (one pipe write): the messages as they
    came, in ``marshal``'s format."""
    return frame(OP_APPLY, marshal.dumps([(i.stream_seq, i.data, i.subject) for i in items]))


def decode_batch(checker: BatchChecker, body: bytes) -> PreparedBatch:
    """The messages of an ``APPLY`` frame, checked (in the child)."""
    return checker.prepare(
        [IngestItem(seq, data, subject) for seq, data, subject in marshal.loads(body)]
    )


def encode_result(result: ApplyResult) -> bytes:
    parts = [
        _RESULT.pack(
            result.applied, result.duplicates, result.last_stream_seq, len(result.rejected)
        )
    ]
    for rejected in result.rejected:
        reason = rejected.reason.encode()
        parts.append(_REJECTED.pack(rejected.stream_seq, len(reason)))
        parts.append(reason)
    return b"".join(parts)


def decode_result(body: bytes, items: Sequence[IngestItem]) -> ApplyResult:
    applied, duplicates, last, count = _RESULT.unpack_from(body, 0)
    offset = _RESULT.size
    rejected: list[Rejected] = []
    if count:
        data_of = {item.stream_seq: item.data for item in items}
        for _ in range(count):
            stream_seq, reason_len = _REJECTED.unpack_from(body, offset)
            offset += _REJECTED.size
            reason = body[offset : offset + reason_len].decode()
            offset += reason_len
            rejected.append(Rejected(stream_seq, data_of.get(stream_seq, b""), reason))
    return ApplyResult(
        applied=applied, duplicates=duplicates, rejected=tuple(rejected), last_stream_seq=last
    )


def encode_generation(generation: Generation) -> bytes:
    return _GENERATION.pack(generation.epoch, generation.seq)


def decode_generation(body: bytes) -> Generation:
    epoch, seq = _GENERATION.unpack(body)
    return Generation(epoch=epoch, seq=seq)


def encode_purged(count: int, generation: Generation) -> bytes:
    return _PURGED.pack(count, generation.epoch, generation.seq)


def decode_purged(body: bytes) -> int:
    count, _epoch, _seq = _PURGED.unpack(body)
    return int(count)
