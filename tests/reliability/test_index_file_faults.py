"""The index file as an operator mistreats it (issue 11): two processes on one file or
home, a file of another schema version, a corrupt file. Real nats-server, real ``serve``
processes; each asserts the documented outcome and its message."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
from pathlib import Path

from tests._harness import until
from tests._index import connect, events_as_text, meta
from tests.reliability._faults import (
    Rig,
    assert_index_equals_stream,
    create_stream,
    publish,
    run_cli,
)
from tests.reliability._serve import Serve, children_running, pid_alive
from worker.store.files import schema

EXIT_BOUND_S = 20.0


def _servers_on(home: Path) -> list[int]:
    """nats-server processes whose store is under ``home`` (ours only: a tmp path)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if (
                b"nats-server" in cmdline
                and str(home).encode() in cmdline
                and pid_alive(int(entry))
            ):
                pids.append(int(entry))
    return pids


async def test_two_serves_on_one_home_the_second_refuses_and_nothing_is_orphaned(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    args = ["--home", str(home), "--embedded-port", "-1", "--log-format", "json"]
    first = await (await Serve(args, tmp_path / "first.log").start()).serving()
    server = children_running(first.pid, b"nats-server")
    assert len(server) == 1
    second = await Serve(args, tmp_path / "second.log").start()
    assert await second.wait_exit(EXIT_BOUND_S) == 1
    message = second.log_text()
    assert f"pid {first.pid}" in message and "in use by another sessionquery" in message, message
    assert _servers_on(home) == server, "the second serve started no nats-server"
    # Killed outright, the first one's embedded server goes with it.
    first.signal(signal.SIGKILL)
    await first.wait_exit(10)
    # A hang guard (how soon it is gone is the machine's speed, not under test).
    with contextlib.suppress(TimeoutError):
        await until(lambda: not pid_alive(server[0]), 60)
    assert not pid_alive(server[0]), "the embedded nats-server outlived its worker"


async def test_two_workers_on_one_db_the_second_refuses_naming_the_holder(rig: Rig) -> None:
    db = rig.db
    first = await rig.serving("a.log")
    second = await rig.start("b.log", "--subject-prefix", "other")
    assert await second.wait_exit(EXIT_BOUND_S) == 1
    message = second.log_text()
    assert f"index {db} is in use" in message and f"pid {first.pid}" in message, message
    assert await first.stop() == 0


async def test_a_newer_schema_is_refused_and_an_older_one_migrated_or_rebuilt(rig: Rig) -> None:
    nc, db = rig.nc, rig.db
    last = await publish(nc, ["s-a", "s-b"], 10)
    await rig.indexed("w1.log", last)

    _set_version(db, 99)
    refused = await rig.start("w2.log")
    assert await refused.wait_exit(EXIT_BOUND_S) == 1
    message = refused.log_text()
    assert f"index {db} has schema version 99, newer than this worker's" in message
    assert f" {schema.SCHEMA_VERSION}: run a newer sessionquery" in message, message

    # Version 1 (no dead-letter table): migrated in place, nothing rebuilt.
    _set_version(db, 1)
    _sql(db, "DROP TABLE deadletters")
    _sql(db, "ALTER TABLE events ADD COLUMN ws TEXT NOT NULL DEFAULT 'ws'")  # until v4
    _sql(db, "ALTER TABLE sessions DROP COLUMN prompts")  # until v5
    events_as_text(db)  # until v6
    worker = await rig.serving("w3.log")
    assert meta(db)["schema_version"] == schema.SCHEMA_VERSION
    assert _sql(db, "SELECT count(*) FROM deadletters") == 0
    assert not glob.glob(f"{db}.*-v1-*")
    assert await worker.stop() == 0

    # Version 0 (no meta table at all): no migration, so rebuilt from the stream.
    _sql(db, "DROP TABLE meta")
    worker = await rig.serving("w4.log", through=last)
    assert await assert_index_equals_stream(nc, db) == 20
    assert glob.glob(f"{db}.schema-v0-*"), "the old file is kept aside"
    assert await worker.stop() == 0


def _sql(db: Path, statement: str) -> int:
    conn = connect(db)
    conn.isolation_level = None
    try:
        row = conn.execute(statement).fetchone()
        return int(row[0]) if row else 0
    finally:
        conn.close()


def _set_version(db: Path, version: int) -> None:
    _sql(db, f"UPDATE meta SET value = {version} WHERE key = 'schema_version'")


def _overwrite(db: Path, offset: int, size: int) -> None:
    with open(db, "r+b") as fh:
        fh.seek(offset)
        fh.write(b"\xa5" * size)


async def test_a_corrupt_index_is_moved_aside_and_rebuilt_when_the_stream_has_it_all(
    rig: Rig,
) -> None:
    nc, url, db = rig.nc, rig.url, rig.db
    last = await publish(nc, ["s-a", "s-b", "s-c"], 40)
    await rig.indexed("w1.log", last)
    page = _sql(db, "PRAGMA page_size")
    _overwrite(db, 3 * page, page)  # a data page, not the header
    code, out, err = await run_cli("doctor", "--db", str(db), "--nats-url", url)
    assert code == 1 and "is corrupt" in out and "rebuilds it from the stream" in out, err
    worker = await rig.serving("w2.log", through=last)
    assert await assert_index_equals_stream(nc, db) == 120
    assert glob.glob(f"{db}.corrupt-*"), "the corrupt file is kept aside"
    code, out, _ = await run_cli("doctor", "--db", str(db), "--nats-url", url)
    assert code == 0 and "no problem found" in out, out
    assert await worker.stop() == 0


async def test_a_corrupt_index_without_the_whole_history_is_refused_with_the_remedy(
    rig: Rig,
) -> None:
    nc, db = rig.nc, rig.db
    await create_stream(nc, max_msgs=20)
    last = await publish(nc, ["s-a"], 15)
    await rig.indexed("w1.log", last)
    await publish(nc, ["s-b"], 10)  # the stream now starts at seq 6
    _overwrite(db, 0, 100)  # the header page: "file is not a database"
    refused = await rig.start("w2.log")
    assert await refused.wait_exit(EXIT_BOUND_S) == 1
    message = refused.log_text()
    assert f"index {db} is corrupt" in message, message
    assert "no longer holds its whole history (first seq 6)" in message
    assert "restore the file from a backup" in message
    assert db.exists() and not glob.glob(f"{db}.corrupt-*"), "refused: file left in place"
