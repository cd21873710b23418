"""Searches this process admitted and queued, handed to its own search lane.

A search is admitted at its endpoint (envelope parsed, arguments validated, query compiled)
and then travels through the fleet's work queue, which any worker's lane may fetch from.
When this process's lane fetches a message this process queued, it takes the admitted
value from here instead of admitting the bytes again; a message another process queued
(or one whose entry was evicted) is admitted once from its bytes. An entry is used only
for the very bytes it was admitted from, so a stale entry can never answer for another
request that reused the same de-duplication id.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from worker.tools import Admitted

# Searches queued by this process and not yet fetched by its lane, at most, and the bytes
# of their bodies: beyond either the oldest is dropped (its message is then admitted again
# from its bytes, once). Entries of messages another worker fetched are only ever dropped
# this way, so both bounds matter: a body may be as large as the server's max_payload.
CAPACITY: Final = 1024
CAPACITY_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Entry:
    data: bytes
    admitted: Admitted[Any]


class AdmittedHandoff:
    def __init__(self, capacity: int = CAPACITY, capacity_bytes: int = CAPACITY_BYTES) -> None:
        self._capacity = capacity
        self._capacity_bytes = capacity_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, msg_id: str, data: bytes, admitted: Admitted[Any]) -> None:
        """Keep ``admitted`` for the message of ``msg_id`` carrying ``data``; an entry of
        the same bytes already kept (the first of a resent request) stays."""
        kept = self._entries.get(msg_id)
        if kept is not None and kept.data == data:
            return
        self._drop(msg_id)
        self._entries[msg_id] = _Entry(data, admitted)
        self._bytes += len(data)
        while len(self._entries) > self._capacity or self._bytes > self._capacity_bytes:
            self._drop(next(iter(self._entries)))

    def forget(self, msg_id: str, admitted: Admitted[Any]) -> None:
        """Drop the entry ``put`` made for ``admitted`` (its message was never queued)."""
        kept = self._entries.get(msg_id)
        if kept is not None and kept.admitted is admitted:
            self._drop(msg_id)

    def take(self, msg_id: str, data: bytes) -> Admitted[Any] | None:
        """The value admitted from exactly ``data``, once; None when this process did not
        admit it (the caller admits the bytes itself)."""
        kept = self._drop(msg_id)
        return kept.admitted if kept is not None and kept.data == data else None

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def _drop(self, msg_id: str) -> _Entry | None:
        kept = self._entries.pop(msg_id, None)
        if kept is not None:
            self._bytes -= len(kept.data)
        return kept
