"""The index against its stream, as one report: what the index file says (read-only, the
worker may be running) and, given the stream's state, the lag and whether the index still
replicates that stream. The running worker serves it in ``$SRV.STATS``; ``sessionquery
status`` and ``doctor`` print it."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from worker.replica import semantic
from worker.replica.continuity import REBUILD_SUFFIX, StreamState, judge
from worker.store.files import file_reads, index_file, schema

# -- what the index file says --------------------------------------------------------------


def read_index(path: Path) -> dict[str, Any]:
    """The file's own report (no NATS): meta, dead letters by kind, size, rebuild."""
    report: dict[str, Any] = {"index": str(path), "exists": path.exists()}
    if path.exists():
        meta, dead_letters = file_reads.meta_and_dead_letters(path)
        report.update(_meta_fields(meta))
        report["dead_letters"] = dead_letters
        report["index_bytes"] = index_file.file_size(path)
        report["search_applied_seq"] = index_file.search_index_seq(path)
        report["semantic"] = semantic.lag_report(path)  # None: no vectors (semantic search off)
    rebuild = Path(f"{path}{REBUILD_SUFFIX}")
    report["rebuild_running"] = rebuild.exists()
    if rebuild.exists():
        try:
            report["rebuild_applied_seq"] = file_reads.meta_of(rebuild).get("stream_seq")
        except sqlite3.Error:
            report["rebuild_applied_seq"] = None
    return report


def _meta_fields(meta: dict[str, object]) -> dict[str, Any]:
    history_from = meta.get(index_file.HISTORY_FROM)
    return {
        "schema_version": schema.read_version_from(meta),
        "schema_version_supported": schema.SCHEMA_VERSION,
        "applied_seq": meta.get("stream_seq", 0),
        "epoch": meta.get("epoch"),
        "stream_name": meta.get(index_file.STREAM_NAME),
        "stream_created": meta.get(index_file.STREAM_CREATED),
        "partitions": index_file.held_partitions(meta),
        "index_id": meta.get(index_file.INDEX_ID),
        "history_unavailable_before": history_from if history_from else None,
    }


# -- with the stream -----------------------------------------------------------------------


async def index_status(
    config: Any, stream: StreamState | None, meta: dict[str, object] | None = None
) -> dict[str, Any]:
    """The whole report for ``config.db_path`` given the stream's state (None: unknown)."""
    report = await asyncio.to_thread(read_index, Path(config.db_path))
    if meta is not None:
        report.update({k: v for k, v in _meta_fields(meta).items() if v is not None})
    if stream is None:
        report["stream"] = None
        return report
    applied = int(report.get("applied_seq") or 0)
    report["stream"] = {
        "name": stream.name,
        "created": stream.created,
        "first_seq": stream.first_seq,
        "last_seq": stream.last_seq,
        "messages": stream.messages,
        "partition_count": stream.partitions,
        # The last stream sequence in the partitions the index holds.
        "held_last_seq": stream.target_seq,
    }
    # Stream sequences behind (events, when every partition is held).
    report["lag_events"] = max(0, stream.target_seq - applied)
    verdict = judge(meta if meta is not None else _as_meta(report), stream)
    report["matches_stream"] = verdict.action != "diverged"
    if verdict.action == "diverged":
        report["divergence"] = verdict.reason
    if report.get("rebuild_running"):
        report["rebuild_target_seq"] = stream.target_seq
    return report


def _as_meta(report: dict[str, Any]) -> dict[str, object]:
    return {
        "stream_seq": report.get("applied_seq") or 0,
        index_file.STREAM_NAME: report.get("stream_name"),
        index_file.STREAM_CREATED: report.get("stream_created"),
        index_file.STREAM_PARTITIONS: report.get("partitions"),
    }


async def lag_seconds(js: Any, stream: str, applied: int, last_seq: int) -> float:
    """Age of the oldest event the index has not applied (0 when caught up)."""
    if applied >= last_seq:
        return 0.0
    try:
        msg = await js.get_msg(stream, applied + 1, next=True)
    except Exception:
        return 0.0
    stamp = getattr(msg, "time", None)
    if not isinstance(stamp, datetime):
        return 0.0
    return max(0.0, (datetime.now(UTC) - stamp).total_seconds())
