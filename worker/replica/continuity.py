"""The index against the stream it replicates: identity and continuity.

The index records which stream it replicates (name and creation time, in ``meta``, written
in one transaction with the stream sequence). At start and after every consumer reset the
worker compares that, and the stored sequence, with the stream's state:

- a different stream (re-created, or another name),
- a stored sequence past the stream's last one (the stream was reset under the index),
- a gap: the stream's first sequence is past the stored one + 1 (retention or a purge
  removed events the index never read),

is a divergence, never skipped: ``--on-divergence rebuild`` (the default) builds a new index
(``worker.replica.rebuild``); ``refuse`` stops with the reason. An empty index on a
stream whose first sequence is past 1 records that history before it is unavailable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import structlog
from nats.js import JetStreamContext

from contracts.partitions import DEFAULT_PARTITION_COUNT, PartitionSet, PartitionSetError
from contracts.streams import partition_count_of
from contracts.subjects import Subjects
from worker.failures import RuntimeFailure
from worker.store.files import index_file, schema
from worker.store.writer_protocol import SessionIndexWriter

log = structlog.get_logger("worker.replica.continuity")

DIVERGENCE_MODES: Final = ("rebuild", "refuse")
REBUILD_SUFFIX: Final = ".rebuild"


class StreamDiverged(RuntimeFailure):
    """The index and the stream disagree (the message says how) and the index must be
    rebuilt, or the worker refuses to go on."""


@dataclass(frozen=True, slots=True)
class StreamState:
    name: str
    created: str  # ISO time the server reports: a re-created stream has another one
    first_seq: int
    last_seq: int
    messages: int
    partitions: int = DEFAULT_PARTITION_COUNT  # from the stream's metadata (protocol.md §10)
    # The partitions this worker holds (canonical text), and the last stream sequence of
    # an event in them: what its index is complete through once caught up.
    held: str = "all"
    held_last_seq: int = -1  # -1: last_seq (all partitions held)

    @property
    def held_set(self) -> PartitionSet:
        return PartitionSet.parse(self.held, self.partitions)

    @property
    def target_seq(self) -> int:
        """The stream sequence an index of the held partitions is complete through."""
        return self.last_seq if self.held_last_seq < 0 else self.held_last_seq

    @property
    def holds_whole_history(self) -> bool:
        return self.first_seq <= 1


async def stream_state(
    js: JetStreamContext, name: str, held: str = "all", subjects: Subjects | None = None
) -> StreamState:
    """The stream's state as a worker holding ``held`` partitions sees it;
    ``UnpartitionedStream`` for a stream of protocol 1, ``ConfigError`` for partitions the
    stream does not have."""
    info = await js.stream_info(name)
    created = info.created.isoformat() if info.created is not None else ""
    count = partition_count_of(info)
    try:
        partitions = PartitionSet.parse(held, count)
    except PartitionSetError as exc:
        from worker.settings import ConfigError

        raise ConfigError(f"--partitions (SESSIONQUERY_PARTITIONS): {exc}") from None
    held_last = -1
    if not partitions.is_all:
        held_last = await _last_seq_of(js, name, subjects or Subjects(), partitions)
    return StreamState(
        name=name,
        created=created,
        first_seq=int(info.state.first_seq),
        last_seq=int(info.state.last_seq),
        messages=int(info.state.messages),
        partitions=count,
        held=str(partitions),
        held_last_seq=held_last,
    )


async def _last_seq_of(
    js: JetStreamContext, name: str, subjects: Subjects, partitions: PartitionSet
) -> int:
    """The sequence of the stream's last event in ``partitions`` (0: none)."""
    from nats.js.errors import NotFoundError

    last = 0
    for k in partitions:
        try:
            msg = await js.get_last_msg(name, subjects.stored_events(k))
        except NotFoundError:
            continue
        last = max(last, int(msg.seq or 0))
    return last


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Literal["ok", "bind", "diverged"]
    reason: str = ""


