"""A writer child killed under a running worker is started again, and the search index
goes on following the store: what is ingested after the restart is searchable.

Against a real nats-server and a real ``serve`` process: the writer child is killed by
pid (SIGKILL: no graceful catch-up), new events are published, and the tools that search
(``session_search``, ``session_event_search``) must find a word only those events hold.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.client import SessionQueryClient
from tests._events import event, subject_of
from tests._harness import until
from tests.reliability._faults import SUBJECTS, Rig, create_stream, run_cli
from tests.reliability._harness import wait_indexed
from tests.reliability._serve import children_running
from worker.store.files.index_file import searchable_seq

WRITER = b"worker.store.index.writer_process"


async def _publish(nc: NATS, session_id: str, word: str, count: int) -> int:
    """A session whose messages all hold ``word``; returns the last stream sequence."""
    js = nc.jetstream()
    last = 0
    for seq in range(1, count + 1):
        payload = {"cwd": "/work/a"} if seq == 1 else {"text": f"the {word} plan, step {seq}"}
        kind = "session/start" if seq == 1 else "message/user"
        ack = await js.publish(
            subject_of(SUBJECTS, session_id), event(session_id, seq, kind, payload=payload)
        )
        last = ack.seq
    return last


async def _searchable(db: Path, seq: int, within: float = 30.0) -> None:
    await until(lambda: searchable_seq(db) >= seq, within)


async def _writer_pid(worker_pid: int, other_than: int = 0) -> int:
    for _ in range(300):
        found = [p for p in children_running(worker_pid, WRITER) if p != other_than]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no writer child under {worker_pid} other than {other_than}")


async def test_a_restarted_writer_child_keeps_the_search_index_following(rig: Rig) -> None:
    nc, url, db = rig.nc, rig.url, rig.db
    await create_stream(nc)
    before = await _publish(nc, "s-before", "marmalade", 6)
    worker = await rig.serving("w.log", through=before)
    await _searchable(db, before)
    first = await _writer_pid(worker.pid)

    os.kill(first, signal.SIGKILL)
    # The next batch needs a writer: the worker starts a new child for it.
    after = await _publish(nc, "s-after", "zeppelin", 6)
    await wait_indexed(db, after)
    second = await _writer_pid(worker.pid, other_than=first)
    assert second != first
    await _searchable(db, after)

    client = SessionQueryClient(nc)
    # A caller must be a known session (its workspace routes the search); each asks for
    # the other's word, so the caller's own session being left out cannot hide a miss.
    caller = {"agent": {"session_id": "s-before"}}
    found = await client.call("session_search", {"query": "zeppelin"}, caller, timeout=10)
    assert found.status == "ok" and "s-after" in (found.content or ""), found
    hits = await client.call(
        "session_event_search", {"query": "zeppelin", "session_id": "s-after"}, caller, timeout=10
    )
    assert hits.status == "ok" and "s-after" in (hits.content or ""), hits
    # What was indexed before the kill is still found too.
    caller = {"agent": {"session_id": "s-after"}}
    old = await client.call("session_search", {"query": "marmalade"}, caller, timeout=10)
    assert old.status == "ok" and "s-before" in (old.content or ""), old

    code, out, _err = await run_cli("status", "--db", str(db), "--nats-url", url, "--json")
    report = orjson.loads(out)
    assert code == 0 and report["applied_seq"] == after, report
    assert report["lag_events"] == 0, report
    assert report["search_applied_seq"] == after, report
    code, out, _err = await run_cli("status", "--db", str(db), "--nats-url", url)
    assert code == 0 and f"search index     through seq {after}\n" in out, out
    assert worker.returncode() is None, "the worker itself was never restarted"
    assert await worker.stop() == 0
