"""``sessionquery status`` says which index it read, and finds the serving worker's when
``--home`` differs (issue 24: it reported "no such file" beside a serving worker)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import config_for
from worker.store.index.writer import SqliteIndexWriter
from worker.worker import Worker

REPO = Path(__file__).resolve().parents[2]


async def status(
    nats_url: str, subjects: Subjects, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """The real command, run in ``cwd`` (where ``./.sessionquery`` is not)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQUERY_")}
    environment.update({"PYTHONPATH": str(REPO), "SESSIONQUERY_SUBJECT_PREFIX": subjects.prefix,
                        **(env or {})})  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "worker.cli", "status", "--nats-url", nats_url,
        "--stream", subjects.events_stream, "--events-prefix", subjects.events_prefix, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=cwd,
        env=environment,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None, err
    return proc.returncode, out.decode()


@pytest.fixture
async def serving(nc: NATS, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Worker]:
    worker = await Worker.start(nc, config_for(subjects, tmp_path / "worker-home"))
    try:
        yield worker
    finally:
        await worker.stop()
        await nc.jetstream().delete_stream(subjects.events_stream)


async def test_status_elsewhere_reads_the_serving_workers_index_over_nats(
    nats_url: str, subjects: Subjects, serving: Worker, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out = await status(nats_url, subjects, elsewhere)
    first = out.splitlines()[0]
    assert "reported over NATS by worker " in first, out
    assert serving.config.db_path.name in first  # named by its file name only
    assert "no such file" not in out and ".sessionquery/index.sqlite here" in out
    assert "applied seq" in out and code == 0
    code, text = await status(nats_url, subjects, elsewhere, "--json")
    report = orjson.loads(text)
    assert report["index_source"] == "worker" and report["exists"] is True


async def test_status_says_whether_a_serving_worker_uses_the_file_it_read(
    nats_url: str, subjects: Subjects, serving: Worker, tmp_path: Path
) -> None:
    own = str(serving.config.db_path)
    code, out = await status(nats_url, subjects, tmp_path, "--db", own)
    assert f"index            {own}  (this file; served by worker " in out, out
    assert code == 0
    # The worker's own setting is the default (no --db, no --home).
    code, out = await status(nats_url, subjects, tmp_path, env={"SESSIONQUERY_DB_PATH": own})
    assert f"index            {own}  (this file; served by worker " in out, out
    assert code == 0
    # A stale index from another home: read, and said to be no serving worker's.
    stale = tmp_path / "old-home" / "index.sqlite"
    stale.parent.mkdir()
    async with await SqliteIndexWriter.open(stale):
        pass
    code, out = await status(nats_url, subjects, tmp_path, "--home", str(stale.parent))
    assert f"index            {stale}  (this file; NO serving worker uses it" in out, out
    assert code == 1  # not the index that answers: a problem to look at
