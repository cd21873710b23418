"""Search cursors: opaque to callers, bound to their query and to the index's epoch.

A cursor carries the stream sequence its first page read as of, the offset, the search
mode (all words, or best partial matches) and a hash of everything its pages must share;
a purge moves the epoch, and a cursor from before it raises ``GenerationChanged``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
from typing import Final

import orjson

from worker.store.errors import GenerationChanged, InvalidCursor
from worker.store.protocol import EventFilter, Generation, SessionFilter

_CURSOR_VERSION: Final = 2


def binding(
    kind: str,
    query: str,
    scope: str,
    sessions: SessionFilter | None,
    events: EventFilter,
) -> str:
    """A short hash of everything a cursor's pages must share."""
    material = orjson.dumps(
        {
            "k": kind,
            "q": query,
            "s": scope,
            "sf": dataclasses.asdict(sessions) if sessions is not None else None,
            "ef": dataclasses.asdict(events),
        },
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(material).hexdigest()[:16]


@dataclasses.dataclass(frozen=True, slots=True)
class Resume:
    """Where a page starts: the first page's ``as_of_seq``, the offset, the search mode."""

    as_of_seq: int
    offset: int
    partial: bool  # best partial matches (no event held every word on the first page)


def encode(generation: Generation, offset: int, binding: str, *, partial: bool) -> str:
    body = orjson.dumps(
        {
            "v": _CURSOR_VERSION,
            "e": generation.epoch,
            "g": generation.seq,
            "o": offset,
            "h": binding,
            "p": int(partial),
        }
    )
    return base64.urlsafe_b64encode(body).decode("ascii").rstrip("=")


def resume(cursor: str | None, binding: str, current: Generation) -> Resume | None:
    """Where this page starts; None for a first page (it reads as of the current seq)."""
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = orjson.loads(raw)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise InvalidCursor("the cursor does not decode") from exc
    if (
        not isinstance(value, dict)
        or value.get("v") != _CURSOR_VERSION
        or value.get("h") != binding
        or not all(_is_count(value.get(key)) for key in ("e", "g", "o"))
        or value.get("p") not in (0, 1)
    ):
        raise InvalidCursor("the cursor does not belong to this query")
    if value["e"] != current.epoch:
        raise GenerationChanged(
            f"the index changed destructively (epoch {value['e']} -> {current.epoch})"
        )
    return Resume(int(value["g"]), int(value["o"]), partial=bool(value["p"]))


def _is_count(value: object) -> bool:
    # Bounded to SQLite's INTEGER range, so a forged value cannot overflow a binding.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63
