"""The SESSIONS stream: its one configuration, and creating it when missing.

Runtimes publish session events there (docs/protocol.md §7). Whoever comes first creates
it (the worker, ``sessionquery import``, the embedded server's sample corpus,
``deploy.streams``, tests and benchmarks), always through ``ensure_events_stream``, so it
has the same settings whichever one that is; an existing stream is left as it is.
"""

from __future__ import annotations

from typing import Final

from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import BadRequestError, NotFoundError

from contracts.subjects import Subjects

# Publishers send ``Nats-Msg-Id: <session_id>:<seq>`` and retry with it through outages:
# the stream drops a repeat within this window (nats-server's default, stated here).
DUPLICATE_WINDOW_S: Final = 120.0


def events_stream_config(subjects: Subjects, *, replicas: int = 1) -> StreamConfig:
    """File storage, every event subject, the duplicate window above, ``replicas``."""
    return StreamConfig(
        name=subjects.events_stream,
        subjects=[subjects.events_wildcard],
        storage=StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
        num_replicas=replicas,
    )


async def ensure_events_stream(
    js: JetStreamContext, subjects: Subjects, *, replicas: int = 1
) -> bool:
    """Create the events stream when missing; True when this call created it."""
    try:
        await js.stream_info(subjects.events_stream)
        return False
    except NotFoundError:
        pass
    try:
        await js.add_stream(events_stream_config(subjects, replicas=replicas))
    except BadRequestError:
        # Another process created it between our look and our create: that one stands.
        await js.stream_info(subjects.events_stream)
        return False
    return True
