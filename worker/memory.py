"""This process's memory: giving back what a burst of work left, and reading what it holds.

Shared by every layer (it imports nothing from ``worker``): the ingest actor releases after
a burst (``worker.replica.ingest_actor``), and the benches read RssAnon with the same reader.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable


def release_memory() -> None:
    """Give back what a burst of batches left: the cyclic garbage of its messages and
    parsed events (gc.collect freed ~11 MiB after 100k events), then the allocator's free
    pages (malloc_trim: ~13 MiB more); glibc keeps both otherwise. Measured: RssAnon
    after ingesting 100k events 104 -> 80 MiB; since the feed's backlog (issue 31)
    74 -> 41 MiB. A no-op where libc has no malloc_trim."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def trim_allocator() -> None:
    """The allocator's free pages given back (malloc_trim, every arena), without the
    collection: for threads that allocate natively (the writer child's release thread,
    ``worker.store.index.writer_pages``). A no-op where libc has no malloc_trim."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def rss_anon_kib() -> int | None:
    """This process's RssAnon (its own memory) from /proc, or None where there is none."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim
