"""The index writer's memory, part by part, each bounded by a setting (issue 41).

Measured on an archive import (``bench.archive``), the writer child's RSS was the search
index writer's heap, SQLite's page cache and memory map of the file, and the analysis
caches of the search index (one entry per distinct word, up to a bound), besides the
interpreter and one batch in flight. Each has a setting here; the defaults aim at serve +
writer within 300 MiB (measured: ``docs/operations.md``, "Sizing"):

- ``search_heap_mib``: tantivy's indexing memory before it flushes a segment (its floor
  is 15 MiB per indexing thread; the writer uses one thread);
- ``search_commit_ms``: how often the search index commits while batches keep coming (a
  quiet writer commits at once); a commit flushes a segment and may start merges, so
  committing every batch cost as much as the indexing itself;
- ``sqlite_cache_mib``: the writer connection's page cache;
- ``sqlite_mmap_mib``: the writer connection's memory map of the file (mapped pages count
  in the process's RSS; the writer reads little, so none by default);
- ``analysis_cache_words``: distinct words whose analysis is kept (a Zipf-like vocabulary
  hits the cache; pasted hashes and ids do not, and are what fills it: on the archive
  corpus 50,000 and 4,000,000 words missed alike, 3% of the tokens; ~550 bytes a word);
- ``release_ms``: how often the writer child gives back what it no longer uses
  (``writer_pages``; 0: never): the search index's file pages its merges mapped, which
  otherwise count in its RSS and grow with the segments merged, and the allocator's free
  pages.

The serving process passes them to its writer child in the environment
(``LIMITS_ENV``), beside the redaction settings.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Final

import orjson

MIB: Final = 2**20
# Set by the parent (``PipeTransport``): the limits the child opens the index with.
LIMITS_ENV: Final = "SESSIONQUERY_WRITER_LIMITS"
# tantivy refuses less than 15 MB of heap per indexing thread.
MIN_SEARCH_HEAP_MIB: Final = 16


@dataclass(frozen=True, slots=True)
class WriterLimits:
    search_heap_mib: int = 32
    search_commit_ms: int = 1000
    sqlite_cache_mib: int = 16
    sqlite_mmap_mib: int = 0
    analysis_cache_words: int = 50_000
    release_ms: int = 500

    def __post_init__(self) -> None:
        if self.search_heap_mib < MIN_SEARCH_HEAP_MIB:
            raise ValueError(f"search_heap_mib must be at least {MIN_SEARCH_HEAP_MIB}")
        if (
            min(
                self.search_commit_ms,
                self.sqlite_cache_mib,
                self.sqlite_mmap_mib,
                self.release_ms,
            )
            < 0
        ):
            raise ValueError("writer limits must not be negative")
        if self.analysis_cache_words < 1:
            raise ValueError("analysis_cache_words must be at least 1")

    def to_json(self) -> str:
        return orjson.dumps(asdict(self)).decode()

    @classmethod
    def from_json(cls, raw: str) -> WriterLimits:
        return cls(**orjson.loads(raw))

    @classmethod
    def from_env(cls) -> WriterLimits:
        raw = os.environ.get(LIMITS_ENV)
        return cls.from_json(raw) if raw else cls()


DEFAULT_LIMITS: Final = WriterLimits()
