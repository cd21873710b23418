"""``sessionquery watch`` as the real command: follow, SIGKILL mid-file, resume, idle end."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import until
from tests._index import connect
from tests.importers._corpus import CODEX_FILE
from tests.test_import_purge import ingest_all
from worker.importers.pipeline import convert_file

SESSION = "0000cccc-1111-4222-8333-444455556666"
CHUNK = 10


def transcript_line(i: int) -> bytes:
    """One hand-made Claude Code record: each gives one event (the first also the start)."""
    kind = "user" if i % 2 else "assistant"
    return orjson.dumps({
        "type": kind, "sessionId": SESSION, "uuid": f"0000cccc-0000-4000-8000-{i:012d}",
        "parentUuid": None, "isSidechain": False, "cwd": "/home/dev/watched",
        "timestamp": f"2026-12-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
        "message": {"role": kind, "content": f"step {i}: checking the deploy pipeline"},
    }) + b"\n"  # fmt: skip


def watch_command(
    nats_url: str,
    subjects: Subjects,
    bucket: str,
    *paths: Path,
    fmt: str,
    idle: float = 3600,
    quiet: bool = True,
) -> list[str]:
    return [
        sys.executable, "-m", "worker.cli", "watch", "--format", fmt, *map(str, paths),
        "--nats-url", nats_url, "--stream", subjects.events_stream,
        "--events-prefix", subjects.events_prefix, "--state-bucket", bucket,
        "--chunk-lines", str(CHUNK), "--poll-interval", "0.05", "--idle-seconds", str(idle),
        *(["--quiet"] if quiet else []),
    ]  # fmt: skip


def start(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    # stderr goes to a file, so a test can wait for what the process said so far.
    log = tempfile.NamedTemporaryFile(prefix="watch-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=env)
    log.close()
    _logs[process.pid] = Path(log.name)
    return process


def said(process: subprocess.Popen[bytes]) -> str:
    return _logs[process.pid].read_text(errors="replace")


def stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> tuple[int, str]:
    process.send_signal(sig)
    process.wait(timeout=30)
    return process.returncode, said(process)


_logs: dict[int, Path] = {}


async def stream_count(nc: NATS, subjects: Subjects) -> int:
    try:
        return int((await nc.jetstream().stream_info(subjects.events_stream)).state.messages)
    except Exception:
        return 0


def indexed(db: Path) -> list[tuple[str, int, bytes]]:
    conn = connect(db)
    try:
        rows = conn.execute(
            "SELECT session_id, seq, event_json(doc) FROM events ORDER BY session_id, seq"
        )
        return [(sid, seq, raw.encode()) for sid, seq, raw in rows]
    finally:
        conn.close()


async def test_watch_follows_survives_sigkill_and_resumes_without_loss_or_duplicate(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    root = tmp_path / "projects" / "-home-dev-watched"
    root.mkdir(parents=True)
    main = root / f"{SESSION}.jsonl"
    first_part = b"".join(transcript_line(i) for i in range(1, 301))
    held = transcript_line(301)
    main.write_bytes(first_part + held[:40])  # a partial last line, still being written
    command = watch_command(nats_url, subjects, f"watch-{unique}", tmp_path / "projects",
                           fmt="claude-code")  # fmt: skip
    first = start(command)
    try:
        await until(lambda: has(nc, subjects, 301), within=20)
        await asyncio.sleep(0.3)  # several polls: the partial line stays unpublished
        assert await stream_count(nc, subjects) == 301
        with main.open("ab") as fh:  # the line completes, and many more follow
            fh.write(held[40:] + b"".join(transcript_line(i) for i in range(302, 3001)))
        await until(lambda: has(nc, subjects, 303, at_least=True), within=20)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        at_kill = await stream_count(nc, subjects)
    finally:
        if first.poll() is None:
            first.kill()
    # A new file (a sub-agent transcript) appears while no watcher runs.
    agent = root / SESSION / "subagents" / "agent-z9.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(orjson.dumps({
        "type": "user", "sessionId": SESSION, "agentId": "z9", "isSidechain": True,
        "uuid": "0000dddd-0000-4000-8000-000000000001", "cwd": "/home/dev/watched",
        "timestamp": "2026-12-01T02:00:00Z", "message": {"role": "user", "content": "sub"},
    }) + b"\n")  # fmt: skip
    second = start(command)
    try:
        await until(lambda: has(nc, subjects, 3003), within=60)
    finally:
        code, err = stop(second)
    assert code == 0, err
    assert "watch stopped: published " in err
    republished = int(err.split("(")[1].split(" already")[0])
    # Resumed from the stored position: at most one chunk is sent again (with the same ids).
    assert republished <= CHUNK + 1, (republished, at_kill)
    print("stream held", at_kill, "of 3003 at the SIGKILL;", republished, "sent again")
    assert await stream_count(nc, subjects) == 3003  # 3000 lines + start, sub-agent 2
    # SIGTERM stored the exact position: a third run sends only what was appended since.
    with main.open("ab") as fh:
        fh.write(b"".join(transcript_line(i) for i in range(3001, 3006)))
    third = start(command)
    try:
        await until(lambda: has(nc, subjects, 3008), within=30)
    finally:
        code, err = stop(third)
    assert code == 0 and "published 5 events (0 already in the stream)" in err, err
    db = tmp_path / "index.sqlite"
    await ingest_all(nc, db, subjects, through=3008)
    expected = []
    for path in (main, agent):
        outs, _ = convert_file("claude-code", path)
        expected += [(o.session_id, o.seq, o.body) for o in outs]
    assert indexed(db) == sorted(expected)  # the index holds exactly what the files hold
    await nc.jetstream().delete_stream(subjects.events_stream)


async def test_a_quiet_file_gets_its_session_end_once(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    path = tmp_path / CODEX_FILE.name
    path.write_bytes(CODEX_FILE.read_bytes())
    os.utime(path, (1, 1))  # untouched for ages
    command = watch_command(
        nats_url, subjects, f"watch-{unique}", path, fmt="codex", idle=5, quiet=False
    )
    first = start(command)
    try:
        await until(lambda: has(nc, subjects, 8), within=20)
    finally:
        code, err = stop(first)
    assert code == 0, err
    assert f"{path}:9: invalid JSON" in err
    assert "1/1 files  7 events" in err  # the catch-up progress line
    js = nc.jetstream()
    last = await js.get_last_msg(
        subjects.events_stream, subjects.stored_session("*", "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001")
    )
    assert last.data is not None
    assert orjson.loads(last.data)["type"] == "session/end"
    # Restarted: the end is remembered (no second end, nothing re-published).
    second = start(command)
    # Caught up (its progress line) before the stop: a SIGTERM during interpreter start-up
    # would end it before its handler is installed.
    await until(lambda: "1/1 files" in said(second), within=30)
    code, err = stop(second)
    assert code == 0, err
    assert "published 0 events" in err
    assert await stream_count(nc, subjects) == 8
    await js.delete_stream(subjects.events_stream)


async def has(nc: NATS, subjects: Subjects, count: int, *, at_least: bool = False) -> bool:
    held = await stream_count(nc, subjects)
    return held >= count if at_least else held == count
