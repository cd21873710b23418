"""Fixtures imported by the real command, indexed by a real worker, answered by the tools."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import body, call, config_for, until
from tests.importers._corpus import (
    AIDER_FILE,
    CLAUDE_AGENT,
    CLAUDE_DIR,
    CLAUDE_SESSION,
    CLAUDE_SIDE,
    CODEX_DIR,
    CODEX_SESSION,
)
from worker.worker import Worker

# Events the fixtures hold: Claude Code 11 + 3 (sidechain) + 6 (sub-agent, titled by its
# Task call), Codex 7, Aider 9.
EXPECTED_EVENTS = 36


def sessionquery(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", *args], capture_output=True, timeout=60, env=env
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def import_args(
    nats_url: str, subjects: Subjects, *paths: Path, fmt: str = "auto", idle: str = "inf"
) -> list[str]:
    """``idle``: ``--idle-seconds``; by default no session is ended (the Aider fixture's
    last session would end or not by its checkout's modification time)."""
    return [
        "import", "--format", fmt, *map(str, paths), "--nats-url", nats_url,
        "--stream", subjects.events_stream, "--events-prefix", subjects.events_prefix,
        "--timezone", "UTC", "--idle-seconds", idle,
    ]  # fmt: skip


@pytest.fixture
async def imported(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> AsyncIterator[Worker]:
    paths = (CLAUDE_DIR, CODEX_DIR, AIDER_FILE)
    first = await asyncio.to_thread(sessionquery, *import_args(nats_url, subjects, *paths))
    assert first.returncode == 1, first.stderr  # the fixtures' two malformed lines
    assert f"published {EXPECTED_EVENTS} events (0 already in the stream)" in first.stderr
    assert ".jsonl:8: invalid JSON" in first.stderr and ".jsonl:9: invalid JSON" in first.stderr
    assert "skipped records: " in first.stderr and "record:future_record 1" in first.stderr
    assert "4/4 files" in first.stderr  # the progress line
    # Every converter numbers its sessions from a session/start, without gaps.
    assert "dead-letter" not in first.stderr, first.stderr
    js = nc.jetstream()
    assert (await js.stream_info(subjects.events_stream)).state.messages == EXPECTED_EVENTS
    # Importing again publishes the same events, which the stream drops as duplicates.
    second = await asyncio.to_thread(sessionquery, *import_args(nats_url, subjects, *paths))
    assert f"({EXPECTED_EVENTS} already in the stream)" in second.stderr
    assert "dead-letter" not in second.stderr, second.stderr
    assert (await js.stream_info(subjects.events_stream)).state.messages == EXPECTED_EVENTS
    async with indexed(nc, subjects, tmp_path, EXPECTED_EVENTS) as worker:
        yield worker


@contextlib.asynccontextmanager
async def indexed(
    nc: NATS, subjects: Subjects, tmp_path: Path, events: int
) -> AsyncIterator[Worker]:
    """A worker that has indexed the stream's first ``events``; the stream deleted after."""
    worker = await Worker.start(nc, config_for(subjects, tmp_path))
    try:

        async def caught_up() -> bool:
            return (await worker.indexed_through()) == events

        await until(caught_up, within=20)
        yield worker
    finally:
        await worker.stop()
        await nc.jetstream().delete_stream(subjects.events_stream)


async def ask(nc: NATS, worker: Worker, tool: str, caller: str, **args: Any) -> str:
    reply, _ = await call(nc, worker.config.subjects, tool, body(caller=caller, **args))
    assert reply["status"] == "ok", reply
    return str(reply["content"])


async def test_imported_sessions_answer_the_tools(nc: NATS, imported: Worker) -> None:
    # Lineage: the sub-agent transcript and the inline sidechain are children of the session.
    trace = await ask(nc, imported, "session_trace", CODEX_SESSION, session_id=CLAUDE_SESSION)
    assert CLAUDE_AGENT in trace and CLAUDE_SIDE in trace
    child = await ask(nc, imported, "session_trace", CODEX_SESSION, session_id=CLAUDE_AGENT)
    assert CLAUDE_SESSION in child
    # The sub-agent's start cites the Task call that spawned it, across sessions.
    spawned = await ask(
        nc, imported, "session_event_trace", CODEX_SESSION, session_id=CLAUDE_AGENT, seq=1
    )
    assert f"{CLAUDE_SESSION} seq 6 · tool/call" in spawned.split("Cites (")[1]
    # Citations: a tool result cites its tool call; the compaction replaces what it summarised.
    cited = await ask(
        nc, imported, "session_event_trace", CODEX_SESSION, session_id=CLAUDE_SESSION, seq=5
    )
    cites = cited.split("Cites (")[1].split("Cited by")[0]
    assert f"{CLAUDE_SESSION} seq 4 · tool/call" in cites
    compacted = await ask(
        nc, imported, "session_event_trace", CODEX_SESSION, session_id=CLAUDE_SESSION, seq=8
    )
    replaced = compacted.split("Replaces (")[1].split("Replaced by")[0]
    assert [f"seq {n} ·" in replaced for n in range(1, 9)] == [False, *[True] * 6, False]
    # Search across the workspace finds the German Codex session and the sub-agent's grep.
    found = await ask(nc, imported, "session_search", CLAUDE_SESSION, query="Zeitzonenfehler")
    assert CODEX_SESSION in found
    grep = await ask(nc, imported, "session_search", CODEX_SESSION, query="datetime.now totals")
    assert CLAUDE_AGENT in grep or CLAUDE_SESSION in grep
    read = await ask(
        nc, imported, "session_event_read", CODEX_SESSION, session_id=CODEX_SESSION, seq=7
    )
    assert "タイムゾーン" in read
