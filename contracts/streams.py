"""The SESSIONS stream: its one configuration, and creating it when missing.

Runtimes publish session events there (docs/protocol.md §7) on
``sessions.events.<workspace key>.<session_id>``; the stream's subject transform stores each
one as ``sessions.events.<partition>.<workspace key>.<session_id>`` (contracts.partitions),
and its metadata records the partition count, fixed at creation. Whoever comes first
creates it (the worker, ``sessionquery import``, the embedded server's sample corpus,
``deploy.streams``, tests and benchmarks), always through ``ensure_events_stream``, so it
has the same settings whichever one that is; an existing stream is left as it is.
"""

from __future__ import annotations

from typing import Final

from nats.js import JetStreamContext
from nats.js.api import StorageType, StoreCompression, StreamConfig, StreamInfo, SubjectTransform
from nats.js.errors import BadRequestError, NotFoundError

from contracts.errors import SessionQueryClientError
from contracts.partitions import (
    DEFAULT_PARTITION_COUNT,
    MAX_PARTITION_COUNT,
    PARTITIONS_METADATA_KEY,
    PROTOCOL_MAJOR,
    PROTOCOL_METADATA_KEY,
)
from contracts.subjects import Subjects

# Publishers send ``Nats-Msg-Id: <session_id>:<seq>`` and retry with it through outages:
# the stream drops a repeat within this window (nats-server's default, stated here).
DUPLICATE_WINDOW_S: Final = 120.0
# How the stream's blocks are stored (``events_stream_config``; an existing stream is moved
# to it by ``deploy.streams`` or ``nats stream edit``: docs/operations.md, "Sizing").
STREAM_COMPRESSION: Final = StoreCompression.S2


class UnpartitionedStream(SessionQueryClientError):
    """The events stream predates protocol 2: it records no partition count."""


def events_stream_config(
    subjects: Subjects, *, replicas: int = 1, partitions: int = DEFAULT_PARTITION_COUNT
) -> StreamConfig:
    """File storage, S2-compressed, the partitioning transform, the duplicate window above,
    ``replicas``."""
    if not 1 <= partitions <= MAX_PARTITION_COUNT:
        raise ValueError(f"partitions must be 1..{MAX_PARTITION_COUNT}, not {partitions}")
    return StreamConfig(
        name=subjects.events_stream,
        subjects=[subjects.events_publish_wildcard],
        subject_transform=SubjectTransform(
            src=subjects.events_publish_wildcard, dest=subjects.events_stored_form(partitions)
        ),
        storage=StorageType.FILE,
        # JetStream's own compression of its message blocks (nats-server 2.10+): events are
        # JSON, mostly tool output, and S2 costs little CPU beside the server's own work
        # (issue 41: the stream was 1.2x its events' bytes uncompressed).
        compression=STREAM_COMPRESSION,
        duplicate_window=DUPLICATE_WINDOW_S,
        num_replicas=replicas,
        metadata={PARTITIONS_METADATA_KEY: str(partitions), PROTOCOL_METADATA_KEY: PROTOCOL_MAJOR},
    )


async def ensure_events_stream(
    js: JetStreamContext,
    subjects: Subjects,
    *,
    replicas: int = 1,
    partitions: int = DEFAULT_PARTITION_COUNT,
) -> bool:
    """Create the events stream when missing; True when this call created it. ``partitions``
    only matters to the creator: an existing stream keeps its own count."""
    try:
        await js.stream_info(subjects.events_stream)
        return False
    except NotFoundError:
        pass
    try:
        await js.add_stream(
            events_stream_config(subjects, replicas=replicas, partitions=partitions)
        )
    except BadRequestError:
        # Another process created it between our look and our create: that one stands.
        await js.stream_info(subjects.events_stream)
        return False
    return True


def partition_count_of(info: StreamInfo) -> int:
    """The partition count the stream records; ``UnpartitionedStream`` when it has none."""
    raw = (info.config.metadata or {}).get(PARTITIONS_METADATA_KEY)
    try:
        count = int(raw) if raw is not None else 0
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_PARTITION_COUNT:
        raise UnpartitionedStream(
            f"stream {info.config.name} records no partition count (metadata "
            f"{PARTITIONS_METADATA_KEY!r}): it was made for protocol 1 "
            "(sessions.events.<session_id>); see docs/protocol.md §10.5 to migrate"
        )
    return count


async def events_partition_count(js: JetStreamContext, subjects: Subjects) -> int:
    """The events stream's partition count, read from its metadata."""
    return partition_count_of(await js.stream_info(subjects.events_stream))
