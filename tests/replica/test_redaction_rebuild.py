"""A change of the credential rules reaches what is already indexed by a rebuild from the
stream, the operator's documented path (docs/security.md, "Changing the rules"): stop the
worker, move the index file aside, start it with the new rules and ``--snapshot-join
replay``. Indexed first without a custom pattern (its value is served as it was
published, and a value the operator will allow-list is redacted), then rebuilt with the
pattern and the allow-list: the value is gone from every surface (tools, spill, operator
verbs, the stored rows, ``secrets``) and the allow-listed one is back. Snapshots of the
old index are in the bucket meanwhile; the replay does not use them.
"""

from __future__ import annotations

import asyncio
import os
import random
import string
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import BucketNotFoundError, NotFoundError
from structlog.testing import capture_logs

from bench.child import wait_searchable
from contracts.envelope import SpillLocator
from contracts.redaction import generate
from contracts.spill_fetch import fetch_spilled
from contracts.subjects import Subjects
from tests._harness import body, call, config_for, event, publish, until
from tests._index import connect
from worker.config import WorkerConfig
from worker.replica.ingest_consumer import ensure_events_stream
from worker.store.files.index_file import SIDE_FILES
from worker.worker import Worker

CWD = "/work/rules-app"
REPO = Path(__file__).resolve().parents[2]
# An in-house credential no built-in rule knows: an operator adds it with a pattern.
PATTERN = "acme-key=ACME-[0-9A-Z]{24}"


def _events(acme: str, acme_long: str, allowed: str) -> tuple[list[dict[str, Any]], str]:
    rng = random.Random(41)
    anchor = "".join(rng.choice(string.ascii_lowercase) for _ in range(12))
    filler = "".join(f"step {i:05d} ok\n" for i in range(2000))
    payloads: list[tuple[str, dict[str, Any]]] = [
        ("session/start", {"cwd": CWD}),
        ("session/title", {"title": f"rotate {acme}"}),
        ("message/user", {"text": f"{anchor}: the deploy key is {acme}, ship it"}),
        ("tool/result", {"call_id": "c1", "output": f"{anchor}\n{filler}key {acme_long}\n"}),
        ("tool/result", {"call_id": "c2", "output": f"{anchor} GITHUB_TOKEN={allowed}"}),
    ]
    out = []
    for seq, (type_, payload) in enumerate(payloads, 1):
        item = event("s-rules", seq, type_, payload)
        if type_ == "tool/result":
            item["surface"] = "tool"
        out.append(item)
    return [event("s-caller", 1, "session/start", {"cwd": CWD}), *out], anchor


async def _surfaces(nc: NATS, subjects: Subjects, anchor: str) -> str:
    """Everything the tools and the operator verbs show of the session, spill included."""
    seen: list[str] = []

    async def tool(name: str, **arguments: Any) -> dict[str, Any]:
        reply, _ = await call(nc, subjects, name, body(caller="s-caller", **arguments))
        assert reply["status"] == "ok", reply
        seen.append(orjson.dumps(reply).decode())
        if reply.get("spill"):
            whole = await fetch_spilled(nc, SpillLocator.model_validate(reply["spill"]))
            seen.append(bytes(whole).decode())
        return reply

    found = await tool("session_search", query=anchor)
    assert "s-rules" in found["content"], found  # still found by the words around it
    await tool("session_event_search", query=anchor, session_id="s-rules")
    await tool("session_trace", session_id="s-rules")
    for seq in range(1, 6):
        await tool("session_event_read", session_id="s-rules", seq=seq)
        await tool("session_event_trace", session_id="s-rules", seq=seq)

    async def operator(verb: str, **arguments: Any) -> None:
        msg = await nc.request(
            subjects.operator(verb), orjson.dumps({"arguments": arguments}), timeout=15
        )
        seen.append(msg.data.decode())

    await operator("sessions", workspace=CWD)
    await operator("search", workspace=CWD, query=anchor)
    await operator("timeline", workspace=CWD, session_id="s-rules")
    for seq in range(1, 6):
        for verb in ("event", "text"):
            await operator(verb, workspace=CWD, session_id="s-rules", seq=seq, size=1 << 20)
    return "\n".join(seen)


def _stored(db: Path) -> str:
    conn = connect(db, read_only=True)
    try:
        return "\n".join(r for (r,) in conn.execute("SELECT event_json(doc) FROM events"))
    finally:
        conn.close()


