"""The one way into SQLite: every connection the worker opens is a ``Database``.

In the manner of sqlite-utils' ``Database``: ``Database.open`` is the only place a
connection is made (read-only, read-write or creating; the pragmas of the file's profile;
the busy timeout), and every statement runs through its methods. Rows come back as plain
tuples with their ``Columns`` (positions by name, resolved once per statement text), so
callers read them by column name at the cost of a tuple index (``sqlite3.Row`` compares
names case-insensitively on every access, ~0.4 us a value measured). ``tracing`` installs a
hook that sees each statement with the role of the database that ran it (tests, debugging).

The statements themselves are named constants: per table in ``tables``; the request
path's joins in ``store.sql``; the batch's inserts in ``index.writer_core``. This module runs
them. It sits beside the protocol, not in ``sqlite/``, so the writer and the search index
import it without loading the reader provider.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any, Final, Literal

import structlog

from worker.store.event_codec import EventCodec
from worker.store.tables import EVENT_NAMES, HEADER_NAMES

log = structlog.get_logger(__name__)

Params = Sequence[Any] | Mapping[str, Any]
# What a tracer is told: the role of the database ("reader", "writer", ...) and the SQL.
Tracer = Callable[[str, str], None]
# "read": an existing file, read-only; "write": an existing file, read-write (never
# creates one); "create": read-write, created when missing.
Access = Literal["read", "write", "create"]

# Column positions by statement text: the store's statements are constants, so their
# columns are resolved once (bounded anyway, should a caller build statements on the fly).
_COLUMNS: dict[str, Columns] = {}
_COLUMNS_KEPT: Final = 256
_BUSY_TIMEOUT_S: Final = 5.0

# Reads go through a memory map of the index file instead of a read() per page into each
# connection's 2 MiB page cache: on a 1M-event index (1 GiB) an exact read took 365 us in
# the tool layer with read() and 88 us mapped. The pages are the OS page cache, shared by
# every connection and process, not heap. SQLite clamps this to its build's maximum
# (2 GiB for the stdlib's SQLite); past that the rest of the file is read with read().
MMAP_BYTES: Final = 64 * 2**30


@dataclass(frozen=True, slots=True)
class Pragmas:
    """The pragmas a file's connections are opened with (besides the busy timeout)."""

    wal: bool = False  # journal_mode WAL with synchronous NORMAL
    foreign_keys_off: bool = False
    mmap_bytes: int = 0
    query_only: bool = False
    cache_kib: int = 0  # the page cache's bound; 0: SQLite's default (2 MiB)

    def statements(self) -> list[str]:
        """The PRAGMA statements, in order (a bench floor runs them on a bare connection)."""
        wal = ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL"] if self.wal else []
        return [
            *wal,
            *(["PRAGMA foreign_keys = OFF"] if self.foreign_keys_off else []),
            *([f"PRAGMA mmap_size = {self.mmap_bytes}"] if self.mmap_bytes else []),
            *([f"PRAGMA cache_size = -{self.cache_kib}"] if self.cache_kib else []),
            *(["PRAGMA query_only = 1"] if self.query_only else []),
        ]


# The index file: WAL (readers never block the writer), no foreign keys, mapped reads.
INDEX: Final = Pragmas(wal=True, foreign_keys_off=True, mmap_bytes=MMAP_BYTES)
# The index file's readers: the same, and refused any write.
INDEX_READER: Final = Pragmas(
    wal=True, foreign_keys_off=True, mmap_bytes=MMAP_BYTES, query_only=True
)
# The vector file beside the index: WAL, written by the semantic follower alone.
VECTORS: Final = Pragmas(wal=True)
# Whatever the file already says (a check, a report, a copy).
AS_IS: Final = Pragmas()

Row = Sequence[Any]
_Values = Callable[[Row], tuple[Any, ...]]


