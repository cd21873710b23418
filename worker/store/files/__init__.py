"""The index as files on disk: the lock and ownership, the schema, integrity checks, and the
snapshot archive."""
