"""What a queued search carries on the work queue: one versioned document, no repeats.

The endpoint that admitted a search puts one JSON object on the queue:
``{"v": 1, "reply": <the requester's reply subject>, "deadline_ms": <effective deadline
or null>, "request": <the envelope as the requester sent it>}``; the only header is the
stream's ``Nats-Msg-Id`` (de-duplication). The envelope rides inside unchanged
(``orjson.Fragment``: not encoded again), so the worker that fetches it admits exactly
what the endpoint admitted; the lane that queued it takes its admitted value instead
(``admitted_handoff``). The tool and partition are the queue subject's.

Every version keeps ``v``, ``reply`` and ``deadline_ms`` at the top, so a worker that
cannot read a newer version still knows whom to answer, and by when, if it has to give
the message up. A message without
``v`` and with the lane's former headers (request id, reply subject, deadline beside a
raw envelope) is read as version 0: searches queued by a worker of the previous release
are still answered during a rolling upgrade. No NATS and no I/O here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from contracts.ids import ID_PATTERN

QUEUE_FORMAT: Final = 1
_ID: Final = re.compile(ID_PATTERN)

# Version 0 (before the queue had a format): headers beside the raw envelope.
LEGACY_REQUEST_ID_HEADER: Final = "Sessionquery-Request-Id"
LEGACY_REPLY_HEADER: Final = "Sessionquery-Reply"
LEGACY_DEADLINE_HEADER: Final = "Sessionquery-Deadline-Ms"


@dataclass(frozen=True, slots=True)
class QueuedSearch:
    """A fetched search this worker can run: whom to answer, by when, and the request."""

    request_id: str  # a valid id, or "" (answers never echo arbitrary input)
    reply_to: str
    deadline_ms: int | None
    envelope: Any  # the request as sent; admitted (validated) by the fetching lane


@dataclass(frozen=True, slots=True)
class NewerFormat:
    """A search queued by a newer worker: left for a worker that reads ``version``."""

    version: int
    reply_to: str
    deadline_ms: int | None
    request_id: str


def encode(envelope: bytes, reply_to: str, deadline_ms: int | None) -> bytes:
    """The queue message body for a search whose valid envelope is ``envelope``."""
    return orjson.dumps(
        {
            "v": QUEUE_FORMAT,
            "reply": reply_to,
            "deadline_ms": deadline_ms,
            "request": orjson.Fragment(envelope),
        }
    )


def decode(data: bytes, headers: Mapping[str, str] | None) -> QueuedSearch | NewerFormat | None:
    """What a fetched message carries; None when it is malformed (terminated unanswered:
    there is no one to answer)."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict):
        return None
    version = document.get("v")
    if version is None:
        return _legacy(document, headers or {})
    reply_to = document.get("reply")
    if not _is_int(version) or not isinstance(reply_to, str) or not reply_to:
        return None
    envelope, deadline = document.get("request"), document.get("deadline_ms")
    if deadline is not None and not _is_int(deadline):
        return None
    if version > QUEUE_FORMAT:
        return NewerFormat(version, reply_to, deadline, _request_id(envelope))
    if version != QUEUE_FORMAT or not isinstance(envelope, dict):
        return None
    return QueuedSearch(_request_id(envelope), reply_to, deadline, envelope)


def _legacy(envelope: dict[str, Any], headers: Mapping[str, str]) -> QueuedSearch | None:
    rid = _valid_id(headers.get(LEGACY_REQUEST_ID_HEADER, ""))
    reply_to = headers.get(LEGACY_REPLY_HEADER, "")
    if not rid or not reply_to:
        return None
    deadline = headers.get(LEGACY_DEADLINE_HEADER)
    deadline_ms = int(deadline) if deadline is not None and deadline.isdigit() else None
    return QueuedSearch(rid, reply_to, deadline_ms, envelope)


def _request_id(envelope: object) -> str:
    rid = envelope.get("request_id") if isinstance(envelope, dict) else None
    return _valid_id(rid) if isinstance(rid, str) else ""


def _valid_id(rid: str) -> str:
    return rid if _ID.fullmatch(rid) else ""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
