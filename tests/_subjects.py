"""Stream, subject and bucket names no other test uses."""

from __future__ import annotations

import uuid

from contracts.subjects import Subjects


def unique_subjects(unique: str | None = None) -> Subjects:
    """Names built on ``unique`` (a fresh token when omitted)."""
    unique = unique or uuid.uuid4().hex[:10]
    tag = unique.upper()
    return Subjects(
        prefix=f"sq{unique}",
        events_stream=f"SESSIONS_{tag}",
        events_prefix=f"ev{unique}.events",
        deadletter=f"ev{unique}.deadletter",
        search_stream=f"SEARCH_{tag}",
        search_consumer=f"search-{unique}",
        spill_bucket=f"spill-{unique}",
    )
