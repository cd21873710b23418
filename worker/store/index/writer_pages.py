"""What the writer child no longer uses, given back while it runs (issue 41): the search
index's file pages its merges mapped, and the allocator's free pages.

tantivy reads segments through memory maps. In the writer child that is its merges: a
merge reads every page of its source segments, and each page it touched counts in the
child's RSS until the merge ends and the sources are unmapped. That grows with the
archive (a merge of larger segments): on a 1M-event import the child held 143 MiB of
them. Every ``release_ms`` a thread asks the kernel to reclaim those pages
(``madvise(MADV_PAGEOUT)`` on each mapping of a file in the search index's directory),
then gives back the allocator's free pages (``malloc_trim``: what tantivy's merge and
indexing threads freed stays in glibc's per-thread arenas otherwise).

Why this advice and no other: it never changes what a mapping reads (a page reclaimed is
read again from the file when touched), so a mapping unmapped and its address reused
between reading ``/proc/self/maps`` and the call loses nothing (``MADV_DONTNEED`` would
zero an anonymous mapping there). The kernel leaves pages another process maps (serve's
searches) and dirty ones alone; the pages it drops are mostly sources of a running merge,
deleted when it ends. Linux 5.4 or later; elsewhere (or refused) it logs once and stops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

import structlog

from worker.memory import trim_allocator

log = structlog.get_logger(__name__)

MADV_PAGEOUT: Final = 21
# The thread's name, also the OS's (``ps -T``, /proc/<pid>/task/*/comm).
THREAD_NAME: Final = "writer-release"
_PR_SET_NAME: Final = 15


def _madvise() -> Callable[[int, int, int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    fn.restype = ctypes.c_int
    call: Callable[[int, int, int], int] = fn
    return call


def mappings_under(directory: Path, maps: str) -> list[tuple[int, int]]:
    """(start, length) of each mapping in ``maps`` (``/proc/<pid>/maps`` text) of a file
    inside ``directory``."""
    prefix = str(directory).rstrip("/") + "/"
    found: list[tuple[int, int]] = []
    for line in maps.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith(prefix):
            continue
        start, _, end = parts[0].partition("-")
        low, high = int(start, 16), int(end, 16)
        found.append((low, high - low))
    return found


class SearchPager:
    """Gives back the pages of the search index's files mapped in this process."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._madvise = _madvise()
        self.disabled = self._madvise is None
        self.calls = 0

    def release(self) -> int:
        """Advise every mapping of a file under the directory out; the bytes advised."""
        if self.disabled or self._madvise is None:
            return 0
        try:
            with open("/proc/self/maps", encoding="ascii", errors="replace") as fh:
                maps = fh.read()
        except OSError:
            self.disabled = True
            return 0
        advised = 0
        for start, length in mappings_under(self.directory, maps):
            if self._madvise(start, length, MADV_PAGEOUT) == 0:
                advised += length
                continue
            err = ctypes.get_errno()
            if err in (errno.EINVAL, errno.ENOSYS, errno.EPERM):
                # An older kernel, or a sandbox that refuses it: nothing to give back with.
                log.warning("search pages are not given back", errno=errno.errorcode.get(err))
                self.disabled = True
                return advised
            # ENOMEM: unmapped since the maps were read; nothing to do.
        self.calls += 1
        return advised

    def release_all(self) -> None:
        """The search index's pages, then the allocator's free pages."""
        self.release()
        trim_allocator()

    def start(self, every_s: float) -> threading.Event | None:
        """A daemon thread releasing every ``every_s``; set the event to stop it. None
        when ``every_s`` is 0 (never)."""
        if every_s <= 0:
            return None
        stop = threading.Event()

        def loop() -> None:
            _name_thread(THREAD_NAME)
            while not stop.wait(every_s):
                self.release_all()

        threading.Thread(target=loop, name=THREAD_NAME, daemon=True).start()
        return stop


def _name_thread(name: str) -> None:
    """The calling thread's OS name (Linux; a no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass
