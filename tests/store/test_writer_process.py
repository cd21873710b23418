"""The index writer in a child process: same results as the thread writer, ordered chained
applies, torn frames never committed, the child dies with its parent, a crashed child is
reported and replaced, and the worker runs this writer by default.

Over 400 lines: the writer child's lifecycle and faults, one per test.
"""

from __future__ import annotations

import asyncio
import json
import marshal
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._events import event, subject_of
from tests._index import connect
from tests.replica.test_ingest import count
from worker.config import WorkerConfig
from worker.replica.ingest_actor import IngestActor
from worker.replica.ingest_consumer import ensure_events_stream
from worker.store.files import index_file
from worker.store.files.index_file import move_aside, remove_files
from worker.store.files.integrity import check_integrity
from worker.store.index.writer import BatchChecker, SqliteIndexWriter, WriterCore
from worker.store.index.writer_process import (
    EXIT_TORN,
    HEADER,
    STATUS_OK,
    IndexFileLost,
    ProcessIndexWriter,
    WriterProcessError,
    encode_batch,
)
from worker.store.index.writer_wire import OP_APPLY, decode_batch
from worker.store.writer_protocol import BatchNotAttempted, IngestItem, Rejected
from worker.worker import Worker

from .test_exactly_once import wait_until

# A trigger that makes any insert of session "boom" fail inside the child's transaction.
BOOM_TRIGGER = (
    "CREATE TRIGGER boom BEFORE INSERT ON events WHEN NEW.session_id = 'boom'"
    " BEGIN SELECT RAISE(ABORT, 'boom refused'); END"
)


def gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether process ``pid`` has exited (and been reaped, or is a zombie) in time."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                return True
        except (FileNotFoundError, ProcessLookupError):
            # Reaped between the open and the read: the read fails with ESRCH.
            return True
        time.sleep(0.02)
    return False


def stored_seq(db: Path) -> int:
    return index_file.applied_seq(db)


def execute(db: Path, sql: str) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute(sql)
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[ProcessIndexWriter]:
    async with await ProcessIndexWriter.open(tmp_path / "index.sqlite") as w:
        yield w


def session_items(session_id: str, first_stream_seq: int, n: int) -> list[IngestItem]:
    return [
        IngestItem(
            first_stream_seq + i,
            event(session_id, i + 1, "session/start" if i == 0 else "message/user"),
            subject_of(Subjects(), session_id),
        )
        for i in range(n)
    ]


async def test_same_results_as_the_thread_writer(tmp_path: Path) -> None:
    items = [
        *session_items("s", 1, 3),
        IngestItem(4, b"{not json", subject_of(Subjects(), "s")),
        IngestItem(5, event("s", 9), subject_of(Subjects(), "s")),  # a gap
        IngestItem(6, event("s", 2), subject_of(Subjects(), "s")),  # a duplicate
        IngestItem(7, event("t", 1, "session/start"), subject_of(Subjects(), "other")),
    ]
    async with await SqliteIndexWriter.open(tmp_path / "thread.sqlite") as thread:
        expected = await thread.apply(items)
    async with await ProcessIndexWriter.open(tmp_path / "process.sqlite") as process:
        got = await process.apply(items)
        assert await process.last_stream_seq() == 7
    assert got == expected
    assert got.applied == 3 and got.duplicates == 1
    assert [r.stream_seq for r in got.rejected] == [4, 5, 7]
    # The dead letters carry the original bytes, which the child never sent back.
    assert got.rejected[0].data == b"{not json"
    for db in ("thread.sqlite", "process.sqlite"):
        assert count(tmp_path / db, "SELECT count(*) FROM events") == 3
        assert check_integrity(tmp_path / db) == []  # each event in the search index once


