"""The index writer's memory limits from the worker's settings (``writer_*``)."""

from __future__ import annotations

from worker.config import WorkerConfig
from worker.store.index.writer_limits import WriterLimits


def writer_limits(config: WorkerConfig) -> WriterLimits:
    return WriterLimits(
        search_heap_mib=config.writer_search_heap_mib,
        search_commit_ms=config.writer_search_commit_ms,
        sqlite_cache_mib=config.writer_sqlite_cache_mib,
        sqlite_mmap_mib=config.writer_sqlite_mmap_mib,
        analysis_cache_words=config.writer_analysis_cache_words,
        release_ms=config.writer_release_ms,
    )
