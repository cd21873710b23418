"""The index as a replica of the SESSIONS stream: ingestion, continuity and the rebuild,
snapshots, the semantic follower, and the report of the index against its stream."""
