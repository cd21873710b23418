"""Opening the index for writing: create, migrate or refuse; or reopen the very file a
running worker opened (a writer started again must never create a fresh empty one)."""

from __future__ import annotations

import sqlite3
import uuid

import structlog

from worker.store import tables
from worker.store.database import INDEX, Database, Pragmas
from worker.store.errors import IndexFileReplaced as IndexFileReplaced
from worker.store.files import index_file, schema

log = structlog.get_logger(__name__)


def open_existing(location: str, expect_index_id: str, pragmas: Pragmas = INDEX) -> Database:
    try:
        conn = Database.open(location, "write", pragmas=pragmas, role="writer")
    except sqlite3.OperationalError as exc:
        raise IndexFileReplaced(
            f"index {location} is missing: it was removed while the worker ran; ingestion"
            " stopped (restart the worker: it rebuilds the index from the stream)"
        ) from exc
    try:
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


def prepare_schema(conn: Database, location: str) -> None:
    """Create a new index, migrate an older one in place, or refuse one this writer cannot
    take (newer, or older without a migration: those are rebuilt from the stream first)."""
    fresh = conn.value(tables.TABLE_COUNT) == 0
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
    conn.run(
        tables.META_PUT_NEW,
        (index_file.INDEX_ID, "ix-" + uuid.uuid4().hex),  # text, never an integer
    )
