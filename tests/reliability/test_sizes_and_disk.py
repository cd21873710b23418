"""Event sizes, the import summary, and a full disk (issue 11). Real nats-server, real
``serve`` and ``import`` processes."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from contracts.limits import MAX_EVENT_BYTES
from tests._events import event_dict, padded, subject_of
from tests.reliability._faults import (
    SUBJECTS,
    connected,
    publish,
    run_cli,
    session_events,
)
from tests.reliability._harness import wait_indexed
from tests.reliability._serve import Serve, serve_args
from worker.runtime.embedded_server import EmbeddedNatsServer


def _event_of_size(session_id: str, seq: int, size: int) -> bytes:
    body = event_dict(session_id, seq, event_id=f"e-{seq}", time="2026-12-03T09:00:00Z")
    return padded(body, size)


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
    assert MAX_EVENT_BYTES == 1_047_552  # the README's figure
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


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs (root only); skipped, saying why, where it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip("a full disk needs a small tmpfs, and mounting one needs root")
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


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
            await js.publish(subject_of(SUBJECTS, "s-fill"), _event_of_size("s-fill", seq, 60_000))
        for _ in range(300):
            if "disk is full" in worker.log_text():
                break
            await asyncio.sleep(0.05)
        assert "database or disk is full" in worker.log_text()
        # The tools keep answering while ingestion stalls.
        reply = await nc.request(SUBJECTS.manifest, b"", timeout=5)
        assert b"session_search" in reply.data
        started = time.monotonic()
        worker.signal(signal.SIGTERM)
        assert await worker.wait_exit(20) == 0
        assert time.monotonic() - started < 20
        assert "rollback failed" not in worker.log_text()