class Columns(Mapping[str, int]):
    """Column positions by name (the first of a repeated name), in column order: the row
    factory. A row stays a plain tuple (nothing is built per row) and is read by name at
    the cost of a tuple index. The header's and the event's names are resolved to one
    ``itemgetter`` each, so a row's eight header values cost one C call rather than eight
    lookups (read_titles of 20 sessions measured ~5% slower with a lookup per value).
    ``sqlite3.Row`` would read by name too, but it compares names case-insensitively on
    every access: ~0.4 us a value measured, which a 101-event window pays 1,500 times."""

    __slots__ = ("_at", "event_values", "header_values")

    def __init__(self, names: Iterable[str]) -> None:
        self._at: dict[str, int] = {}
        for i, name in enumerate(names):
            self._at.setdefault(name, i)
        # The values of the header's and the event's columns, in HEADER_NAMES/EVENT_NAMES
        # order (raising KeyError when the statement does not select them all).
        self.header_values = self.getter(HEADER_NAMES)
        self.event_values = self.getter(EVENT_NAMES)

    def getter(self, names: Sequence[str]) -> _Values:
        """A getter of a row's values of ``names`` (two or more), in that order: one C call
        a row (raising KeyError when the statement does not select them all)."""
        missing = [name for name in names if name not in self._at]
        if missing:
            return partial(_not_selected, missing)
        return itemgetter(*(self._at[name] for name in names))

    def __getitem__(self, name: str) -> int:
        return self._at[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


def _not_selected(missing: list[str], row: Row) -> tuple[Any, ...]:
    raise KeyError(f"the statement selects no {', '.join(missing)}")


def columns(description: Sequence[Sequence[Any]]) -> Columns:
    """The columns of a cursor's ``description``."""
    return Columns(column[0] for column in description)


# One statement's rows (plain tuples) and their column positions by name. A plain tuple:
# a NamedTuple's construction cost ~0.3 us a statement, event_relations runs five.
Result = tuple[list[tuple[Any, ...]], Columns]

# How the search reads: SQL text and its named parameters in, rows with their columns out
# (in one read transaction the caller holds).
Fetch = Callable[[str, Mapping[str, Any]], Result]

_tracer: Tracer | None = None


@contextlib.contextmanager
def tracing(tracer: Tracer) -> Iterator[None]:
    """Tell ``tracer`` every statement any ``Database`` of this process runs meanwhile."""
    global _tracer
    before, _tracer = _tracer, tracer
    try:
        yield
    finally:
        _tracer = before


class Database:
    """One SQLite connection and the statements run on it (see the module docstring).

    Autocommit (``isolation_level=None``): transactions are explicit (``transaction``, or
    BEGIN/COMMIT run by the caller). Usable from any thread, one at a time."""

    __slots__ = ("_sqlite", "codec", "role")

    def __init__(self, conn: sqlite3.Connection, role: str) -> None:
        self._sqlite = conn
        self.role = role
        # The connection's frames reader: its SQL functions, and reads that decode rows in
        # Python (a window: no SQL function call per column, ``reads.event_window``).
        self.codec = EventCodec(self.value)

    @classmethod
    def open(
        cls,
        path: str | Path,
        access: Access = "create",
        *,
        pragmas: Pragmas = AS_IS,
        role: str,
        busy_timeout_s: float = _BUSY_TIMEOUT_S,
    ) -> Database:
        """Open ``path``; raises ``sqlite3.Error`` (a missing file for "read"/"write")."""
        if access == "create":
            target, uri = str(path), False
        else:
            target, uri = f"file:{path}?mode={'ro' if access == 'read' else 'rw'}", True
        conn = sqlite3.connect(
            target,
            uri=uri,
            timeout=busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        db = cls(conn, role)
        try:
            db._configure(pragmas)
            # Every connection reads events the same way: their stored frames (event_codec).
            db.codec.define(db.define_function)
        except BaseException:
            conn.close()
            raise
        return db

    def _configure(self, pragmas: Pragmas) -> None:
        for statement in pragmas.statements():
            self.run(statement)

    # -- statements ----------------------------------------------------------------------

    def rows(self, sql: str, params: Params = ()) -> Result:
        """The rows with their columns by name (``rows`` reads them so)."""
        if _tracer is not None:
            _tracer(self.role, sql)
        cursor = self._sqlite.execute(sql, params)
        at = _COLUMNS.get(sql)
        if at is None:
            at = columns(cursor.description)
            if len(_COLUMNS) < _COLUMNS_KEPT:
                _COLUMNS[sql] = at
        return cursor.fetchall(), at

    def stream(self, sql: str, params: Params = ()) -> tuple[Iterator[tuple[Any, ...]], Columns]:
        """As ``rows``, the rows read as they are iterated (a whole table's scan)."""
        if _tracer is not None:
            _tracer(self.role, sql)
        cursor = self._sqlite.execute(sql, params)
        return iter(cursor), columns(cursor.description)

    def value(self, sql: str, params: Params = ()) -> Any:
        """The single value a one-column statement selects; None when it finds no row."""
        if _tracer is not None:
            _tracer(self.role, sql)
        row = self._sqlite.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def run(self, sql: str, params: Params = ()) -> None:
        """A statement whose rows (if any) nobody reads: a write, a pragma, BEGIN."""
        if _tracer is not None:
            _tracer(self.role, sql)
        self._sqlite.execute(sql, params)

    def run_many(self, sql: str, params: Iterable[Params]) -> None:
        if _tracer is not None:
            _tracer(self.role, sql)
        self._sqlite.executemany(sql, params)

    def script(self, sql: str) -> None:
        """Several statements (a schema); commits any open transaction first."""
        if _tracer is not None:
            _tracer(self.role, sql)
        self._sqlite.executescript(sql)

    # -- transactions --------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        return self._sqlite.in_transaction

    @contextlib.contextmanager
    def transaction(self, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
        """``begin`` … COMMIT; rolled back when the body raises."""
        self.run(begin)
        try:
            yield
            self.run("COMMIT")
        except BaseException:
            # SQLite rolls back by itself on some errors (disk full, I/O): nothing is open
            # then, and a ROLLBACK would only fail with "no transaction is active". A failed
            # ROLLBACK is logged, and the body's own error raised.
            if self.in_transaction:
                try:
                    self.run("ROLLBACK")
                except sqlite3.Error:
                    log.warning("rollback failed", role=self.role, exc_info=True)
            raise

    def rollback(self) -> None:
        """End the open transaction, if any, quietly (a failed ROLLBACK leaves it open:
        the next ``transaction`` finds it so)."""
        with contextlib.suppress(sqlite3.Error):
            if self.in_transaction:
                self.run("ROLLBACK")

    # -- the connection itself -----------------------------------------------------------

    def define_function(self, name: str, args: int, function: Callable[..., Any]) -> None:
        """An SQL function of this connection's statements (deterministic: same arguments,
        same result, so SQLite may use it in an index or factor it out)."""
        self._sqlite.create_function(name, args, function, deterministic=True)

    def interrupt(self) -> None:
        """Abort the statement running on another thread (``sqlite3_interrupt``)."""
        self._sqlite.interrupt()

    def on_progress(self, handler: Callable[[], int] | None, every: int = 0) -> None:
        """Call ``handler`` every ``every`` VM steps of a statement; a true result
        interrupts it (None: no handler). Set while the connection is idle."""
        self._sqlite.set_progress_handler(handler, every)

    @contextlib.contextmanager
    def deadline(self, limit_s: float) -> Iterator[None]:
        """Statements run meanwhile are interrupted past ``limit_s`` ("interrupted")."""
        ends = time.monotonic() + limit_s
        self.on_progress(lambda: int(time.monotonic() > ends), 10_000)
        try:
            yield
        finally:
            self.on_progress(None)

    def copy_into(self, target: Database) -> None:
        """The whole file into ``target`` in one backup step (one read transaction)."""
        if _tracer is not None:
            _tracer(self.role, "-- backup")
        self._sqlite.backup(target._sqlite, pages=-1)

    def close(self) -> None:
        self._sqlite.close()
