"""Event sizes, the import summary, and a full disk (issue 11). Real nats-server, real
``serve`` and ``import`` processes."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import sqlite3
import string
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from contracts.limits import MAX_EVENT_BYTES
from contracts.partitions import workspace_key
from contracts.streams import ensure_events_stream
from tests._events import event, event_dict, padded, subject_of
from tests.reliability._faults import (
    SUBJECTS,
    connected,
    publish,
    run_cli,
    session_events,
)
from tests.reliability._harness import poll, value_of, wait_indexed
from tests.reliability._serve import Serve, serve_args
from worker.store.index.writer_core import WriterCore
from worker.store.search.search_schema import open_index, read_position, search_index_path
from worker.transport.embedded_server import EmbeddedNatsServer


def _event_of_size(session_id: str, seq: int, size: int) -> bytes:
    body = event_dict(session_id, seq, event_id=f"e-{seq}", time="2026-12-03T09:00:00Z")
    return padded(body, size)


def _incompressible_event(session_id: str, seq: int, size: int) -> bytes:
    """An event of ``size`` bytes whose text is random words: the store compresses what it
    keeps, so a padding of one repeated letter would take almost no room on disk."""
    rng = random.Random(seq)
    letters = string.ascii_lowercase
    data = _event_of_size(session_id, seq, size)
    event = orjson.loads(data)
    length = len(event["payload"]["text"])
    words = " ".join("".join(rng.choices(letters, k=rng.randrange(3, 12))) for _ in range(length))
    event["payload"]["text"] = words[:length]
    return orjson.dumps(event)


def _count(db: Path, session_id: str) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        sql = "SELECT count(*) FROM events WHERE session_id = ?"
        return int(conn.execute(sql, (session_id,)).fetchone()[0])
    finally:
        conn.close()


async def test_the_documented_max_event_size_is_sendable_with_a_msg_id_and_indexed(
    own_nats_server: EmbeddedNatsServer, tmp_path: Path
) -> None:
    url, db = own_nats_server.url, tmp_path / "index.sqlite"
    assert MAX_EVENT_BYTES == 1_047_552  # docs/operations.md's figure
    async with connected(url) as nc:
        await publish(nc, ["s-warm"], 1)
        worker = await (await Serve(serve_args(url, db), tmp_path / "w.log").start()).serving()
        js = nc.jetstream()
        start = session_events("s-big", 1)[0]
        await js.publish(subject_of(SUBJECTS, "s-big"), start, headers={"Nats-Msg-Id": "s-big:1"})
        biggest = _event_of_size("s-big", 2, MAX_EVENT_BYTES)
        ack = await js.publish(
            subject_of(SUBJECTS, "s-big"), biggest, headers={"Nats-Msg-Id": "s-big:2"}
        )
        await wait_indexed(db, ack.seq)
        assert _count(db, "s-big") == 2, "the largest event is indexed, not dead-lettered"

        lines = tmp_path / "events.jsonl"
        over = _event_of_size("s-over", 2, MAX_EVENT_BYTES + 1)
        lines.write_bytes(session_events("s-over", 1)[0] + b"\n" + over + b"\n")
        code, _out, err = await run_cli("import", str(lines), "--nats-url", url, "--quiet")
        assert code == 1, err
        assert f"the event is {MAX_EVENT_BYTES + 1} bytes, the maximum is {MAX_EVENT_BYTES}" in err
        assert await worker.stop() == 0


async def test_import_says_which_events_the_worker_will_dead_letter(
    own_nats_server: EmbeddedNatsServer, tmp_path: Path
) -> None:
    lines = tmp_path / "events.jsonl"
    good = session_events("s-good", 3)
    orphan = session_events("s-orphan", 3)[1:]  # no session/start
    lines.write_bytes(b"\n".join([*good, *orphan]) + b"\n")
    code, _out, err = await run_cli(
        "import", str(lines), "--nats-url", own_nats_server.url, "--quiet"
    )
    assert code == 1, err
    assert "published 5 events" in err
    assert "the worker will dead-letter 2" in err
    assert "unknown session s-orphan: seq 2 (message/user) before its session/start" in err


def _mount_tmpfs(where: Path, size: str) -> None:
    """A ``size`` tmpfs at ``where`` (root only); skips, saying why, where it cannot."""
    if os.geteuid() != 0:
        pytest.skip("a full disk needs a small tmpfs, and mounting one needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs for the whole index (SQLite fills first)."""
    where = tmp_path / "small"
    where.mkdir()
    _mount_tmpfs(where, "3m")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def small_search_disk(tmp_path: Path) -> Iterator[Path]:
    """An index file on the ordinary disk whose search index sits on a 1 MiB tmpfs of its
    own, so the search index fills first while SQLite has room. Yields the index file."""
    db = tmp_path / "index.sqlite"
    WriterCore.open(db, text_cap_bytes=64 * 1024, max_event_bytes=MAX_EVENT_BYTES).close()
    search = search_index_path(db)
    seed = tmp_path / "search-seed"
    search.rename(seed)
    search.mkdir()
    _mount_tmpfs(search, "1m")
    try:
        shutil.copytree(seed, search, dirs_exist_ok=True)
        yield db
    finally:
        subprocess.run(["umount", "-l", str(search)], check=False)


