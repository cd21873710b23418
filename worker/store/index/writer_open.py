"""Opening the index for writing: create, migrate or refuse; or reopen the very file a
running worker opened (a writer started again must never create a fresh empty one)."""

from __future__ import annotations

import sqlite3
import uuid

import structlog

from worker.store.errors import IndexFileReplaced as IndexFileReplaced
from worker.store.files import index_file, schema

log = structlog.get_logger(__name__)


def open_existing(location: str, expect_index_id: str) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(f"file:{location}?mode=rw", uri=True, isolation_level=None)
    except sqlite3.OperationalError as exc:
        raise IndexFileReplaced(
            f"index {location} is missing: it was removed while the worker ran; ingestion"
            " stopped (restart the worker: it rebuilds the index from the stream)"
        ) from exc
    try:
        schema.configure(conn)
        found = str(index_file.read_meta(conn).get(index_file.INDEX_ID))
    except BaseException:
        conn.close()
        raise
    if found != expect_index_id:
        conn.close()
        raise IndexFileReplaced(
            f"index {location} was replaced while the worker ran (index id {found},"
            f" expected {expect_index_id}); ingestion stopped (restart the worker)"
        )
    return conn


def prepare_schema(conn: sqlite3.Connection, location: str) -> None:
    """Create a new index, migrate an older one in place, or refuse one this writer cannot
    take (newer, or older without a migration: those are rebuilt from the stream first)."""
    fresh = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    if not fresh:
        action = schema.version_action(schema.read_version(conn), location)
        if action == "rebuild":
            raise index_file.IndexFileError(
                f"index {location} has schema version {schema.read_version(conn)} and no"
                f" migration to {schema.SCHEMA_VERSION}: it must be rebuilt from the stream"
            )
        if action == "migrate":
            found = schema.migrate(conn)
            log.info("index migrated", path=location, from_version=found, to=schema.SCHEMA_VERSION)
    schema.create(conn)
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
        (index_file.INDEX_ID, "ix-" + uuid.uuid4().hex),  # text, never an integer
    )
