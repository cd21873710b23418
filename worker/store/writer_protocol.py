"""The ``SessionIndexWriter`` protocol: the index's single writer, as ingestion and the
maintenance commands use it, and the batch types it takes and returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

# Re-exported: the writer protocol's errors (their home is worker.store.errors).
from worker.store.errors import BatchNotAttempted as BatchNotAttempted
from worker.store.errors import IndexWriteStopped as IndexWriteStopped


@dataclass(frozen=True, slots=True)
class IngestItem:
    """One message from the SESSIONS stream, for the index writer."""

    stream_seq: int
    data: bytes  # the raw message body
    # The subject it arrived on; when given, its last token must equal the session_id.
    subject: str | None = None


@dataclass(frozen=True, slots=True)
class Rejected:
    stream_seq: int
    data: bytes
    reason: str  # precise and human-readable: it goes to the dead-letter subject


@dataclass(frozen=True, slots=True)
class ApplyResult:
    applied: int
    duplicates: int
    rejected: tuple[Rejected, ...] = field(default_factory=tuple)
    last_stream_seq: int = 0


@dataclass(frozen=True, slots=True)
class Staged:
    """A batch its writer checked, ready to write (the writer's own batch type stays inside:
    the in-process writer's, the writer child's frame, a test double's items)."""

    apply: Callable[[], Awaitable[ApplyResult]]
    # Sent while the batch before is in flight, tried only if that one committed
    # (``BatchNotAttempted`` otherwise). None: the writer cannot take it early.
    apply_chained: Callable[[], Awaitable[ApplyResult]] | None = None


class SessionIndexWriter(Protocol):
    """The single writer of the index, used by ingestion and maintenance commands."""

    async def info(self) -> dict[str, object]:
        """The index's ``meta`` table: stream identity, stream sequence, epoch, index id."""
        ...

    async def bind_stream(
        self, name: str, created: str, first_seq: int, partitions: str = "all"
    ) -> dict[str, object]:
        """Record the stream the index replicates (see ``WriterCore.bind_stream``)."""
        ...

    async def last_stream_seq(self) -> int:
        """The SESSIONS stream sequence through which the index is complete."""
        ...

    def stage(self, items: Sequence[IngestItem]) -> Staged:
        """A batch, the one way in: ``items`` checked as far as can be apart from writing
        them (CPU only, on the caller's thread; a message that fails the checks is rejected,
        not raised), ready for ``Staged.apply``: one transaction that also stores the last
        stream sequence. Duplicate ``(session_id, seq)`` is a no-op; invalid events are
        returned as ``rejected`` with a reason and the rest still apply."""
        ...

    async def purge(
        self, *, session_ids: Sequence[str] = (), older_than_ms: int | None = None
    ) -> int:
        """Remove sessions from the index, bump the epoch, return how many were removed."""
        ...
