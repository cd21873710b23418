"""The index against the stream it replicates, as an operator breaks it (issue 11).

Each test runs ``sessionquery serve`` processes against a nats-server of its own: the
stream deleted and re-created, history cut by ``max_msgs``, the index file removed under a
running worker, and asserts the documented outcome, the message, and (when the stream has
the history) that the index equals the stream, count and checksum.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.client import SessionQueryClient
from tests._harness import until
from tests._index import meta
from tests.reliability._faults import (
    SUBJECTS,
    Rig,
    assert_index_equals_stream,
    create_stream,
    publish,
    run_cli,
)
from tests.reliability._harness import wait_indexed
from tests.reliability._serve import children_running
from worker.replica.rebuild import HOLD_ENV

STOP_BOUND_S = 15.0 + 5.0  # the default shutdown timeout, plus process start-up slack


async def test_a_recreated_stream_is_refused_or_rebuilt_never_skipped(rig: Rig) -> None:
    nc, db = rig.nc, rig.db
    last = await publish(nc, [f"s-old-{i}" for i in range(4)], 10)  # seqs 1..40
    first = await rig.serving("w1.log", through=last)
    created_before = meta(db)["stream_created"]
    assert await first.stop() == 0
    # The operator resets the stream: new messages reuse sequences 1..N.
    await nc.jetstream().delete_stream(SUBJECTS.events_stream)
    await create_stream(nc)
    last = await publish(nc, [f"s-new-{i}" for i in range(5)], 12)  # seqs 1..60

    refusing = await rig.start("w2.log", "--on-divergence", "refuse")
    assert await refusing.wait_exit(STOP_BOUND_S) == 1
    log = refusing.log_text()
    assert "was re-created" in log and "--on-divergence refuse" in log, log[-2000:]
    assert meta(db)["stream_created"] == created_before  # refused: file untouched

    rebuilding = await rig.serving("w3.log", through=last)
    assert await assert_index_equals_stream(nc, db) == 60
    assert meta(db)["stream_created"] != created_before
    assert glob.glob(f"{db}.replaced-*"), "the old index is kept aside"
    events = rebuilding.log_events()
    assert any(e.get("event") == "rebuilding the index from the stream" for e in events)
    assert await rebuilding.stop() == 0


async def test_an_index_behind_a_cut_history_is_rebuilt_and_says_what_is_gone(rig: Rig) -> None:
    nc, url, db = rig.nc, rig.url, rig.db
    await create_stream(nc, max_msgs=30)
    last = await publish(nc, ["s-a", "s-b"], 10)  # seqs 1..20, all held
    await rig.indexed("w1.log", last)
    # While the worker is down, retention drops events it never read.
    last = await publish(nc, ["s-c", "s-d"], 20)  # seqs 21..60; the stream keeps 31..60
    worker = await rig.serving("w2.log", through=last)
    events = worker.log_events()
    rebuilt = [e for e in events if e.get("event") == "rebuilding the index from the stream"]
    assert rebuilt and "gap" in str(rebuilt[0]["reason"]), events[-5:]
    assert "events 21..30 were removed" in str(rebuilt[0]["reason"])
    assert meta(db)["history_from"] == 31
    code, out, _err = await run_cli("status", "--db", str(db), "--nats-url", url, "--json")
    report = orjson.loads(out)
    assert report["history_unavailable_before"] == 31
    assert report["stream"]["first_seq"] == 31 and report["applied_seq"] == 60
    # s-c and s-d started at seqs 21 and 22, gone: their later events are dead letters.
    assert report["dead_letters"] == {"unknown session": 30}
    assert code == 0
    assert await worker.stop() == 0


async def test_an_empty_index_on_a_stream_past_seq_1_records_unavailable_history(rig: Rig) -> None:
    nc, url, db = rig.nc, rig.url, rig.db
    await create_stream(nc, max_msgs=40)
    last = await publish(nc, ["s-a", "s-b", "s-c", "s-d"], 25)  # 100; keeps 61..100
    worker = await rig.serving("w.log", through=last)
    warnings = [
        e
        for e in worker.log_events()
        if "history unavailable before stream seq 61" in str(e.get("event"))
    ]
    assert len(warnings) == 1 and warnings[0]["level"] == "warning", warnings
    assert warnings[0]["unavailable_seqs"] == "1..60"
    code, out, _err = await run_cli("status", "--db", str(db), "--nats-url", url)
    assert "history          history unavailable before stream seq 61" in out, out
    assert "dead letters     40 (unknown session 40)" in out, out
    assert "lag              0 events" in out, out
    assert code == 0
    code, out, _err = await run_cli("deadletters", "--db", str(db), "--limit", "3")
    shown = out.splitlines()
    assert code == 0 and len(shown) == 3 and shown[-1].startswith("seq 100\tunknown session\t")
    assert "before its session/start" in shown[-1]
    # The running worker reports the same in $SRV.STATS (the manifest endpoint's data).
    index = await _stats_index(nc, lambda i: i.get("applied_seq") == last)
    assert index["history_unavailable_before"] == 61 and index["lag_events"] == 0
    assert index["dead_letters"] == {"unknown session": 40}
    assert index["stream"]["first_seq"] == 61 and index["matches_stream"] is True
    info = orjson.loads((await nc.request("$SRV.INFO.session-query", b"", 5)).data)
    assert info["metadata"]["events_stream"] == "SESSIONS"
    assert info["metadata"]["events_stream_created"] == meta(db)["stream_created"]
    assert await worker.stop() == 0


async def test_an_index_removed_under_a_running_worker_stops_ingestion_loudly(rig: Rig) -> None:
    nc, db = rig.nc, rig.db
    last = await publish(nc, ["s-a", "s-b"], 15)
    worker = await rig.serving("w1.log", through=last)
    writers = children_running(worker.pid, b"worker.store.index.writer_process")
    assert writers, f"no writer child under {worker.pid}"
    writer = writers[0]
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{db}{suffix}")
    os.kill(writer, signal.SIGKILL)
    await publish(nc, ["s-c"], 3)  # the next batch needs a writer: it is started again
    assert await worker.wait_exit(STOP_BOUND_S) == 1
    log = worker.log_text()
    assert f"index {db} is missing" in log, log[-3000:]
    assert not db.exists(), "no fresh empty index was created under the running worker"
    # Started again, the worker rebuilds the index from the stream (it has it all).
    worker = await rig.serving("w2.log", through=last + 3)
    assert await assert_index_equals_stream(nc, db) == 33
    assert await worker.stop() == 0


async def _stats_index(nc: NATS, ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    index: dict[str, Any] = {}
    # The worker refreshes its status every 5 s: a few refreshes on a loaded machine.
    deadline = asyncio.get_running_loop().time() + 60.0
    while asyncio.get_running_loop().time() < deadline:
        stats = orjson.loads((await nc.request("$SRV.STATS.session-query", b"", 5)).data)
        manifest = [e for e in stats["endpoints"] if e["name"] == "manifest"]
        index = (manifest[0].get("data") or {}).get("index") or {}
        if index and ready(index):
            return index
        await asyncio.sleep(0.1)
    raise AssertionError(f"no index status in $SRV.STATS: {index}")


@pytest.mark.parametrize("mode", ["refuse", "rebuild"])
async def test_a_stream_reset_while_the_worker_runs_is_noticed(rig: Rig, mode: str) -> None:
    """After a consumer reset the worker compares again: a stream re-created under it is
    rebuilt from (the worker starts itself again, which rebuilds), or refused (exit 1)."""
    nc, db = rig.nc, rig.db
    last = await publish(nc, ["s-a"], 10)
    worker = await rig.serving("w.log", "--on-divergence", mode, through=last)
    created = meta(db)["stream_created"]
    await nc.jetstream().delete_stream(SUBJECTS.events_stream)
    await create_stream(nc)
    await publish(nc, ["s-b"], 5)
    if mode == "refuse":
        assert await worker.wait_exit(60) == 1
        assert "was re-created" in worker.log_text()
        assert meta(db)["stream_created"] == created
        return
    await until(lambda: _created(db) not in (created, None), 60)
    await wait_indexed(db, 5)
    assert await assert_index_equals_stream(nc, db) == 5
    assert "serving the old index while a new one is built" in worker.log_text()
    assert worker.returncode() is None, "rebuilt in place, still serving"
    assert await worker.stop() == 0


def _created(db: Path) -> object:
    try:
        return meta(db).get("stream_created")
    except sqlite3.Error:
        return None  # between the rename aside and the swap


async def test_the_old_index_is_served_while_the_new_one_is_built_then_swapped(
    rig: Rig, tmp_path: Path
) -> None:
    nc, url, db = rig.nc, rig.url, rig.db
    await publish(nc, [f"s-old-{i}" for i in range(4)], 10)
    await rig.indexed("w1.log", 40)
    await nc.jetstream().delete_stream(SUBJECTS.events_stream)
    await create_stream(nc)
    last = await publish(nc, [f"s-new-{i}" for i in range(10)], 150)  # 1,500 events
    # The build waits, its new file bound but empty, until this file exists: the rebuild
    # is in progress for as long as the test looks at it, however fast the build would be
    # (a build of 1,500 events took less than the CLI's start-up on a loaded machine).
    release = tmp_path / "release-rebuild"
    worker = await rig.serving("w2.log", env={HOLD_ENV: str(release)})
    client = SessionQueryClient(nc)
    await until(lambda: "rebuild held" in worker.log_text(), 60)
    assert _rebuilding(db)  # building beside the old file
    old = await client.call(
        "session_event_read",
        {"session_id": "s-old-1", "seq": 2},
        {"agent": {"session_id": "s-old-0"}},
        timeout=10,
    )
    assert old.status == "ok" and "note 2 of s-old-1" in (old.content or ""), old
    _code, out, _ = await run_cli("status", "--db", str(db), "--nats-url", url)
    assert "rebuild running  yes: applied" in out and f"of {last}" in out, out
    release.touch()
    await until(lambda: _created(db) is not None and not _rebuilding(db), 120)
    await wait_indexed(db, last)
    assert await assert_index_equals_stream(nc, db) == 1500
    new = await client.call(
        "session_event_read",
        {"session_id": "s-new-1", "seq": 2},
        {"agent": {"session_id": "s-new-0"}},
        timeout=10,
    )
    assert new.status == "ok" and "note 2 of s-new-1" in (new.content or ""), new
    assert worker.returncode() is None
    assert await worker.stop() == 0


def _rebuilding(db: Path) -> bool:
    return os.path.exists(f"{db}.rebuild")
