"""What every agent format's end-to-end test does: import a generated history with the real
command (twice: the second publishes nothing new), index it with a real worker, and follow
a growing file with the real ``watch``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import body, call, until
from tests.importers.test_import_tools import ask, import_args, indexed, sessionquery
from tests.importers.test_watch import has, start, stop, watch_command
from worker.importers.base import Outgoing, SpawnLinks, Tally
from worker.importers.detect import expand
from worker.importers.pipeline import convert_file
from worker.worker import Worker

Bodies = dict[str, list[dict[str, Any]]]


def by_session(fmt: str, root: Path) -> tuple[Bodies, list[Outgoing], Tally]:
    """Every source under ``root`` converted in import's order with one links table:
    (event bodies by session, the events, the tally)."""
    links, tally, outs = SpawnLinks(), Tally(), list[Outgoing]()
    for path in expand([root], fmt):
        events, file_tally = convert_file(fmt, path, links=links)
        outs += events
        tally.merge(file_tally)
    sessions: Bodies = {}
    for out in outs:
        sessions.setdefault(out.session_id, []).append(orjson.loads(out.body))
    return sessions, outs, tally


def converted(fmt: str, root: Path) -> tuple[int, set[str]]:
    """(events, sessions the source leaves open) the converter makes of every source
    under ``root``, read in the order ``import`` reads them."""
    events, sessions, ended, links = 0, set[str](), set[str](), SpawnLinks()
    for path in expand([root], fmt):
        outs, _ = convert_file(fmt, path, links=links)
        events += len(outs)
        sessions |= {out.session_id for out in outs}
        ended |= {out.session_id for out in outs if out.kind == "session/end"}
    return events, sessions - ended


@contextlib.asynccontextmanager
async def imported(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path, root: Path, fmt: str, *,
    expected: int | None = None, idle: str = "1800",
) -> AsyncIterator[tuple[Worker, str]]:  # fmt: skip
    """``root`` imported twice and indexed; yields the worker and the first import's
    stderr. Every session of a generated history is old: each open one gets its end.
    ``expected``: the events the import publishes, when the test counts them itself."""
    if expected is None:
        events, open_sessions = converted(fmt, root)
        expected = events + len(open_sessions)
    args = import_args(nats_url, subjects, root, fmt=fmt, idle=idle)
    first = await asyncio.to_thread(sessionquery, *args)
    assert first.returncode == 0, first.stderr
    assert f"published {expected} events (0 already in the stream)" in first.stderr
    assert "dead-letter" not in first.stderr, first.stderr
    second = await asyncio.to_thread(sessionquery, *args)
    assert f"published {expected} events ({expected} already in the stream)" in second.stderr
    js = nc.jetstream()
    assert (await js.stream_info(subjects.events_stream)).state.messages == expected
    async with indexed(nc, subjects, tmp_path, expected) as worker:
        yield worker, first.stderr


async def watch_grows(
    nc: NATS, nats_url: str, subjects: Subjects, bucket: str, root: Path, fmt: str,
    file: Path, rest: bytes, *, before: int, after: int,
) -> str:  # fmt: skip
    """Watch ``root`` while ``file`` (holding ``before`` events' worth, maybe a partial
    last record) gets ``rest``; returns what watch said. The stream must hold ``before``
    events until then and ``after`` once the rest is read."""
    process = start(watch_command(nats_url, subjects, bucket, root, fmt=fmt))
    try:
        await until(lambda: has(nc, subjects, before), within=20)
        await asyncio.sleep(0.3)  # several polls: nothing more while the file is unchanged
        assert await has(nc, subjects, before)
        with file.open("ab") as fh:
            fh.write(rest)
        await until(lambda: has(nc, subjects, after), within=20)
    finally:
        code, said = stop(process)
    assert code == 0, said
    await nc.jetstream().delete_stream(subjects.events_stream)
    return said


async def assert_events(nc: NATS, worker: Worker, caller: str, session: str, count: int) -> None:
    """Through the tools: ``session`` holds exactly ``count`` events, the last its end."""
    last = await ask(nc, worker, "session_event_read", caller, session_id=session, seq=count)
    assert "session/end" in last, last
    beyond = body(caller=caller, session_id=session, seq=count + 1)
    reply, _ = await call(nc, worker.config.subjects, "session_event_read", beyond)
    assert reply["status"] == "error", reply
