"""Workspaces and partitions: the pure functions every publisher and requester computes.

A session's **workspace key** is the first 16 lowercase hex digits of SHA-256 over its cwd
in UTF-8 (a session with no cwd: ``NO_CWD_KEY``). Events are published on
``sessions.events.<key>.<session_id>``. The events stream assigns each key to one of
``count`` **partitions** (fixed when the stream is created, written in its metadata):
``fnv1a_32(key as ASCII) mod count``, which is what nats-server's subject transform
``partition(count, 1)`` computes, so the stream and every client agree. A worker holds a
set of partitions and answers requests sent to those partitions' tool subjects. All data a
reply shows belongs to the caller's workspace, so no query ever crosses partitions.

docs/protocol.md §10 states the same rules for other languages, with test vectors.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from contracts.errors import SessionQueryClientError

KEY_HEX_DIGITS: Final = 16
# The key of a session whose session/start has no cwd (such a session sees only itself).
NO_CWD_KEY: Final = "0" * KEY_HEX_DIGITS
KEY_PATTERN: Final = re.compile(r"[0-9a-f]{16}")
DEFAULT_PARTITION_COUNT: Final = 16
MAX_PARTITION_COUNT: Final = 1024
# Where the events stream records its partition count (stream metadata, a decimal string).
PARTITIONS_METADATA_KEY: Final = "sessionquery_partitions"
PROTOCOL_METADATA_KEY: Final = "sessionquery_protocol"
PROTOCOL_MAJOR: Final = "2"

_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193


def workspace_key(cwd: str | None) -> str:
    """The workspace key of a cwd (``NO_CWD_KEY`` for none). Lone surrogates, which JSON
    escapes can carry, are encoded as their three UTF-8-style bytes ("surrogatepass")."""
    if cwd is None:
        return NO_CWD_KEY
    digest = hashlib.sha256(cwd.encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:KEY_HEX_DIGITS]


def fnv1a_32(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def partition_of(key: str, count: int) -> int:
    """The partition of a workspace key among ``count`` (nats-server's ``partition()``)."""
    return fnv1a_32(key.encode("ascii")) % count


def partition_of_cwd(cwd: str | None, count: int) -> int:
    return partition_of(workspace_key(cwd), count)


@dataclass(frozen=True, slots=True)
class PartitionScope:
    """The one partition a request was addressed to (its subject's), out of ``count``."""

    partition: int
    count: int

    def holds_cwd(self, cwd: str | None) -> bool:
        return partition_of_cwd(cwd, self.count) == self.partition


class PartitionSetError(SessionQueryClientError, ValueError):
    """A partition list that cannot be read, or names a partition the stream lacks."""


@dataclass(frozen=True, slots=True)
class PartitionSet:
    """The partitions a worker holds, out of ``count``. Written ``0-7,9`` or ``all``."""

    count: int
    members: frozenset[int]

    @classmethod
    def all(cls, count: int) -> PartitionSet:
        return cls(count, frozenset(range(count)))

    @classmethod
    def parse(cls, text: str, count: int) -> PartitionSet:
        """``all``, or comma-separated numbers and inclusive ranges (``0-3,8,10-11``)."""
        text = text.strip()
        if text == "all":
            return cls.all(count)
        members: set[int] = set()
        for part in text.split(","):
            first, sep, last = part.strip().partition("-")
            try:
                low = int(first)
                high = int(last) if sep else low
            except ValueError:
                raise PartitionSetError(
                    f"partitions {text!r}: expected 'all' or numbers and ranges like 0-7,9"
                ) from None
            if low > high:
                raise PartitionSetError(f"partitions {text!r}: range {part.strip()} is empty")
            if low < 0 or high >= count:
                raise PartitionSetError(
                    f"partitions {text!r}: the events stream has {count} partitions (0-{count - 1})"
                )
            members.update(range(low, high + 1))
        return cls(count, frozenset(members))

    @property
    def is_all(self) -> bool:
        return len(self.members) == self.count

    def __contains__(self, partition: object) -> bool:
        return partition in self.members

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self.members))

    def __len__(self) -> int:
        return len(self.members)

    def holds_cwd(self, cwd: str | None) -> bool:
        return partition_of_cwd(cwd, self.count) in self.members

    def __str__(self) -> str:
        """Canonical text: ``all``, else sorted ranges (``0-3,8``)."""
        if self.is_all:
            return "all"
        return ",".join(
            str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in _ranges(sorted(self.members))
        )

    @property
    def label(self) -> str:
        """The set as a name token (durable consumer, object names): ``all`` or ``p0-3_8``."""
        return "all" if self.is_all else "p" + str(self).replace(",", "_")


def _ranges(sorted_members: Iterable[int]) -> Iterator[tuple[int, int]]:
    start = prev = None
    for n in sorted_members:
        if start is None:
            start = prev = n
        elif prev is not None and n == prev + 1:
            prev = n
        else:
            assert prev is not None
            yield start, prev
            start = prev = n
    if start is not None and prev is not None:
        yield start, prev
