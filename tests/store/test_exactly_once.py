"""Exactly-once ingestion across SIGKILLs of the ingesting process at random points.

The real ``python -m worker.replica.ingest_consumer`` process ingests a stream of ~20k
events; it is killed with SIGKILL three times while it works (each time once its committed
position has passed a random target, plus a random delay, so kills land inside batches),
restarted, and finally let run until caught up. The index must then hold exactly what the
stream holds: same count, same checksum over (session_id, seq, raw_json), every header's
counters right, and both SQLite's and FTS5's integrity checks clean.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS
from nats.js.api import AckPolicy, ConsumerConfig

from contracts.subjects import Subjects
from tests._events import event_dict, subject_of
from tests._index import index_seq
from worker.replica.ingest_consumer import ensure_events_stream
from worker.store.files.integrity import check_integrity, checksum_of, content_checksum

SESSIONS = 80
EVENTS_PER_SESSION = 250  # 20,000 events
KILLS = 3
PHASE_TIMEOUT_S = 40.0


def cwd_of(session_id: str) -> str:
    return f"/work/{int(session_id.removeprefix('s-')) % 5}"


def corpus(rng: random.Random) -> list[tuple[str, bytes]]:
    """Interleaved sessions with titles, relations and ends: every table gets rows."""
    streams: list[list[bytes]] = []
    for s in range(SESSIONS):
        sid = f"s-{s:03d}"
        events: list[bytes] = []
        for seq in range(1, EVENTS_PER_SESSION + 1):
            body = event_dict(
                sid,
                seq,
                "tool/result",
                surface="tool",
                time=f"2026-12-02T{seq // 3600:02d}:{seq // 60 % 60:02d}:{seq % 60:02d}Z",
                payload={"tool": "bash", "output": f"run {rng.random()} src/mod_{seq}.py"},
            )
            if seq == 1:
                body.update(type="session/start", surface="system")
                body["payload"] = {"cwd": cwd_of(sid)}
            elif seq == EVENTS_PER_SESSION:
                body.update(type="session/end", surface="system", payload={})
            elif seq % 50 == 0:
                body.update(type="session/title", payload={"title": f"title {sid} {seq}"})
            elif seq % 17 == 0:
                body["replaces"] = [seq - 1]
                body["cites"] = [{"session_id": f"s-{(s + 1) % SESSIONS:03d}", "seq": 1}]
            events.append(orjson.dumps(body))
        streams.append(events)
    out: list[tuple[str, bytes]] = []
    cursors = [0] * SESSIONS
    live = list(range(SESSIONS))
    while live:
        s = rng.choice(live)
        out.append((f"s-{s:03d}", streams[s][cursors[s]]))
        cursors[s] += 1
        if cursors[s] == EVENTS_PER_SESSION:
            live.remove(s)
    return out


def start_ingester(
    db: Path, nats_url: str, subjects: Subjects, log: Path
) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-m", "worker.replica.ingest_consumer",
        "--db", str(db),
        "--nats-url", nats_url,
        "--stream", subjects.events_stream,
        "--events-prefix", subjects.events_prefix,
        "--deadletter", subjects.deadletter,
    ]  # fmt: skip
    env = {**os.environ, "SESSIONQUERY_LOG_FORMAT": "json"}
    with log.open("ab") as out:
        return subprocess.Popen(args, stdout=out, stderr=out, env=env)


async def wait_until(predicate: Any, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PHASE_TIMEOUT_S
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


async def stream_contents(nc: NATS, subjects: Subjects, total: int) -> list[tuple[str, int, str]]:
    """What the stream holds, read back through a temporary consumer."""
    js = nc.jetstream()
    psub = await js.pull_subscribe(
        subjects.events_wildcard,
        stream=subjects.events_stream,
        config=ConsumerConfig(ack_policy=AckPolicy.NONE, mem_storage=True),
    )
    held: list[tuple[str, int, str]] = []
    try:
        while len(held) < total:
            for msg in await psub.fetch(1000, timeout=5):
                value = orjson.loads(msg.data)
                held.append((value["session_id"], value["seq"], msg.data.decode()))
    finally:
        await psub.unsubscribe()
    return held


async def test_exactly_once_across_sigkills(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    print(f"seed={seed}")  # printed on failure, to replay the same kill points

    js = nc.jetstream()
    await ensure_events_stream(js, subjects)
    events = corpus(rng)
    total = len(events)
    for start in range(0, total, 1000):
        acks = [
            await js.publish_async(subject_of(subjects, sid, cwd_of(sid)), body)
            for sid, body in events[start : start + 1000]
        ]
        await asyncio.gather(*acks)
    assert (await js.stream_info(subjects.events_stream)).state.last_seq == total

    db = tmp_path / "index.sqlite"
    log = tmp_path / "ingester.log"
    # One target in each of KILLS spans, leaving room at the end so the last kill still
    # lands while there is work left.
    span = (total - 4000) // KILLS
    targets = [rng.randrange(1000 + i * span, 1000 + (i + 1) * span - 1500) for i in range(KILLS)]
    killed_at: list[int] = []
    for target in targets:
        # Past what the last run committed, so this run is killed while it ingests.
        target = min(max(target, index_seq(db) + rng.randint(200, 1000)), total - 3000)
        proc = start_ingester(db, nats_url, subjects, log)
        try:
            await wait_until(
                lambda t=target, p=proc: index_seq(db) >= t or p.poll() is not None,
                f"ingest to pass stream seq {target}",
            )
            assert proc.poll() is None, log.read_text()[-4000:]
            await asyncio.sleep(rng.uniform(0, 0.01))  # land somewhere inside a batch
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        killed_at.append(index_seq(db))
    print(f"targets={targets} committed at kill={killed_at}")
    # Every kill came while ingestion had work left, each one later than the one before.
    assert killed_at == sorted(set(killed_at)) and killed_at[-1] < total

    proc = start_ingester(db, nats_url, subjects, log)
    try:
        await wait_until(lambda: index_seq(db) >= total or proc.poll() is not None, "catch-up")
        assert proc.poll() is None, log.read_text()[-4000:]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, log.read_text()[-4000:]
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    held = await stream_contents(nc, subjects, total)
    assert len(held) == total
    assert content_checksum(db) == checksum_of(held)
    assert check_integrity(db) == []

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'stream_seq'").fetchone() == (
            total,
        )
        headers = conn.execute(
            "SELECT count(*), sum(event_count), min(last_seq), max(last_seq),"
            " sum(availability = 'persisted') FROM sessions"
        ).fetchone()
        assert headers == (SESSIONS, total, EVENTS_PER_SESSION, EVENTS_PER_SESSION, SESSIONS)
        per_session = sum(1 for q in range(2, EVENTS_PER_SESSION) if q % 50 and q % 17 == 0)
        replacement_rows = conn.execute("SELECT count(*) FROM replacements").fetchone()[0]
        assert replacement_rows == SESSIONS * per_session
        assert conn.execute("SELECT count(*) FROM citations").fetchone()[0] == replacement_rows
    finally:
        conn.close()
    # Nothing valid was dead-lettered along the way.
    assert '"event dead-lettered"' not in log.read_text()
    await js.delete_stream(subjects.events_stream)
