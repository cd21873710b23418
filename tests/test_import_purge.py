"""``sessionquery import`` and ``sessionquery purge``, run as the real command."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._events import event
from tests._index import connect
from worker.commands.purge import InvalidDuration, parse_duration_ms
from worker.replica.ingest_consumer import EventConsumer
from worker.store.files.integrity import check_integrity
from worker.store.index.writer import SqliteIndexWriter
from worker.store.writer_protocol import IngestItem


def sessionquery(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", *args], capture_output=True, timeout=60
    )
    # Decoded by hand: text mode would turn the progress line's \r into \n.
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def import_args(path: Path, nats_url: str, subjects: Subjects) -> list[str]:
    return [
        "import", str(path),
        "--nats-url", nats_url,
        "--stream", subjects.events_stream,
        "--events-prefix", subjects.events_prefix,
        "--window", "7",
    ]  # fmt: skip


async def ingest_all(nc: NATS, db: Path, subjects: Subjects, through: int) -> tuple[int, int]:
    async with await SqliteIndexWriter.open(db) as writer:
        consumer = EventConsumer(nc, writer, subjects=subjects, batch_ms=10, idle_heartbeat_s=0.5)
        task = asyncio.create_task(consumer.run())
        await asyncio.wait_for(consumer.actor.wait_applied(through), 20)
        consumer.stop()
        await task
        return consumer.actor.stats.applied, consumer.actor.stats.duplicates


async def test_import_publishes_once_and_reports_bad_lines(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    good = [event("s-1", 1, "session/start"), *(event("s-1", n) for n in range(2, 41))]
    lines = [*good[:10], b"", b"{broken", *good[10:20], event("s-2", 1, surface="x"), *good[20:]]
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\r\n".join(lines) + b"\n")  # CRLF line endings are accepted too

    first = await asyncio.to_thread(sessionquery, *import_args(path, nats_url, subjects))
    assert first.returncode == 1, first.stderr  # invalid lines make the exit code non-zero
    assert f"{path}:12: invalid JSON: " in first.stderr
    assert f"{path}:23: contract violation: surface: " in first.stderr
    assert "published 40 events (0 already in the stream), 2 invalid lines skipped" in first.stderr
    # Not a terminal: the progress is plain lines (no carriage returns), the last at 100%.
    assert "import: 100%" in first.stderr and "\r" not in first.stderr

    js = nc.jetstream()
    assert (await js.stream_info(subjects.events_stream)).state.messages == 40

    # The same file again: the stream drops every event by its Nats-Msg-Id.
    second = await asyncio.to_thread(sessionquery, *import_args(path, nats_url, subjects))
    assert second.returncode == 1
    assert "published 40 events (40 already in the stream)" in second.stderr
    assert (await js.stream_info(subjects.events_stream)).state.messages == 40

    db = tmp_path / "index.sqlite"
    applied, duplicates = await ingest_all(nc, db, subjects, through=40)
    assert (applied, duplicates) == (40, 0)
    conn = connect(db)
    try:
        rows = conn.execute("SELECT seq, event_json(doc) FROM events ORDER BY seq").fetchall()
    finally:
        conn.close()
    assert [seq for seq, _ in rows] == list(range(1, 41))
    assert [raw.encode() for _, raw in rows] == good  # published byte for byte
    await js.delete_stream(subjects.events_stream)


async def test_a_clean_import_exits_zero(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(event("s-1", 1, "session/start") + b"\n" + event("s-1", 2) + b"\n")
    result = await asyncio.to_thread(
        sessionquery, *import_args(path, nats_url, subjects), "--quiet"
    )
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr
    await nc.jetstream().delete_stream(subjects.events_stream)


def test_import_of_a_missing_file_or_unreachable_nats(tmp_path: Path) -> None:
    missing = sessionquery("import", str(tmp_path / "none.jsonl"), "--nats-url", "nats://x:1")
    assert missing.returncode == 2
    assert "import: no such file: " in missing.stderr
    path = tmp_path / "events.jsonl"
    path.write_bytes(event("s-1", 1, "session/start") + b"\n")
    unreachable = sessionquery("import", str(path), "--nats-url", "nats://127.0.0.1:1")
    assert unreachable.returncode == 2
    assert "import: cannot connect to NATS" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr


async def build_index(db: Path) -> None:
    bodies = [
        event("s-old", 1, "session/start", time="2026-01-01T00:00:00Z"),
        event("s-old", 2, time="2026-01-02T00:00:00Z"),
        event("s-a", 1, "session/start", time="2999-01-01T00:00:00Z"),
        event("s-b", 1, "session/start", time="2999-01-01T00:00:00Z"),
        event("s-b", 2, time="2999-01-01T00:00:00Z"),
    ]
    async with await SqliteIndexWriter.open(db) as writer:
        result = await writer.apply([IngestItem(i, b) for i, b in enumerate(bodies, start=1)])
        assert result.applied == len(bodies)


def sessions_and_epoch(db: Path) -> tuple[list[str], int]:
    conn = sqlite3.connect(db)
    try:
        ids = [r[0] for r in conn.execute("SELECT session_id FROM sessions ORDER BY session_id")]
        epoch = conn.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()[0]
        return ids, int(epoch)
    finally:
        conn.close()


async def test_purge_by_session_and_by_age(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    await build_index(db)
    _, epoch = sessions_and_epoch(db)

    by_id = await asyncio.to_thread(
        sessionquery, "purge", "--db", str(db), "--session", "s-a", "--session", "s-none"
    )
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout.strip() == f"removed 1 session from {db}"
    assert sessions_and_epoch(db) == (["s-b", "s-old"], epoch + 1)

    by_age = await asyncio.to_thread(sessionquery, "purge", "--db", str(db), "--older-than", "30d")
    assert by_age.returncode == 0, by_age.stderr
    assert by_age.stdout.strip() == f"removed 1 session from {db}"
    assert sessions_and_epoch(db) == (["s-b"], epoch + 2)

    nothing = await asyncio.to_thread(sessionquery, "purge", "--db", str(db), "--older-than", "1d")
    assert nothing.stdout.strip() == f"removed 0 sessions from {db}"
    assert sessions_and_epoch(db) == (["s-b"], epoch + 2)  # nothing removed, epoch kept
    assert check_integrity(db) == []


def test_purge_refuses_a_bad_duration_and_a_missing_index(tmp_path: Path) -> None:
    bad = sessionquery("purge", "--db", str(tmp_path / "x.sqlite"), "--older-than", "30 days")
    assert bad.returncode == 2
    assert "purge: invalid duration '30 days'" in bad.stderr
    missing = sessionquery("purge", "--db", str(tmp_path / "x.sqlite"), "--session", "s")
    assert missing.returncode == 2
    assert "purge: no index at " in missing.stderr
    assert not (tmp_path / "x.sqlite").exists()
    both = sessionquery("purge", "--db", "x", "--session", "s", "--older-than", "1d")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


@pytest.mark.parametrize(
    ("text", "ms"),
    [("30d", 30 * 86_400_000), ("12h", 43_200_000), ("90m", 5_400_000), ("1d12h", 129_600_000)],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "30", "d", "-1d", "1.5h", "30x", "1d 2h", "h1"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(InvalidDuration, match="invalid duration"):
        parse_duration_ms(text)
