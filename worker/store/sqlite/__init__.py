"""The SQLite provider of ``SessionQueryService``.

- ``pool``: where a read transaction runs (the loop's thread or a reader's), with the
  signal's interrupt and the rollback that keeps a reader usable.
- ``worker.store.sql`` and ``worker.store.results`` (a level below, since the search reads
  with them too and this package imports the search): the statements' text and the one
  builder of filter clauses; rows to results, read by column name.
- ``cursors``: the search cursor codec.
- ``reads``, ``search``, ``lineage``, ``operator_reads``: each read as build, run, map.
- ``search_files``: the search index and vector file beside the index file, as searches
  read them (swapped whole on a reopen).
- ``store``: ``SqliteSessionStore``, whose methods choose the pool's mode and the read
  (the operator's in ``operator_reads.SqliteOperatorReads``, which it extends).
"""

from worker.store.results import PREVIEW_CHARS
from worker.store.sqlite.store import LOOP_LINEAGE_ROWS, WAIT_POLL_S, SqliteSessionStore

__all__ = ["LOOP_LINEAGE_ROWS", "PREVIEW_CHARS", "WAIT_POLL_S", "SqliteSessionStore"]