async def test_sigterm_while_the_disk_is_full_stops_in_bound_and_tools_answer(
    own_nats_server: EmbeddedNatsServer, tmp_path: Path, small_disk: Path
) -> None:
    url, db = own_nats_server.url, small_disk / "index.sqlite"
    async with connected(url) as nc:
        await publish(nc, ["s-a"], 2)
        worker = await (await Serve(serve_args(url, db), tmp_path / "w.log").start()).serving()
        js = nc.jetstream()
        await js.publish(subject_of(SUBJECTS, "s-fill"), session_events("s-fill", 1)[0])
        for seq in range(2, 80):  # ~60 KiB of text each: more than the 3 MiB disk
            await js.publish(
                subject_of(SUBJECTS, "s-fill"), _incompressible_event("s-fill", seq, 60_000)
            )
        # A hang guard: how soon the writer fills the disk is the machine's speed.
        await poll(lambda: value_of(worker.log_text()), lambda text: "disk is full" in text, 60)
        assert "database or disk is full" in worker.log_text()
        # The tools keep answering while ingestion stalls.
        reply = await nc.request(SUBJECTS.manifest, b"", timeout=5)
        assert b"session_search" in reply.data
        started = time.monotonic()
        worker.signal(signal.SIGTERM)
        assert await worker.wait_exit(20) == 0
        assert time.monotonic() - started < 20
        assert "rollback failed" not in worker.log_text()


def _search_index_state(db: Path) -> tuple[int, int]:
    """(the event id the search index's last commit covers, its documents but the
    position's own)."""
    index = open_index(search_index_path(db))
    index.reload()
    searcher = index.searcher()
    return read_position(searcher).event_id, searcher.num_docs - 1


def _store_events(db: Path) -> tuple[int, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT coalesce(max(id), 0), count(*) FROM events").fetchone()
        return int(row[0]), int(row[1])
    finally:
        conn.close()


async def test_a_full_disk_under_the_search_index_backs_off_recovers_and_stops_in_bound(
    own_nats_server: EmbeddedNatsServer, tmp_path: Path, small_search_disk: Path
) -> None:
    # Issue 23: the writer's child spun at 100% CPU without reading its pipe (10,074
    # tracebacks in 45 s), the tantivy writer stayed dead after space came back, and
    # SIGTERM never ended the process.
    url, db = own_nats_server.url, small_search_disk
    count = 3000
    async with connected(url) as nc:
        js = nc.jetstream()
        await ensure_events_stream(js, SUBJECTS)
        worker = Serve(serve_args(url, db), tmp_path / "w.log")
        try:
            await (await worker.start()).serving()
            subject = SUBJECTS.events(workspace_key("/work/a"), "s-fill")
            await js.publish(subject, event("s-fill", 1, "session/start"))
            for seq in range(2, count + 2):
                words = " ".join(f"w{seq}x{j}" for j in range(60))
                ack = await js.publish(subject, event("s-fill", seq, payload={"text": words}))
            failed = "search index update failed; it will be retried"
            await poll(lambda: value_of(worker.log_text()), lambda text: failed in text, 60)
            # The child keeps reading its pipe: the store takes every event meanwhile.
            await wait_indexed(db, ack.seq)
            assert _store_events(db)[1] == count + 1

            # Space returns: a new tantivy writer takes up where the last commit left off.
            remount = ["mount", "-o", "remount,size=256m", str(search_index_path(db))]
            await asyncio.to_thread(subprocess.run, remount, check=True)
            last_id = _store_events(db)[0]
            await poll(
                lambda: asyncio.to_thread(_search_index_state, db),
                lambda state: state[0] >= last_id,
                90,
            )
            assert _search_index_state(db) == (last_id, count + 1), "nothing lost, nothing doubled"

            worker.signal(signal.SIGTERM)
            assert await worker.wait_exit(60) == 0, worker.log_text()[-3000:]
        finally:
            await worker.stop(5)  # a no-op once it exited; SIGKILL if it hangs
    events = worker.log_events()
    failures = [e for e in events if e.get("event") == failed]
    # One line per backoff step, counting up, each with the wait it starts; the traceback
    # once, with the first.
    assert [e["failures"] for e in failures] == list(range(1, len(failures) + 1))
    assert all(float(str(e["retry_in_s"])) > 0 for e in failures)
    assert sum(1 for e in failures if "exception" in e) == 1
    assert "No space left on device" in str(failures[0]["error"])
    assert any(e.get("event") == "search index updated again" for e in events)
    assert "stop took longer than the shutdown timeout" not in worker.log_text()
