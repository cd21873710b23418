"""Every error the store raises, under one root: ``StoreError``.

The store's modules re-export the classes they raise (``index_file.IndexLocked``,
``writer_protocol.BatchNotAttempted``, ...), so callers keep their imports; the classes live
here so the tree is read in one place (``worker.errors`` draws the whole tree). Their
text is internal: the tools' error table (``worker.tools.errors``) decides what a model
sees of each.
"""


class StoreError(Exception):
    """Base of every store failure. Its text is internal: it never reaches the model."""


# --- queries (what a tool call may meet) ---


class GenerationChanged(StoreError):
    """A cursor was issued under an epoch that a destructive change (purge, reindex) ended."""


class InvalidQuery(StoreError):
    """The full-text query has nothing searchable. Its message is model-safe by design."""


class InvalidCursor(StoreError):
    """A cursor could not be decoded. Cursors are internal, so this is a programming error."""


# --- the index file ---


class IndexFileError(StoreError):
    """The index file cannot be used as it is; the message names it and the remedy."""


class CorruptIndex(IndexFileError):
    """The index file fails its integrity check."""


class IndexLocked(IndexFileError):
    """Another process holds the index file's lock."""


class IndexFileReplaced(IndexFileError):
    """The index file a running worker opened is gone or another file took its place."""


class SnapshotRefused(StoreError):
    """A snapshot that cannot be used (its digest, manifest or contents do not check, or
    the home is not empty): the message says which check failed."""


class EmbedderUnavailable(StoreError):
    """The embedding model did not answer usably (unreachable, too slow, an HTTP error, a
    vector of the wrong size): semantic search falls behind, lexical search goes on. The
    message is a short fixed reason, never the server's text."""


class SchemaVersionError(StoreError):
    """An index made by a newer version of the worker: never opened, never overwritten."""


# --- the write path ---


class BatchNotAttempted(StoreError):
    """A chained apply that the writer did not try because the batch before it failed;
    nothing of it was written. Retry it after that batch."""


class IndexWriteStopped(StoreError):
    """The writer can no longer write the index its worker opened (the file was removed or
    replaced): retrying cannot help, ingestion stops. The message names the file."""


class WriterProcessError(StoreError):
    """The writer process refused a request (its transaction rolled back) or died."""


class IndexFileLost(WriterProcessError, IndexWriteStopped):
    """A writer started again found the index removed or replaced: ingestion stops."""
