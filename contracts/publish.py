"""What a publisher of session events needs: the subject and the de-duplication id.

An event goes to ``sessions.events.<workspace key>.<session_id>`` (contracts.partitions):
the key is the session's cwd's, taken from its ``session/start``, for every event of the
session. ``EventRoutes`` remembers the key of each session whose start it has seen, for
publishers that send events one at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.partitions import workspace_key
from contracts.subjects import Subjects

MSG_ID_HEADER = "Nats-Msg-Id"


def msg_id(session_id: str, seq: int) -> str:
    """``Nats-Msg-Id`` of an event: the stream drops a repeat within its duplicate window."""
    return f"{session_id}:{seq}"


def event_headers(session_id: str, seq: int) -> dict[str, str]:
    return {MSG_ID_HEADER: msg_id(session_id, seq)}


class EventRoutes:
    """Session id -> workspace key, learnt from ``session/start`` events (or told)."""

    def __init__(self, subjects: Subjects | None = None) -> None:
        self.subjects = subjects or Subjects()
        self._keys: dict[str, str] = {}

    def remember(self, session_id: str, cwd: str | None) -> str:
        key = self._keys[session_id] = workspace_key(cwd)
        return key

    def key(self, session_id: str) -> str:
        try:
            return self._keys[session_id]
        except KeyError:
            raise LookupError(
                f"session {session_id}: its session/start (and so its cwd) is not known; "
                "publish the start first or call remember(session_id, cwd)"
            ) from None

    def subject(self, event: Mapping[str, Any]) -> str:
        """The subject of ``event`` (a decoded event object)."""
        session_id = str(event["session_id"])
        if event.get("type") == "session/start":
            payload = event.get("payload") or {}
            cwd = payload.get("cwd") if isinstance(payload, Mapping) else None
            self.remember(session_id, cwd if isinstance(cwd, str) else None)
        return self.subjects.events(self.key(session_id), session_id)