async def test_the_child_derives_the_same_searchable_text(tmp_path: Path) -> None:
    """The child reads the text from the raw JSON again; it must match the checker's."""
    payloads = [
        {"cwd": "/w/a", "parent_session_id": "p-1", "note": "start text"},  # lineage not text
        {"text": "caf\u00e9 \U0001f600 \\u escapes", "n": 2**70, "f": 1e308, "deep": [[["x"]]]},
        {"tool": "bash", "output": "a" * 300, "nested": {"b": ["c", {"d": "e"}]}},
        {},
    ]
    # json, not orjson: orjson cannot write an integer past 64 bits.
    items = [
        IngestItem(
            i + 1,
            json.dumps(
                json.loads(event("s", i + 1, "session/start" if i == 0 else "tool/result"))
                | {"payload": payload}
            ).encode(),
            subject_of(Subjects(), "s", "/w/a"),
        )
        for i, payload in enumerate(payloads)
    ]
    async with await SqliteIndexWriter.open(tmp_path / "t.sqlite", text_cap_bytes=256) as t:
        await t.apply(items)
    async with await ProcessIndexWriter.open(tmp_path / "p.sqlite", text_cap_bytes=256) as p:
        await p.apply(items)

    def bodies(db: Path) -> list[str]:
        conn = connect(db)
        try:
            return [
                r[0] for r in conn.execute("SELECT event_text(doc, type) FROM events ORDER BY seq")
            ]
        finally:
            conn.close()

    expected = bodies(tmp_path / "t.sqlite")
    assert bodies(tmp_path / "p.sqlite") == expected
    assert "p-1" not in expected[0] and "start text" in expected[0]
    assert len(expected[2].encode()) <= 256  # capped


async def test_listeners_purge_and_generation(writer: ProcessIndexWriter, tmp_path: Path) -> None:
    commits: list[int] = []
    writer.add_commit_listener(lambda: commits.append(1))
    await writer.apply(session_items("s", 1, 2) + session_items("t", 3, 2))
    assert commits == [1]
    before = await writer.generation()
    assert before.seq == 4
    assert await writer.purge(session_ids=["s", "missing"]) == 1
    after = await writer.generation()
    assert after.epoch == before.epoch + 1 and after.seq == 4
    assert commits == [1, 1]
    assert await writer.purge(session_ids=["missing"]) == 0  # nothing removed: same epoch
    assert (await writer.generation()).epoch == after.epoch
    assert count(tmp_path / "index.sqlite", "SELECT count(*) FROM events") == 2


async def test_a_chained_batch_waits_for_the_one_before(
    writer: ProcessIndexWriter, tmp_path: Path
) -> None:
    db = tmp_path / "index.sqlite"
    # A fresh child has no committed apply before it: a chained batch is not tried.
    with pytest.raises(BatchNotAttempted):
        await writer.apply_chained(writer.prepare(session_items("a", 1, 2)))
    execute(db, BOOM_TRIGGER)
    failing = asyncio.create_task(writer.apply(session_items("boom", 1, 2)))
    chained = asyncio.create_task(writer.apply_chained(writer.prepare(session_items("a", 3, 2))))
    with pytest.raises(WriterProcessError, match="boom refused"):
        await failing
    with pytest.raises(BatchNotAttempted):
        await chained
    assert stored_seq(db) == 0 and count(db, "SELECT count(*) FROM events") == 0
    execute(db, "DROP TRIGGER boom")
    await writer.apply(session_items("boom", 1, 2))
    result = await writer.apply_chained(writer.prepare(session_items("a", 3, 2)))
    assert result.applied == 2 and stored_seq(db) == 4


async def test_the_thread_writer_chains_the_same_way(tmp_path: Path) -> None:
    """One rule for both transports (``WriterCore.apply(chained=)``)."""
    db = tmp_path / "thread.sqlite"
    async with await SqliteIndexWriter.open(db) as writer:
        with pytest.raises(BatchNotAttempted):
            await writer.apply_chained(writer.prepare(session_items("a", 1, 2)))
        execute(db, BOOM_TRIGGER)
        failing = asyncio.create_task(writer.apply(session_items("boom", 1, 2)))
        chained = asyncio.create_task(
            writer.apply_chained(writer.prepare(session_items("a", 3, 2)))
        )
        with pytest.raises(sqlite3.Error, match="boom refused"):
            await failing
        with pytest.raises(BatchNotAttempted):
            await chained
        assert stored_seq(db) == 0
        execute(db, "DROP TRIGGER boom")
        await writer.apply(session_items("boom", 1, 2))
        result = await writer.apply_chained(writer.prepare(session_items("a", 3, 2)))
        assert result.applied == 2 and stored_seq(db) == 4


