"""The index file as a thing on disk: who owns it, what it replicates, whether it is sound.

- ``IndexLock``: ``<file>.lock`` beside the index, ``flock``-ed for the owner's life, with
  the owner's pid in it, so a second worker (or ``serve``) on the same file refuses.
- ``inspect``: opens an existing file (never creating one) and reports its schema version, stream
  identity and applied sequence after a time-bounded ``PRAGMA quick_check``; a file that
  fails the check raises ``CorruptIndex`` (it is never opened for writing).
- ``move_aside``: renames a file (and its WAL and shared-memory files) with a timestamp,
  so a corrupt or outdated index is kept, never deleted.

No NATS here: what the stream says is compared with this in ``worker.replica.continuity``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from worker.store import tables
from worker.store.database import Database
from worker.store.errors import CorruptIndex as CorruptIndex
from worker.store.errors import IndexFileError as IndexFileError  # re-exported
from worker.store.errors import IndexLocked as IndexLocked
from worker.store.files import schema

# Keys of the ``meta`` table that say which stream the index replicates.
STREAM_NAME: Final = "stream_name"
STREAM_CREATED: Final = "stream_created"
# The partitions of the stream the index holds (``all``, or e.g. ``0-7``): an index is
# rebuilt when its worker is set to hold others.
STREAM_PARTITIONS: Final = "stream_partitions"
# Set when the index started on a stream whose first sequence was past 1: history before
# this stream sequence was never available to it.
HISTORY_FROM: Final = "history_from"
# A random id written once when the file is created: the writer child checks it so it never
# writes into a different (or re-created) file than the one its worker opened.
INDEX_ID: Final = "index_id"

QUICK_CHECK_S: Final = 5.0
# What belongs to an index file and moves with it: SQLite's WAL and shm files, and the
# search index directory derived from it (worker.store.search.search_follower).
SIDE_FILES: Final = ("-wal", "-shm", ".search")


@dataclass(frozen=True, slots=True)
class IndexState:
    """What an existing index file says about itself."""

    path: str
    schema_version: int
    stream_seq: int
    stream_name: str | None
    stream_created: str | None
    stream_partitions: str | None  # the partition set it holds ("all"); None: not bound
    history_from: int
    index_id: str | None
    size_bytes: int
    empty: bool  # no table at all: a file SQLite created and nothing wrote


def inspect(path: str | Path, *, quick_check_s: float = QUICK_CHECK_S) -> IndexState | None:
    """The state of the index at ``path`` (None: no such file). Raises ``CorruptIndex``."""
    location = Path(path)
    if not location.exists():
        return None
    try:
        # Read-write, not read-only: after a crash the WAL may need recovering (the caller
        # holds the lock, so nothing else writes meanwhile); nothing here writes otherwise.
        conn = Database.open(location, "write", role="inspect")
    except sqlite3.Error as exc:
        raise CorruptIndex(_corrupt_message(location, str(exc))) from exc
    try:
        problem = _quick_check(conn, quick_check_s)
        if problem is not None:
            raise CorruptIndex(_corrupt_message(location, problem))
        table_count = conn.value(tables.TABLE_COUNT)
        meta = read_meta(conn)
    except sqlite3.DatabaseError as exc:
        raise CorruptIndex(_corrupt_message(location, str(exc))) from exc
    finally:
        conn.close()
    return IndexState(
        path=str(location),
        schema_version=schema.read_version_from(meta),
        stream_seq=_int(meta.get("stream_seq")),
        stream_name=_text(meta.get(STREAM_NAME)),
        stream_created=_text(meta.get(STREAM_CREATED)),
        stream_partitions=_text(meta.get(STREAM_PARTITIONS)),
        history_from=_int(meta.get(HISTORY_FROM)),
        index_id=_text(meta.get(INDEX_ID)),
        size_bytes=file_size(location),
        empty=table_count == 0,
    )


def read_meta(conn: Database) -> dict[str, object]:
    try:
        found, at = conn.rows(tables.META_ALL)
        key, value = at["key"], at["value"]
        return {str(r[key]): r[value] for r in found}
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise


def applied_seq(path: str | Path) -> int:
    """The stream sequence the index at ``path`` is complete through, read on a read-only
    connection of its own (for status, tests and tools outside the store); 0 when there is
    no file or no schema yet."""
    location = Path(path)
    if not location.exists():
        return 0
    try:
        conn = Database.open(location, "read", role="report")
        try:
            return _int(read_meta(conn).get("stream_seq"))
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0  # the schema is not created yet, or the file is not readable yet


def searchable_seq(path: str | Path) -> int:
    """The stream sequence the index at ``path`` is complete through, its search index
    included (what a search without ``step_start_seq`` sees); 0 before either exists."""
    stored = applied_seq(path)
    through = search_index_seq(path)
    return 0 if through is None else min(stored, through)


def search_index_seq(path: str | Path) -> int | None:
    """The stream sequence the search index's last commit covers (None: no search index,
    or one that cannot be read); below ``applied_seq``, searches miss the events between."""
    from worker.store.search.search_reader import SearchIndexReader  # tantivy only when asked

    try:
        reader = SearchIndexReader.open(path)
    except Exception:
        return None
    return None if reader is None else reader.position.stream_seq


def file_size(path: str | Path) -> int:
    """Bytes on disk of the index with its WAL and its search index."""
    total = 0
    for suffix in ("", *SIDE_FILES):
        for item in _files(Path(f"{path}{suffix}")):
            with contextlib.suppress(OSError):
                total += item.stat().st_size
    return total


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return [p for p in path.rglob("*") if p.is_file()]
    return [path]


def _quick_check(conn: Database, limit_s: float) -> str | None:
    """The first problem ``PRAGMA quick_check`` reports, or None. Bounded: past ``limit_s``
    the check is interrupted and the file is taken as it is (the full check is
    ``sessionquery doctor``'s)."""
    try:
        with conn.deadline(limit_s):
            found, at = conn.rows(tables.QUICK_CHECK)
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            return None
        raise
    said = at["quick_check"]
    problems = [str(r[said]) for r in found if r[said] != "ok"]
    return "; ".join(problems) if problems else None


def _corrupt_message(path: Path, problem: str) -> str:
    return f"index {path} is corrupt ({' '.join(problem.split())[:300]})"


def move_aside(path: str | Path, why: str) -> Path:
    """Rename the index (and its WAL and shm files) to ``<name>.<why>-<UTC time>``; returns
    the new name of the main file. Kept for inspection, never deleted."""
    location = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = location.with_name(f"{location.name}.{why}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = location.with_name(f"{location.name}.{why}-{stamp}-{n}")
    for suffix in SIDE_FILES:
        side = Path(f"{location}{suffix}")
        if side.exists():
            side.rename(f"{target}{suffix}")
    if location.exists():
        location.rename(target)
    return target


def remove_files(path: str | Path) -> None:
    """Remove an index file and its side files (a half-built rebuild)."""
    for suffix in ("", *SIDE_FILES):
        item = Path(f"{path}{suffix}")
        if item.is_dir():
            shutil.rmtree(item, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(item)


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def held_partitions(meta: Mapping[str, object]) -> str:
    """The partition set an index's meta records ("all" when it records none). The meta
    column has numeric affinity, so a one-partition set ("0") reads back as an integer:
    compare as text, never by truth value (0 is a partition)."""
    value = meta.get(STREAM_PARTITIONS)
    return "all" if value is None else str(value)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


class IndexLock:
    """An exclusive ``flock`` on ``<path>.lock``, held until ``release`` (or exit).

    The lock dies with the process (the kernel drops it), so a killed worker never leaves
    a stale lock; the pid written into the file only names the holder in messages.
    """

    def __init__(self, target: str | Path, *, what: str = "index") -> None:
        self.path = Path(f"{target}.lock")
        self._target = Path(target)
        self._what = what
        self._fd: int | None = None

    def acquire(self) -> IndexLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise IndexLocked(
                f"{self._what} {self._target} is in use by another sessionquery process"
                f" (pid {holder or 'unknown'}, lock {self.path}): stop that one, or give this"
                " one another --db / --home"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor drops the flock


def _read_pid(fd: int) -> int | None:
    try:
        raw = os.pread(fd, 32, 0).decode().strip()
        return int(raw) if raw else None
    except (OSError, ValueError):
        return None
