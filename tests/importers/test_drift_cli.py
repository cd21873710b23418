"""Drift is loud and a dry run sees before publishing, as the real commands do it over a
real nats-server: unknown record kinds in the import summary, in ``watch``'s log and in
``status``; a source of another shape reported with its path; ``--dry-run`` publishing
nothing; ``--output`` writing the bytes that ``--format events`` imports again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._events import event
from tests._harness import until
from tests._subjects import unique_subjects
from tests.commands.test_status_index import status
from tests.importers.test_drift import HINT, SECRET, transcript
from tests.importers.test_import_tools import import_args, sessionquery
from tests.importers.test_watch import said, start, stop, stream_count, watch_command


@pytest.fixture
async def bucket(nc: NATS, unique: str, subjects: Subjects) -> AsyncIterator[str]:
    """This test's imports bucket (the figures status reads), removed with its stream."""
    name = f"imports-{unique}"
    yield name
    js = nc.jetstream()
    with contextlib.suppress(Exception):
        await js.delete_key_value(name)
    with contextlib.suppress(Exception):
        await js.delete_stream(subjects.events_stream)


async def stream_bodies(nc: NATS, subjects: Subjects) -> list[bytes]:
    js = nc.jetstream()
    info = await js.stream_info(subjects.events_stream)
    return [
        (await js.get_msg(subjects.events_stream, seq)).data or b""
        for seq in range(info.state.first_seq, info.state.last_seq + 1)
    ]


async def run(*args: str) -> tuple[int, str, str]:
    done = await asyncio.to_thread(sessionquery, *args)
    return done.returncode, done.stdout, done.stderr


async def test_an_unknown_kind_is_loud_in_the_summary_and_in_status(
    nc: NATS, nats_url: str, subjects: Subjects, bucket: str, tmp_path: Path
) -> None:
    path = transcript(tmp_path / "s.jsonl", new_kinds=2)
    code, _, err = await run(*import_args(nats_url, subjects, path, fmt="claude-code"),
                             "--imports-bucket", bucket, "--quiet")  # fmt: skip
    assert code == 0, err
    assert f"unknown record kinds: record:hologram 2 — {HINT}" in err.splitlines()
    assert "skipped records: record:file-history-snapshot 1, record:hologram 2" in err
    assert await stream_count(nc, subjects) == 3  # start, the user's, the assistant's

    _, out = await status(nats_url, subjects, tmp_path, "--json", "--imports-bucket", bucket)
    figures = orjson.loads(out)["imports"]["claude-code"]
    assert figures["unknown"] == {"record:hologram": 2}
    assert figures["skipped"] == {"record:file-history-snapshot": 1}
    assert (figures["files"], figures["sessions"], figures["events"]) == (1, 1, 3)
    assert figures["command"] == "import" and figures["last_import"].endswith("Z")
    _, text = await status(nats_url, subjects, tmp_path, "--imports-bucket", bucket)
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("  claude-code: last import"))
    assert lines[row].endswith(": 1 files, 1 sessions, 3 events"), text
    assert lines[row + 1] == f"    unknown record kinds: record:hologram 2 — {HINT}"


async def test_status_says_when_nothing_was_imported(
    nats_url: str, subjects: Subjects, bucket: str, tmp_path: Path
) -> None:
    _, text = await status(nats_url, subjects, tmp_path, "--imports-bucket", bucket)
    assert "imports          none recorded" in text


async def test_a_source_of_another_shape_is_reported_with_its_path_and_exit_1(
    nc: NATS, nats_url: str, subjects: Subjects, bucket: str, tmp_path: Path
) -> None:
    (tmp_path / "chats").mkdir()
    foreign = tmp_path / "chats" / "session-foreign.jsonl"  # where Gemini CLI keeps one
    foreign.write_bytes(b'{"who": "a"}\n{"who": "b"}\n{"who": "c"}\n')
    elsewhere = tmp_path / "notes.jsonl"  # not a file Gemini CLI writes at all
    elsewhere.write_bytes(foreign.read_bytes())
    args = import_args(nats_url, subjects, foreign, elsewhere, fmt="gemini-cli")
    code, _, err = await run(*args, "--imports-bucket", bucket, "--quiet")
    assert code == 1, err
    lines = err.splitlines()
    assert (
        f"{foreign}: not a recognised gemini-cli source (no record of a known kind in 3 records)"
        in lines
    ), err
    assert (
        f"{elsewhere}: not a recognised gemini-cli source (not where or how gemini-cli names"
        " its session files)" in lines
    ), err
    assert await stream_count(nc, subjects) == 0
    _, out = await status(nats_url, subjects, tmp_path, "--json", "--imports-bucket", bucket)
    assert orjson.loads(out)["imports"]["gemini-cli"]["unrecognised"] == 2


