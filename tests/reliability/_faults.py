"""What the index-versus-stream fault tests share: events, the stream, the comparison, and
the rig (a nats-server of the test's own, one index file, ``serve`` processes over them)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError

from contracts.streams import events_stream_config
from contracts.subjects import Subjects
from tests._events import event, subject_of
from tests.reliability._harness import stream_contents, wait_indexed
from tests.reliability._serve import REPO, Serve, serve_args
from worker.store.files.integrity import checksum_of, content_checksum
from worker.transport.connection import open_connection

SUBJECTS = Subjects()


def session_events(session_id: str, count: int, cwd: str = "/work/a") -> list[bytes]:
    out = []
    for seq in range(1, count + 1):
        kind = "session/start" if seq == 1 else "message/user"
        text = f"note {seq} of {session_id}"
        payload: dict[str, Any] = {"cwd": cwd} if seq == 1 else {"text": text}
        out.append(event(session_id, seq, kind, time="2026-12-03T09:00:00Z", payload=payload))
    return out


async def publish(nc: NATS, sessions: Sequence[str], per_session: int) -> int:
    """Publish ``per_session`` events for each session (sessions interleaved); returns the
    last stream sequence."""
    js = nc.jetstream()
    try:
        await js.stream_info(SUBJECTS.events_stream)
    except NotFoundError:
        await create_stream(nc)
    batches = [session_events(s, per_session) for s in sessions]
    last = 0
    for i in range(per_session):
        for sid, events in zip(sessions, batches, strict=True):
            ack = await js.publish(subject_of(SUBJECTS, sid), events[i])
            last = ack.seq
    return last


async def create_stream(nc: NATS, **limits: Any) -> None:
    # The one configuration, with the test's own limits (e.g. max_msgs) on top.
    config = dataclasses.replace(events_stream_config(SUBJECTS), **limits)
    await nc.jetstream().add_stream(config)


@asynccontextmanager
async def connected(url: str) -> AsyncIterator[NATS]:
    nc = await open_connection(url, connect_timeout=5, max_reconnect_attempts=5)
    try:
        yield nc
    finally:
        await nc.close()


async def assert_index_equals_stream(nc: NATS, db: Path) -> int:
    """Count and checksum of the index equal the stream's; returns the count."""
    held = await stream_contents(nc, SUBJECTS)
    expected = checksum_of(held)
    got = await asyncio.to_thread(content_checksum, db)
    assert got == expected, f"index {got[0]} events, stream {expected[0]}"
    return got[0]


async def run_cli(*args: str, within: float = 60.0) -> tuple[int, str, str]:
    """``python -m worker.cli ARGS``: (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "worker.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    out, err = await asyncio.wait_for(proc.communicate(), within)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


@dataclass
class Rig:
    """The prelude of every index-versus-stream test: a connection to the test's own
    nats-server, the index file, and ``serve`` processes over them (logs in the tmp dir)."""

    nc: NATS
    url: str
    db: Path
    logs: Path

    async def start(self, log: str, *extra: str, env: dict[str, str] | None = None) -> Serve:
        """A ``serve`` process, started (it may still refuse and exit); ``env`` on top of
        the test's environment."""
        args = serve_args(self.url, self.db, *extra)
        return await Serve(args, self.logs / log, env=dict(env or {})).start()

    async def serving(
        self, log: str, *extra: str, through: int = 0, env: dict[str, str] | None = None
    ) -> Serve:
        """A ``serve`` process that serves, its index through stream seq ``through``."""
        worker = await (await self.start(log, *extra, env=env)).serving()
        if through:
            await wait_indexed(self.db, through)
        return worker

    async def indexed(self, log: str, through: int, *extra: str) -> None:
        """One ``serve`` run that indexes through ``through`` and stops cleanly."""
        worker = await self.serving(log, *extra, through=through)
        assert await worker.stop() == 0


@asynccontextmanager
async def open_rig(url: str, tmp_path: Path) -> AsyncIterator[Rig]:
    async with connected(url) as nc:
        yield Rig(nc=nc, url=url, db=tmp_path / "index.sqlite", logs=tmp_path)