def test_the_pipe_carries_the_messages_and_the_child_checks_them() -> None:
    """What the serving process sends is the messages as they came (it parses nothing);
    the child's check of them is the thread writer's, rejections and reasons alike."""
    checker = BatchChecker(text_cap_bytes=65536, max_event_bytes=1 << 20)
    items = [*session_items("s", 1, 2), IngestItem(3, b"{", subject_of(Subjects(), "s"))]
    sent = encode_batch(items)
    op, size = HEADER.unpack_from(sent, 0)
    assert op == OP_APPLY and size == len(sent) - HEADER.size
    assert marshal.loads(sent[HEADER.size :]) == [(i.stream_seq, i.data, i.subject) for i in items]
    checked = decode_batch(checker, sent[HEADER.size :])
    assert checked == checker.prepare(items)
    assert isinstance(checked.items[-1], Rejected) and checked.items[-1].stream_seq == 3


async def test_the_actor_retries_a_failed_batch_before_the_chained_one(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    async with await ProcessIndexWriter.open(db) as writer:
        execute(db, BOOM_TRIGGER)
        dead: list[Rejected] = []

        async def sink(r: Rejected) -> None:
            dead.append(r)

        actor = IngestActor(writer, dead_letter=sink, batch_size=2, batch_ms=1)
        for item in session_items("boom", 1, 2) + session_items("a", 3, 4):
            await actor.put(item)
        actor.stop()
        runner = asyncio.create_task(actor.run())
        await wait_until(lambda: actor.stats.apply_failures > 0, "a failed apply")
        assert stored_seq(db) == 0  # nothing after the failed batch was committed
        execute(db, "DROP TRIGGER boom")
        await asyncio.wait_for(runner, 30)
    assert actor.stats.applied == 6 and actor.stats.last_stream_seq == 6 and not dead
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT stream_seq FROM events ORDER BY id").fetchall()
    finally:
        conn.close()
    assert [r[0] for r in rows] == [1, 2, 3, 4, 5, 6]  # committed in stream order


def start_child(db: Path) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-m", "worker.store.index.writer_process",
        "--db", str(db),
        "--text-cap-bytes", "65536",
        "--max-event-bytes", "1048576",
        "--parent-pid", str(os.getpid()),
    ]  # fmt: skip
    child = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdout is not None
    status, size = HEADER.unpack(child.stdout.read(HEADER.size))
    assert status == STATUS_OK
    child.stdout.read(size)  # the generation it opened at
    return child


@pytest.mark.parametrize("cut", [3, HEADER.size + 10, -1])
def test_a_torn_frame_is_never_committed(tmp_path: Path, cut: int) -> None:
    """The parent dies mid-frame (here: its end of the pipe closes after ``cut`` bytes)."""
    db = tmp_path / "index.sqlite"
    frame = encode_batch(session_items("s", 1, 50))
    child = start_child(db)
    assert child.stdin is not None
    child.stdin.write(frame[:cut])
    child.stdin.close()
    assert child.wait(timeout=20) == EXIT_TORN
    assert stored_seq(db) == 0 and count(db, "SELECT count(*) FROM events") == 0

    # The same frame whole, then EOF at the frame boundary: committed, a clean exit.
    child = start_child(db)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(frame)
    child.stdin.close()
    status, _size = HEADER.unpack(child.stdout.read(HEADER.size))
    assert status == STATUS_OK
    assert child.wait(timeout=20) == 0
    assert stored_seq(db) == 50


PARENT = """
import asyncio, sys
from worker.store.index.writer_process import ProcessIndexWriter

async def main() -> None:
    writer = await ProcessIndexWriter.open(sys.argv[1])
    print("child", writer.pid, flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("sig", "busy"), [(signal.SIGKILL, False), (signal.SIGTERM, False), (signal.SIGKILL, True)]
)
def test_the_child_dies_with_its_parent(tmp_path: Path, sig: signal.Signals, busy: bool) -> None:
    """An idle child sees EOF; a busy one (here: stopped, so it never reads its pipe
    again) is killed by PR_SET_PDEATHSIG."""
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path / "index.sqlite")], stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None
        line = b""
        while not line.startswith(b"child "):  # the parent's unconfigured logs go there too
            line = parent.stdout.readline()
            assert line, "the parent ended without starting its writer"
        child_pid = int(line.split()[1])
        assert not gone(child_pid, within_s=0.3)
        if busy:
            os.kill(child_pid, signal.SIGSTOP)
        parent.send_signal(sig)
        parent.wait(timeout=10)
        assert gone(child_pid), "the writer process outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


async def test_the_child_ignores_a_process_group_interrupt(writer: ProcessIndexWriter) -> None:
    """Ctrl-C reaches the whole process group; the parent's graceful stop needs the child."""
    pid = writer.pid
    assert pid is not None
    os.kill(pid, signal.SIGINT)
    os.kill(pid, signal.SIGTERM)
    result = await writer.apply(session_items("s", 1, 2))
    assert result.applied == 2 and writer.pid == pid


