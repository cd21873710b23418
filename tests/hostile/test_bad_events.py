"""Bad events on ingest: each is dead-lettered with its reason and counted, the good ones
around them land, and the worker answers tool requests throughout.

A real Worker ingests from a real SESSIONS stream; the bad messages are published straight
to the stream (as a buggy or hostile runtime would), interleaved with good ones, while a
requester keeps calling tools.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from contracts.subjects import TOOL_NAMES
from tests._events import subject_of
from tests.hostile._harness import (
    A_ROOT,
    ALPHA,
    BETA,
    CALLER,
    LiveWorker,
    LogWatch,
    SessionLog,
    event,
    two_workspace_corpus,
)
from worker.replica.ingest_actor import IngestStats
from worker.replica.ingest_consumer import REASON_HEADER, STREAM_SEQ_HEADER

MAX_EVENT_BYTES = 64 * 1024
CORPUS = two_workspace_corpus()
TOOL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "session_search": {"query": "zebrafish"},
    "session_event_search": {"query": "zebrafish", "session_id": A_ROOT},
    "session_trace": {"session_id": A_ROOT},
    "session_event_trace": {"session_id": A_ROOT, "seq": 3},
    "session_event_read": {"session_id": A_ROOT, "seq": 3, "before": 1},
}


@dataclass(frozen=True)
class Bad:
    name: str
    subject_session: str  # the subject token it is published under
    data: bytes
    reason: str  # a fragment the dead-letter reason must contain
    subject_cwd: str = ALPHA  # whose workspace key the subject names


def _json(value: Any) -> bytes:
    return orjson.dumps(value)


def bad_events(caller_next_seq: int) -> list[Bad]:
    good_shape = event("s-bad-shapes", 1, "session/start", {"cwd": ALPHA}, surface="system")
    return [
        Bad("truncated JSON", "s-bad-1", b'{"session_id": "s-bad-1", "seq": ', "invalid JSON"),
        Bad("not UTF-8", "s-bad-2", b"\xff\xfe\x00garbage", "not UTF-8"),
        Bad("a JSON array", "s-bad-3", b"[1, 2, 3]", "contract violation"),
        Bad("seq as a string", "s-bad-4", _json({**good_shape, "seq": "1"}), "seq"),
        Bad("unknown surface", "s-bad-5", _json({**good_shape, "surface": "robot"}), "surface"),
        Bad(
            "naive time",
            "s-bad-6",
            _json({**good_shape, "time": "2026-12-01T10:00:00"}),
            "time",
        ),
        Bad("unknown field", "s-bad-7", _json({**good_shape, "cwd": "/etc"}), "cwd"),
        Bad(
            "bad id characters",
            "s-bad-8",
            _json({**good_shape, "session_id": "s/../x"}),
            "session_id",
        ),
        Bad(
            "cwd not a string",
            "s-bad-9",
            _json({**good_shape, "session_id": "s-bad-9", "payload": {"cwd": 42}}),
            "cwd",
        ),
        Bad(
            "unknown session",
            "s-bad-10",
            _json(event("s-bad-10", 4, "message/user", {"text": "hi"}, surface="user")),
            "unknown session",
        ),
        Bad(
            "gap",
            CALLER,
            _json(event(CALLER, caller_next_seq + 3, "message/assistant", {"text": "gap"})),
            "gap in session",
        ),
        Bad(
            "after session/end",
            A_ROOT,
            _json(event(A_ROOT, 100, "message/assistant", {"text": "late"})),
            "after its session/end",
        ),
        Bad(
            "replaces a later position",
            CALLER,
            _json(event(CALLER, caller_next_seq, "compaction", {"summary": "x"}, replaces=[999])),
            "replaces",
        ),
        Bad(
            "oversized payload",
            "s-bad-14",
            _json(
                {
                    **good_shape,
                    "session_id": "s-bad-14",
                    "payload": {"cwd": ALPHA, "blob": "x" * (MAX_EVENT_BYTES + 1000)},
                }
            ),
            "oversized",
        ),
        Bad(
            "subject does not match session_id",
            "s-elsewhere",
            _json({**good_shape, "session_id": "s-bad-15"}),
            "does not match",
        ),
        Bad(
            "a start under another workspace's key",
            "s-bad-16",
            _json({**good_shape, "session_id": "s-bad-16"}),
            "workspace key mismatch",
            subject_cwd=BETA,
        ),
        Bad(
            "the caller's next event under another workspace's key",
            CALLER,
            _json(event(CALLER, caller_next_seq, "message/user", {"text": "moved"})),
            "workspace key mismatch",
            subject_cwd=BETA,
        ),
    ]


def ingest_stats(live: LiveWorker) -> IngestStats:
    stats = live.worker.ingest_stats()
    assert isinstance(stats, IngestStats)
    return stats


async def keep_calling(
    live: LiveWorker, stop: asyncio.Event, answered: list[str], two_rounds: asyncio.Event
) -> None:
    """Call every tool in turn until ``stop``; each reply must be ok."""
    while not stop.is_set():
        for tool in TOOL_NAMES:
            reply = await live.call(tool, TOOL_ARGUMENTS[tool], caller=CALLER)
            assert reply.ok, (tool, reply.body)
            answered.append(tool)
        if len(answered) >= 2 * len(TOOL_NAMES):
            two_rounds.set()


async def test_bad_events_are_dead_lettered_counted_and_the_good_ones_land(
    nats_url: str, tmp_path: Path
) -> None:
    with LogWatch() as logs:
        live = await LiveWorker.start(
            nats_url, tmp_path, events=CORPUS.events, max_event_bytes=MAX_EVENT_BYTES
        )
        watcher = await nats.connect(nats_url)
        try:
            await _run(live, watcher, logs)
        finally:
            await watcher.close()
            await live.stop()


async def _run(live: LiveWorker, watcher: NATS, logs: LogWatch) -> None:
    letters: list[Msg] = []
    got_all = asyncio.Event()
    caller_events = [e for e in CORPUS.events if e["session_id"] == CALLER]
    bad = bad_events(caller_next_seq=len(caller_events) + 1)

    async def on_letter(msg: Msg) -> None:
        letters.append(msg)
        if len(letters) >= len(bad):
            got_all.set()

    await watcher.subscribe(live.subjects.deadletter, cb=on_letter)
    await watcher.flush()
    before = ingest_stats(live)

    # Good events around the bad ones: a new session, and the caller going on.
    late = SessionLog("s-a-late", ALPHA, parent=A_ROOT)
    late.title("late arrival")
    late.say("latecomer quince arrives between the bad events")
    good = [*late.events, late.end()]

    stop = asyncio.Event()
    answered: list[str] = []
    two_rounds = asyncio.Event()
    caller_load = asyncio.create_task(keep_calling(live, stop, answered, two_rounds))
    try:
        seqs: dict[int, Bad] = {}
        for i, item in enumerate(bad):
            if i < len(good):
                await live.publish([good[i]])
            subject = subject_of(live.subjects, item.subject_session, item.subject_cwd)
            seq = await live.publish_raw(subject, item.data)
            seqs[seq] = item
        await live.publish(good[len(bad) :])
        # A redelivered duplicate (no dedupe id) is a no-op, not a dead letter.
        duplicate_seq = await live.publish_raw(
            subject_of(live.subjects, late.session_id, ALPHA), _json(late.events[1])
        )
        async with asyncio.timeout(30):
            await got_all.wait()
        await live.caught_up()
        # The caller keeps being answered around the bad events: two full rounds at least.
        waiter = asyncio.ensure_future(two_rounds.wait())
        await asyncio.wait({waiter, caller_load}, timeout=30, return_when="FIRST_COMPLETED")
        waiter.cancel()
        answered_during = len(answered)
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await caller_load
    caller_load.result()  # no failed reply
    assert answered_during >= 2 * len(TOOL_NAMES), answered_during

    # Every bad event: one dead letter carrying its stream seq, its bytes and its reason.
    by_seq = {int(m.headers[STREAM_SEQ_HEADER]): m for m in letters if m.headers}
    assert sorted(by_seq) == sorted(seqs), (sorted(by_seq), sorted(seqs))
    for seq, item in seqs.items():
        letter = by_seq[seq]
        reason = (letter.headers or {})[REASON_HEADER]
        assert item.reason in reason, (item.name, reason)
        assert "\n" not in reason and reason.isprintable(), (item.name, reason)
        assert letter.data == item.data, item.name

    # Counted: the dead letters and the duplicate.
    after = ingest_stats(live)
    print(f"\ndead letters: {len(letters)} for {len(bad)} bad events; by reason:")
    for seq, item in sorted(seqs.items()):
        print(f"  {item.name}: {(by_seq[seq].headers or {})[REASON_HEADER]}")
    print(
        f"counted: dead_lettered +{after.dead_lettered - before.dead_lettered},"
        f" duplicates +{after.duplicates - before.duplicates},"
        f" applied +{after.applied - before.applied} (good {len(good)});"
        f" tool replies meanwhile {answered_during}, all ok"
    )
    assert after.dead_lettered - before.dead_lettered == len(bad)
    assert after.duplicates - before.duplicates >= 1
    assert after.applied - before.applied == len(good)
    assert after.last_stream_seq >= duplicate_seq

    # The good ones landed and are served.
    found = await live.call("session_search", {"query": "latecomer quince"}, caller=CALLER)
    assert found.ok and "s-a-late" in found.text, found.body
    trace = await live.call("session_trace", {"session_id": "s-a-late"}, caller=CALLER)
    assert trace.ok and A_ROOT in trace.text, trace.body
    # None of the bad sessions exists.
    for sid in ("s-bad-9", "s-bad-10", "s-bad-14", "s-bad-15", "s-elsewhere"):
        missing = await live.call("session_trace", {"session_id": sid}, caller=CALLER)
        assert missing.code == "SESSION_QUERY_NOT_FOUND", (sid, missing.body)
    # And still serving every tool afterwards.
    for tool in TOOL_NAMES:
        reply = await live.call(tool, TOOL_ARGUMENTS[tool], caller=CALLER)
        assert reply.ok, (tool, reply.body)
    assert logs.unhandled() == []