def judge(meta: Mapping[str, object], stream: StreamState) -> Verdict:
    """Compare an index's ``meta`` with the stream's state (pure, for tests)."""
    stored = _int(meta.get("stream_seq"))
    name = meta.get(index_file.STREAM_NAME)
    created = meta.get(index_file.STREAM_CREATED)
    if name is not None and str(name) != stream.name:
        return Verdict(
            "diverged", f"the index replicates stream {name}, but the stream is {stream.name}"
        )
    held = index_file.held_partitions(meta)
    if name is not None and held != stream.held:
        return Verdict(
            "diverged",
            f"the index holds partitions {held} of stream {stream.name}, but this worker is"
            f" set to hold {stream.held}",
        )
    if created is not None and str(created) != stream.created:
        return Verdict(
            "diverged",
            f"stream {stream.name} was re-created (created {stream.created}; the index was"
            f" built from the one created {created}, through its seq {stored})",
        )
    if stored > stream.last_seq:
        return Verdict(
            "diverged",
            f"the index holds stream {stream.name} through seq {stored}, past the stream's"
            f" last seq {stream.last_seq}: the stream was reset or replaced",
        )
    if stored + 1 < stream.first_seq:
        return Verdict(
            "diverged",
            f"gap: the index holds stream {stream.name} through seq {stored} but the stream"
            f" now starts at seq {stream.first_seq}: events {stored + 1}..{stream.first_seq - 1}"
            " were removed (retention or purge) before the index read them",
        )
    if name is None:
        return Verdict("bind")
    return Verdict("ok")


def history_note(first_seq: int) -> str:
    return f"history unavailable before stream seq {first_seq}"


@dataclass(frozen=True, slots=True)
class IndexPreflight:
    """What to do with the index file before the worker opens it."""

    rebuild: bool
    reason: str = ""
    move_aside_as: str = "replaced"
    # The old file is sound and of this schema (only the stream moved on): it is served
    # while the new one is built. Otherwise (corrupt, another schema) the rebuild comes first.
    background: bool = False


def preflight(path: Path, stream: StreamState, *, on_divergence: str) -> IndexPreflight:
    """Check the file (quick_check, schema version, stream identity) before it is opened.
    Raises ``index_file.IndexFileError`` (or ``schema.SchemaVersionError``) when the worker
    must refuse; the message names the file and says what to do."""
    try:
        state = index_file.inspect(path)
    except index_file.CorruptIndex as exc:
        if not stream.holds_whole_history:
            raise index_file.CorruptIndex(
                f"{exc}; stream {stream.name} no longer holds its whole history (first seq"
                f" {stream.first_seq}), so it cannot be rebuilt completely: restore the file"
                " from a backup, or move it aside to start an index with the history that"
                " remains"
            ) from exc
        return IndexPreflight(True, str(exc), "corrupt")
    if state is None or state.empty:
        return IndexPreflight(False)
    action = schema.version_action(state.schema_version, str(path))
    if action == "rebuild":
        return IndexPreflight(
            True,
            f"index {path} has schema version {state.schema_version}, and no migration"
            f" to {schema.SCHEMA_VERSION} exists",
            f"schema-v{state.schema_version}",
        )
    verdict = judge(
        {
            "stream_seq": state.stream_seq,
            index_file.STREAM_NAME: state.stream_name,
            index_file.STREAM_CREATED: state.stream_created,
            index_file.STREAM_PARTITIONS: state.stream_partitions,
        },
        stream,
    )
    if verdict.action != "diverged":
        return IndexPreflight(False)
    if on_divergence == "refuse":
        raise index_file.IndexFileError(
            f"index {path} does not match the stream: {verdict.reason}. Refusing to serve"
            " (--on-divergence refuse): start with --on-divergence rebuild to rebuild it from"
            " the stream, or give another --db"
        )
    return IndexPreflight(True, verdict.reason, "replaced", background=True)


async def bind(writer: SessionIndexWriter, stream: StreamState) -> dict[str, object]:
    """Record the stream's identity in an index that has none yet; warns once when its
    history before the stream's first sequence is unavailable."""
    info: dict[str, object] = await writer.bind_stream(
        stream.name, stream.created, stream.first_seq, stream.held
    )
    history_from = _int(info.get(index_file.HISTORY_FROM))
    if history_from > 1:
        log.warning(
            "index starts after the stream's beginning: " + history_note(history_from),
            stream=stream.name,
            first_seq=history_from,
            unavailable_seqs=f"1..{history_from - 1}",
        )
    return info


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0
