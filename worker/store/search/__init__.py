"""Search: the query compiler and text analysis, the tantivy index and its reader, ranking,
excerpts, the two searches, and semantic retrieval."""
