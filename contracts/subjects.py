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
# The operator queries (``sessionquery ui``): a service of their own, on subjects of their
# own, so a deployment's NATS permissions can grant them to operators only.
OPERATOR_SERVICE_NAME: Final = "session-query-operator"


@dataclass(frozen=True)
class Subjects:
    prefix: str = "sessionquery"
    events_stream: str = "SESSIONS"
    events_prefix: str = "sessions.events"
    deadletter: str = "sessions.deadletter"
    search_stream: str = "SESSIONQUERY_SEARCH"
    search_consumer: str = "sessionquery-search"
    spill_bucket: str = "sessionquery-spill"

    def tool(self, name: str, partition: int | None = None) -> str:
        """A tool's request subject: of one partition (``<prefix>.tool.<name>.p<k>``), or
        unpartitioned (served only by workers that hold every partition)."""
        if partition is None:
            return f"{self.prefix}.tool.{name}"
        return f"{self.prefix}.tool.{name}.p{partition}"

    @property
    def manifest(self) -> str:
        return f"{self.prefix}.manifest"

    def operator(self, verb: str) -> str:
        """An operator query's request subject (``<prefix>.operator.<verb>``)."""
        return f"{self.prefix}.operator.{verb}"

    @property
    def operator_wildcard(self) -> str:
        """Every operator subject: what an operator's NATS permissions grant."""
        return f"{self.prefix}.operator.>"

    @property
    def cancel(self) -> str:
        return f"{self.prefix}.cancel"

    @property
    def search_queue(self) -> str:
        """Subjects of the work-queue stream the search endpoints enqueue on."""
        return f"{self.prefix}.searchq"

    def search_queue_subject(self, tool: str, partition: int | None = None) -> str:
        if partition is None:
            return f"{self.search_queue}.{tool}"
        return f"{self.search_queue}.p{partition}.{tool}"

    def search_queue_filter(self, partition: int) -> str:
        return f"{self.search_queue}.p{partition}.>"

    @staticmethod
    def search_queue_parts(subject: str) -> tuple[int | None, str]:
        """(partition or None, tool) of a ``search_queue_subject``."""
        head, _, tool = subject.rpartition(".")
        token = head.rpartition(".")[2]
        if token.startswith("p") and token[1:].isdigit():
            return int(token[1:]), tool
        return None, tool

    # -- events: published as <prefix>.<key>.<session_id>, stored with the partition -----

    def events(self, key: str, session_id: str) -> str:
        """Where a publisher sends an event: the session's workspace key, then its id."""
        return f"{self.events_prefix}.{key}.{session_id}"

    @property
    def events_publish_wildcard(self) -> str:
        """The events stream's subjects: exactly two tokens after the prefix."""
        return f"{self.events_prefix}.*.*"

    def events_stored_form(self, count: int) -> str:
        """The stream's subject transform destination: the partition inserted first."""
        return (
            f"{self.events_prefix}.{{{{partition({count},1)}}}}"
            ".{{wildcard(1)}}.{{wildcard(2)}}"
        )

    def stored_events(self, partition: int) -> str:
        """Every stored event of one partition (an ingest consumer's filter)."""
        return f"{self.events_prefix}.{partition}.*.*"

    @property
    def events_wildcard(self) -> str:
        """Every stored event: ``<prefix>.<partition>.<key>.<session_id>``."""
        return f"{self.events_prefix}.*.*.*"

    def stored_session(self, key: str, session_id: str) -> str:
        """One session's stored events, whatever its partition (for a last-message look-up);
        ``key`` may be ``*`` when the session's workspace key is not known."""
        return f"{self.events_prefix}.*.{key}.{session_id}"

    @staticmethod
    def key_of_stored(subject: str) -> str:
        """The workspace key a stored (or published) event subject names."""
        return subject.rsplit(".", 2)[-2]