async def _secrets(db: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQUERY_")}
    env["PYTHONPATH"] = str(REPO)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "worker.cli", "secrets", "--db", str(db), "--json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=REPO,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err
    return dict(orjson.loads(out))


async def _snapshot_through(nc: NATS, bucket: str, seq: int) -> bool:
    """Whether the bucket holds a snapshot of the index through ``seq``."""
    try:
        store = await nc.jetstream().object_store(bucket)
        listed = await store.list(ignore_deletes=True)
    except (BucketNotFoundError, NotFoundError):
        return False
    return any(f"/{seq:020d}-" in info.name for info in listed)


def _move_aside(db: Path, aside: Path) -> None:
    aside.mkdir()
    for suffix in ("", *SIDE_FILES):
        if Path(f"{db}{suffix}").exists():
            os.rename(f"{db}{suffix}", aside / f"{db.name}{suffix}")


async def _serve_until_indexed(nc: NATS, config: WorkerConfig, through: int) -> Worker:
    worker = await Worker.start(nc, config)

    async def indexed() -> bool:
        return (await worker.indexed_through() or 0) >= through

    try:
        await until(indexed, within=60)
        await wait_searchable(config.db_path, 30)
    except BaseException:
        await worker.stop()
        raise
    return worker


@pytest.mark.parametrize("join", ["replay", "restore"])
async def test_new_rules_reach_indexed_events_by_a_rebuild_from_the_stream(
    nc: NATS, subjects: Subjects, tmp_path: Path, join: str
) -> None:
    """``replay``: the documented path. ``restore`` (the default, an operator who moved the
    index aside and forgot the flag): the snapshots of the old index were taken under other
    rules, so each is refused and the stream replayed all the same."""
    acme, acme_long = generate("ACME-<C:24>"), generate("ACME-<C:24>")
    allowed = generate("ghp_<A:36>")
    events, anchor = _events(acme, acme_long, allowed)
    await ensure_events_stream(nc.jetstream(), subjects)
    await publish(nc, subjects, events)
    db = tmp_path / "index.sqlite"
    common: dict[str, Any] = {
        "db_path": db,
        "spill_threshold_bytes": 4 * 1024,
        "spill_preview_bytes": 512,
        "snapshot_bucket": f"snap-{subjects.prefix}",
        "snapshot_every_events": 1,  # the old index is in the bucket when the rules change
    }
    try:
        # The rules as shipped: the in-house key is not known; the GitHub token is.
        worker = await _serve_until_indexed(
            nc, config_for(subjects, tmp_path, **common), len(events)
        )
        try:
            before = await _surfaces(nc, subjects, anchor)
            bucket = common["snapshot_bucket"]
            await until(lambda: _snapshot_through(nc, bucket, len(events)), within=30)
        finally:
            await worker.stop()
        assert acme in before and acme_long in before and acme in _stored(db)
        assert allowed not in before and "[redacted:github-token]" in before

        # The documented rebuild: the index file moved aside, the new rules, a replay.
        _move_aside(db, tmp_path / "aside")
        rebuilt_config = config_for(
            subjects,
            tmp_path,
            **common,
            redaction_patterns=PATTERN,
            redaction_allow=allowed,
            snapshot_join=join,
        )
        with capture_logs() as logs:
            worker = await _serve_until_indexed(nc, rebuilt_config, len(events))
            try:
                after = await _surfaces(nc, subjects, anchor)
                joined = (await worker.status())["joined"]
            finally:
                await worker.stop()
        assert joined["how"] == "replay", joined
        if join == "restore":
            refusals = [line for line in logs if "other credential redaction rules" in str(line)]
            assert refusals, "the old snapshots were not refused"
        assert acme not in after and acme_long not in after, "the new pattern was not applied"
        assert "the deploy key is [redacted:acme-key], ship it" in after
        assert "rotate [redacted:acme-key]" in after  # the title
        assert "key [redacted:acme-key]" in after  # past the spill threshold
        assert allowed in after, "the allow-listed value did not come back"
        stored = _stored(db)
        assert acme not in stored and acme_long not in stored and allowed in stored
        report = orjson.dumps(await _secrets(db)).decode()
        assert "acme-key" in report and "github-token" not in report
        assert acme not in report and allowed not in report
    finally:
        await nc.jetstream().delete_stream(subjects.events_stream)
