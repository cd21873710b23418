"""Subject, stream and bucket names. The prefix is configurable; the rest is fixed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

TOOL_NAMES: Final = (
    "session_search",
    "session_event_search",
    "session_trace",
    "session_event_trace",
    "session_event_read",
)
SEARCH_TOOLS: Final = frozenset({"session_search", "session_event_search"})

SERVICE_NAME: Final = "session-query"


@dataclass(frozen=True)
class Subjects:
    prefix: str = "sessionquery"
    events_stream: str = "SESSIONS"
    events_prefix: str = "sessions.events"
    deadletter: str = "sessions.deadletter"
    search_stream: str = "SESSIONQUERY_SEARCH"
    search_consumer: str = "sessionquery-search"
    spill_bucket: str = "sessionquery-spill"

    def tool(self, name: str) -> str:
        return f"{self.prefix}.tool.{name}"

    @property
    def manifest(self) -> str:
        return f"{self.prefix}.manifest"

    @property
    def cancel(self) -> str:
        return f"{self.prefix}.cancel"

    @property
    def search_queue(self) -> str:
        """Subjects of the work-queue stream the search endpoints enqueue on."""
        return f"{self.prefix}.searchq"

    def search_queue_subject(self, tool: str) -> str:
        return f"{self.search_queue}.{tool}"

    def events(self, session_id: str) -> str:
        return f"{self.events_prefix}.{session_id}"

    @property
    def events_wildcard(self) -> str:
        return f"{self.events_prefix}.>"
