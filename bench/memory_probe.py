"""Where a process's anonymous memory is: a bench-only probe, never a runtime flag.

``smaps_summary(pid)`` reads ``/proc/<pid>/smaps`` from outside and sorts the anonymous
resident memory by kind of mapping: the main heap (``[heap]``), glibc's per-thread arenas
(64 MiB reservations), CPython's object arenas (1 MiB mappings), thread stacks and other
anonymous mappings (large allocations, Rust's, SQLite's; also CPython arenas that the
kernel merged with their neighbours into one mapping: the list of mappings tells them).

Inside a bench child started with ``SQ_BENCH_MEMORY=/tmp/prefix`` (``bench.child``), SIGUSR1
writes ``/tmp/prefix.<pid>.<n>.json``: RssAnon, glibc's ``mallinfo2``, per-arena
``malloc_info``, the gc-tracked objects by type, what ``malloc_trim(0)`` gives back (it
runs it: read the process before the report) and, with ``SQ_BENCH_MEMORY_TRACE=<frames>``
(tracemalloc started after the imports, which it would slow past the child's start
timeout), the biggest allocation sites and a snapshot for ``Snapshot.compare_to``.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import json
import os
import re
import tracemalloc
from pathlib import Path
from typing import Any, Final

from worker.memory import rss_anon_kib

TRACE_ENV: Final = "SQ_BENCH_MEMORY_TRACE"
_MIB: Final = 1024 * 1024
# glibc's per-thread heaps are reserved 64 MiB at a time (HEAP_MAX_SIZE on 64-bit).
_THREAD_ARENA_RESERVE: Final = 64 * _MIB
# CPython 3.10+ object arenas are 1 MiB mappings.
_OBJECT_ARENA: Final = _MIB
_HEADER = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$")


def smaps_summary(pid: int) -> dict[str, float]:
    """Anonymous resident MiB of ``pid`` by kind of mapping (and how many of each)."""
    kib: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    mappings = _anon_mappings(pid)
    # A thread arena is one rw mapping followed by its PROT_NONE rest; together 64 MiB.
    reserved = {start for start, end, _, _ in mappings if (end - start) == _THREAD_ARENA_RESERVE}
    for start, end, name, anon_kib in mappings:
        if anon_kib == 0:
            continue
        kind = _kind(start, end, name, reserved)
        kib[kind] += anon_kib
        count[kind] += 1
    out = {f"{kind} MiB": value / 1024 for kind, value in sorted(kib.items())}
    out.update({f"{kind} mappings": float(n) for kind, n in sorted(count.items())})
    return out


def anonymous_mappings(pid: int) -> list[tuple[str, int, int]]:
    """(start address, size KiB, Anonymous KiB) of each unnamed mapping holding some."""
    return [
        (hex(start), (end - start) // 1024, anon)
        for start, end, name, anon in _anon_mappings(pid)
        if anon and not name
    ]


def _anon_mappings(pid: int) -> list[tuple[int, int, str, int]]:
    """(start, end, name, Anonymous KiB) of each mapping; rw and PROT_NONE parts of one
    glibc heap are joined, so a thread arena shows as one 64 MiB reservation."""
    rows: list[tuple[int, int, str, str, int]] = []
    with open(f"/proc/{pid}/smaps", encoding="ascii", errors="replace") as smaps:
        for line in smaps:
            header = _HEADER.match(line)
            if header:
                start, end = int(header.group(1), 16), int(header.group(2), 16)
                rows.append((start, end, header.group(3), header.group(4).strip(), 0))
            elif line.startswith("Anonymous:") and rows:
                start, end, perms, name, _ = rows[-1]
                rows[-1] = (start, end, perms, name, int(line.split()[1]))
    joined: list[tuple[int, int, str, int]] = []
    for start, end, perms, name, anon in rows:
        if joined and perms == "---p" and not name and joined[-1][1] == start:
            first_start, _, first_name, first_anon = joined[-1]
            if not first_name:
                joined[-1] = (first_start, end, first_name, first_anon + anon)
                continue
        joined.append((start, end, name, anon))
    return joined


def _kind(start: int, end: int, name: str, reserved: set[int]) -> str:
    if name == "[heap]":
        return "main heap"
    if name.startswith("[stack"):
        return "stack"
    if name:
        return "file-backed (private copies)"
    if start in reserved and start % _THREAD_ARENA_RESERVE == 0:
        return "thread arenas"
    if end - start == _OBJECT_ARENA:
        return "1 MiB (CPython arenas)"
    if end - start == 8 * _MIB + 4096 or end - start == 8 * _MIB:
        return "thread stacks"
    return "other anonymous"


_MALLINFO2_FIELDS: Final = (
    "arena",
    "ordblks",
    "smblks",
    "hblks",
    "hblkhd",
    "usmblks",
    "fsmblks",
    "uordblks",
    "fordblks",
    "keepcost",
)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2_FIELDS]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def mallinfo2() -> dict[str, int]:
    """glibc's totals over all arenas (bytes); empty where there is no ``mallinfo2``."""
    try:
        call = _libc().mallinfo2
    except AttributeError:
        return {}
    call.restype = _MallInfo2
    info = call()
    return {name: int(getattr(info, name)) for name in _MALLINFO2_FIELDS}


def malloc_info_xml() -> str:
    """glibc's ``malloc_info``: one ``<heap>`` per arena with its free chunks."""
    libc = _libc()
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_size_t),
    ]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    buf, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    text = (buf.value or b"").decode("ascii", "replace")
    libc.free(buf)
    return text


def report(top: int = 40, snapshot_to: Path | None = None) -> dict[str, Any]:
    """This process's memory as the probe sees it (see the module's docstring)."""
    gc.collect()
    types: collections.Counter[str] = collections.Counter(
        type(obj).__qualname__ for obj in gc.get_objects()
    )
    out: dict[str, Any] = {
        "smaps": smaps_summary(os.getpid()),
        "anonymous_mappings": anonymous_mappings(os.getpid()),
        "mallinfo2": mallinfo2(),
        "gc_objects": sum(types.values()),
        "gc_types": types.most_common(top),
        "malloc_info": malloc_info_xml(),
    }
    # What glibc gives back now: were the free chunks above resident, and releasable?
    before = rss_anon_kib()
    out["malloc_trim_released"] = int(_libc().malloc_trim(0))
    out["rss_anon_kib_before_after_trim"] = [before, rss_anon_kib()]
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot()
        if snapshot_to is not None:
            snapshot.dump(str(snapshot_to))  # for Snapshot.compare_to between two workers
        out["traced_bytes"] = tracemalloc.get_traced_memory()[0]
        out["tracemalloc_top"] = [
            [str(stat.traceback), stat.size, stat.count]
            for stat in snapshot.statistics("traceback")[:top]
        ]
    return out


def install(prefix: str) -> None:
    """SIGUSR1 writes ``report()`` to ``<prefix>.<pid>.<n>.json`` (the running loop's);
    tracing starts here when ``TRACE_ENV`` asks for it."""
    import asyncio
    import signal

    if frames := int(os.environ.get(TRACE_ENV) or 0):
        tracemalloc.start(frames)
    written = 0

    def dump() -> None:
        nonlocal written
        written += 1
        path = Path(f"{prefix}.{os.getpid()}.{written}.json")
        path.write_text(json.dumps(report(snapshot_to=path.with_suffix(".tracemalloc")), indent=1))

    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump)