async def test_a_crashed_child_is_reported_and_replaced(
    writer: ProcessIndexWriter, tmp_path: Path
) -> None:
    db = tmp_path / "index.sqlite"
    await writer.apply(session_items("s", 1, 2))
    first = writer.pid
    assert first is not None
    os.kill(first, signal.SIGSTOP)  # holds the next request in flight
    in_flight = asyncio.create_task(writer.apply(session_items("t", 3, 2)))
    await asyncio.sleep(0.2)
    assert not in_flight.done()
    os.kill(first, signal.SIGKILL)
    with pytest.raises(WriterProcessError, match="exited"):
        await in_flight
    assert writer.restarts == 0
    # The next request starts a new child, which carries on from the stored sequence.
    assert await writer.last_stream_seq() == 2
    assert writer.restarts == 1 and writer.pid not in (None, first)
    result = await writer.apply(session_items("t", 3, 2))
    assert result.applied == 2 and stored_seq(db) == 4


async def test_a_cancelled_caller_does_not_shift_the_replies(writer: ProcessIndexWriter) -> None:
    pid = writer.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        cancelled = asyncio.create_task(writer.apply(session_items("s", 1, 2)))
        await asyncio.sleep(0.1)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
    finally:
        os.kill(pid, signal.SIGCONT)
    # The cancelled apply still ran to its commit; the next reply is the next request's.
    assert (await writer.generation()).seq == 2


async def test_close_waits_for_the_batch_in_flight(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    writer = await ProcessIndexWriter.open(db)
    pid = writer.pid
    assert pid is not None
    applying = asyncio.create_task(writer.apply(session_items("s", 1, 300)))
    await asyncio.sleep(0)
    await writer.close()
    assert (await applying).applied == 300
    assert gone(pid) and stored_seq(db) == 300
    with pytest.raises(WriterProcessError, match="closed"):
        await writer.generation()


async def test_an_index_that_cannot_be_opened_fails_the_open(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(WriterProcessError, match="could not open the index"):
        await ProcessIndexWriter.open(blocker / "index.sqlite")


async def test_the_worker_ingests_through_a_child_process(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    config = WorkerConfig(db_path=tmp_path / "index.sqlite", subjects=subjects)
    worker = await Worker.start(nc, config)
    try:
        index = worker.index
        assert index is not None and isinstance(index.writer, ProcessIndexWriter)
        pid = index.writer.pid
        assert pid is not None and not gone(pid, within_s=0.1)
        for item in session_items("s", 1, 3):
            await js.publish(subject_of(subjects, "s"), item.data)
        assert index.consumer is not None
        await asyncio.wait_for(index.consumer.actor.wait_applied(3), 20)
    finally:
        await worker.stop()
    assert gone(pid)
    assert count(tmp_path / "index.sqlite", "SELECT count(*) FROM events") == 3
    await js.delete_stream(subjects.events_stream)


async def test_a_child_started_again_never_writes_a_replaced_or_missing_index(
    tmp_path: Path,
) -> None:
    db = tmp_path / "index.sqlite"
    async with await ProcessIndexWriter.open(db) as writer:
        await writer.apply(session_items("a", 1, 3))
        first_id = writer.index_id
        assert first_id is not None and first_id.startswith("ix-")
        # The child dies, and another index takes the file's place (same path, another id).
        pid = writer.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert gone(pid)
        await wait_until(lambda: writer.pid is None, "the writer to notice its child died")
        moved = move_aside(db, "moved")
        replacement = WriterCore.open(db, text_cap_bytes=1024, max_event_bytes=1 << 20)
        replacement.close()
        with pytest.raises(IndexFileLost, match="was replaced while the worker ran"):
            await writer.apply(session_items("a", 4, 1))
        remove_files(db)
        with pytest.raises(IndexFileLost, match="is missing"):
            await writer.apply(session_items("a", 4, 1))
    assert not db.exists(), "no fresh index was created"
    assert count(moved, "SELECT count(*) FROM events") == 3