async def test_a_dry_run_publishes_nothing_and_prints_each_file(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    claude = transcript(tmp_path / "s.jsonl")
    ours = tmp_path / "ours.jsonl"
    ours.write_bytes(b"\n".join([
        event("fresh", 1, "session/start"), event("fresh", 2), event("fresh", 4),  # a gap
        event("elsewhere", 7),  # its start is not in the files read
    ]) + b"\n")  # fmt: skip
    code, out, err = await run(*import_args(nats_url, subjects, claude, fmt="claude-code"),
                               "--dry-run", "--quiet")  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[:3] == [
        f"{claude} (claude-code)",
        "  sessions 1, events 3: message/assistant 1, message/user 1, session/start 1",
        "  skipped by design: record:file-history-snapshot 1 (backups of the files Claude"
        " Code edits, not conversation)",
    ]
    assert f"  unknown record kinds: record:hologram 1 — {HINT}" in out.splitlines()
    assert SECRET not in out + err
    assert "dry run: 3 events would be published from 1 files (nothing was)" in err

    # Without any NATS URL, and what the publisher would refuse or look up.
    environment = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    done = await asyncio.to_thread(
        sessionquery, "import", "--format", "events", str(ours), "--dry-run", "--quiet",
        env=environment,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # a gap: the worker would refuse it
    assert done.stdout.splitlines()[:6] == [
        f"{ours} (events)",
        "  sessions 1, events 4: message/user 3, session/start 1",
        "  would be refused: 1",
        "    gap in session fresh: expected seq 3, got 4",
        "  would be looked up in the stream: 1 sessions (their session/start is not in the"
        " files read)",
        "total: 1 files, sessions 1, events 4: message/user 3, session/start 1",
    ]
    assert await stream_count(nc, subjects) == 0
    with pytest.raises(Exception, match="not found"):
        await nc.jetstream().stream_info(subjects.events_stream)


async def test_output_is_what_is_published_and_imports_again_as_the_same_events(
    nc: NATS, nats_url: str, subjects: Subjects, bucket: str, tmp_path: Path
) -> None:
    claude = transcript(tmp_path / "s.jsonl")
    written = tmp_path / "events.jsonl"
    dry = tmp_path / "dry.jsonl"
    args = import_args(nats_url, subjects, claude, fmt="claude-code")
    code, _, err = await run(*args, "--output", str(written), "--quiet")
    assert code == 0, err
    published = await stream_bodies(nc, subjects)
    assert written.read_bytes().splitlines() == published and len(published) == 3
    code, _, err = await run(*args, "--output", str(dry), "--dry-run", "--quiet")
    assert code == 0 and dry.read_bytes() == written.read_bytes(), err

    again = unique_subjects()
    try:
        code, _, err = await run(*import_args(nats_url, again, written, fmt="events"),
                                 "--quiet", "--imports-bucket", bucket)  # fmt: skip
        assert code == 0, err
        assert await stream_bodies(nc, again) == published
    finally:
        with contextlib.suppress(Exception):
            await nc.jetstream().delete_stream(again.events_stream)


async def test_watch_says_unknown_kinds_as_they_appear_and_status_shows_them(
    nc: NATS, nats_url: str, subjects: Subjects, bucket: str, unique: str, tmp_path: Path
) -> None:
    folder = tmp_path / "projects" / "-home-dev-drift"
    folder.mkdir(parents=True)
    path = transcript(folder / "s.jsonl")
    foreign = folder / "t.jsonl"
    foreign.write_bytes(b'{"who": "a"}\n')
    command = [*watch_command(nats_url, subjects, f"watch-{unique}", path, foreign,
                              fmt="claude-code"), "--imports-bucket", bucket]  # fmt: skip
    process = start(command)
    try:
        await until(lambda: "unknown record kinds: record:hologram 1" in said(process), 30)
        assert f"watch: {path}: unknown record kinds: record:hologram 1 — {HINT}" in said(process)
        await until(lambda: f"watch: {foreign}: not a recognised" in said(process), 30)
        assert (
            f"watch: {foreign}: not a recognised claude-code source (no record of a known kind"
            " in 1 records)" in said(process)
        )
        with path.open("ab") as fh:
            fh.write(orjson.dumps({"type": "mirage"}) + b"\n")
        await until(lambda: "unknown record kinds: record:mirage 1" in said(process), 30)
        # Only what is new is said again.
        assert said(process).count("record:hologram 1 —") == 1
    finally:
        code, log = stop(process, signal.SIGTERM)
    assert code == 0, log
    kinds = "record:None 1, record:hologram 1, record:mirage 1"
    assert f"unknown record kinds: {kinds} — {HINT}" in log
    _, out = await status(nats_url, subjects, tmp_path, "--json", "--imports-bucket", bucket)
    figures = orjson.loads(out)["imports"]["claude-code"]
    assert figures["command"] == "watch"
    assert figures["unknown"] == {"record:None": 1, "record:hologram": 1, "record:mirage": 1}
    assert (figures["files"], figures["sessions"], figures["events"]) == (2, 1, 3)
    await nc.jetstream().delete_key_value(f"watch-{unique}")
