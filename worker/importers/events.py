"""Our own contract: one session event per line, published byte for byte.

Each line gets the event contract's checks (``contracts.events.validate_event``, the ones
the index writer makes per message); a line that fails is reported with its number and
skipped.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final

from contracts.events import Refusal, validate_event
from contracts.partitions import workspace_key
from worker.importers.base import Outgoing, Problem, Tally

NAME: Final = "events"


class EventsConverter:
    # The lines are checked here already; the pipeline need not check them again.
    validated: Final = True

    def __init__(self, path: Path, *, max_event_bytes: int) -> None:
        self.path = str(path)
        self.max_event_bytes = max_event_bytes
        self.tally = Tally()
        # Session -> workspace key, from the session/starts in this file; a session that
        # started in another file is looked up in the stream by the publisher.
        self._keys: dict[str, str] = {}

    def feed(self, line_no: int, line: bytes) -> list[Outgoing]:
        self.tally.lines += 1
        if not line.strip():
            return []
        event = validate_event(line, max_event_bytes=self.max_event_bytes)
        if isinstance(event, Refusal):
            self.tally.problems.append(Problem(self.path, line_no, event.reason))
            return []
        self.tally.events += 1
        if event.type == "session/start":
            self._keys[event.session_id] = workspace_key(event.payload.get("cwd"))
        key = self._keys.get(event.session_id)
        return [Outgoing(event.session_id, event.seq, line, key, kind=event.type)]

    def idle(self) -> list[Outgoing]:
        return []

    def finish(self) -> list[Outgoing]:
        return []

    def end_quiet(self, before: datetime) -> list[Outgoing]:
        # Our own events are published byte for byte: the publisher ends its sessions.
        return []
