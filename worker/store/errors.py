"""Errors the store raises. The tools' service boundary translates them for the model."""


class StoreError(Exception):
    """Base of every store failure. Its text is internal: it never reaches the model."""


class GenerationChanged(StoreError):
    """A cursor was issued under an epoch that a destructive change (purge, reindex) ended."""


class InvalidQuery(StoreError):
    """The full-text query has nothing searchable. Its message is model-safe by design."""


class InvalidCursor(StoreError):
    """A cursor could not be decoded. Cursors are internal, so this is a programming error."""
