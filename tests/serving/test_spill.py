"""Spill: oversized text goes to the object store whole; the reply carries a preview."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from contracts.envelope import SpillLocator
from contracts.spill_crypto import open_sealed
from contracts.subjects import Subjects
from tests._harness import (
    Recorder,
    body,
    call,
    config_for,
    make_toolset,
    serving,
    text_of_size,
)
from worker.serving.spill import SpillConfigError, Spiller, SpillPolicy, preview_of
from worker.worker import Worker


def _digest(data: bytes) -> str:
    return "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


@pytest.mark.parametrize("tool", ["session_event_read", "session_search"])
async def test_spill_round_trip_with_digest_and_preview_bounds(
    nc: NATS, subjects: Subjects, tmp_path: Path, tool: str
) -> None:
    config = config_for(
        subjects, tmp_path, spill_threshold_bytes=16 * 1024, spill_preview_bytes=1000
    )
    worker = await Worker.start(
        nc,
        config,
        tools=serving(make_toolset(Recorder())),
    )
    size = 2 * 1024 * 1024 + 12345  # more than two 1 MiB chunks
    full = text_of_size(size).encode()
    try:
        reply, msg = await call(nc, subjects, tool, body("r-big", size=size))
    finally:
        await worker.stop()
    assert reply["status"] == "ok"
    assert len(msg.data) < 16 * 1024
    locator = SpillLocator.model_validate(reply["spill"])
    assert locator.bucket == subjects.spill_bucket
    assert locator.size == len(full)
    assert locator.digest == _digest(full)
    assert len(locator.name) >= 32  # random and unguessable
    assert "partial" in locator.hint and locator.name in locator.hint
    # Neutral about the runtime: nothing a model cannot do, no function of one client.
    assert "fetch_spilled" not in locator.hint and "client" not in locator.hint
    assert "24 hours" in locator.hint or "seconds" in locator.hint
    preview = reply["content"].encode()
    assert 0 < len(preview) <= 1000
    assert preview.endswith(b"\n")
    assert full.startswith(preview)

    # Stored sealed: AES-256-GCM ciphertext plus the 16-byte tag, under a key only the
    # locator holds; it opens to exactly the text, whose digest the locator gives.
    store = await nc.jetstream().object_store(locator.bucket)
    result = await store.get(locator.name)
    assert result.data is not None and len(result.data) == len(full) + 16
    assert full[:64] not in result.data
    assert open_sealed(result.data, locator.encryption) == full
    assert result.info.chunks == 3
    expires = datetime.fromisoformat(locator.expires_at)
    ttl = timedelta(seconds=config.spill_ttl_s)
    now = datetime.now(UTC)
    assert now + ttl - timedelta(seconds=60) < expires <= now + ttl


async def test_text_at_the_threshold_stays_inline_and_one_byte_more_spills(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    threshold = 8 * 1024
    config = config_for(
        subjects, tmp_path, spill_threshold_bytes=threshold, spill_preview_bytes=512
    )
    worker = await Worker.start(
        nc,
        config,
        tools=serving(make_toolset(Recorder())),
    )
    try:
        at, _ = await call(nc, subjects, "session_trace", body(size=threshold))
        over, _ = await call(nc, subjects, "session_trace", body(size=threshold + 1))
    finally:
        await worker.stop()
    assert "spill" not in at and len(at["content"].encode()) == threshold
    assert over["spill"]["size"] == threshold + 1
    assert len(over["content"].encode()) <= 512


async def test_a_reply_that_json_escaping_would_blow_up_also_spills(
    nc: NATS, subjects: Subjects
) -> None:
    policy = SpillPolicy(
        bucket=subjects.spill_bucket, threshold_bytes=10_000, preview_bytes=100, ttl_s=60
    )
    bound = await Spiller.bind(nc, nc.jetstream(), policy)
    # Same bucket, but as if the server allowed only 20 KB per message.
    small = Spiller(policy, bound._store, chunk_bytes=4096, max_payload=20_000 + 8 * 1024)
    text = "\x01" * 9000  # 9 KB of text, ~54 KB once JSON-escaped
    reply = await small.reply("r-esc", text)
    assert reply.spilled
    assert len(reply.data) < 20_000


def test_spill_threshold_must_fit_the_servers_max_payload() -> None:
    policy = SpillPolicy(bucket="b", threshold_bytes=1024 * 1024, preview_bytes=10, ttl_s=1)
    with pytest.raises(SpillConfigError, match="max_payload"):
        policy.validate(1024 * 1024)
    with pytest.raises(SpillConfigError, match="preview"):
        SpillPolicy(bucket="b", threshold_bytes=100, preview_bytes=200, ttl_s=1).validate(10**6)


async def test_worker_refuses_a_threshold_over_max_payload(
    nc: NATS, subjects: Subjects, tmp_path: Path
) -> None:
    config = config_for(subjects, tmp_path, spill_threshold_bytes=nc.max_payload)
    with pytest.raises(SpillConfigError):
        await Worker.start(
            nc,
            config,
            tools=serving(make_toolset(Recorder())),
        )


def test_preview_cuts_at_a_line_boundary_or_a_character_boundary() -> None:
    data = b"aaaa\nbbbb\ncccc\n"
    assert preview_of(data, 12) == "aaaa\nbbbb\n"
    assert preview_of(data, 100) == data.decode()
    one_line = ("é" * 10).encode()  # 20 bytes, no newline
    assert preview_of(one_line, 5) == "éé"  # no room even for the marker


def test_a_result_of_one_long_line_still_shows_its_start_with_a_marker() -> None:
    # The shape of session_event_read of a 120 KB tool/result: two short lines, then the
    # event's exact JSON on one line.
    event_json = '{"payload":{"output":"' + "x" * 120_000 + '"}}'
    text = f"Event seq 7 of session s-1\n\nExact event JSON:\n{event_json}\n"
    preview = preview_of(text.encode(), 4096)
    assert len(preview.encode()) <= 4096
    lines = preview.splitlines()
    assert lines[:3] == ["Event seq 7 of session s-1", "", "Exact event JSON:"]
    shown = lines[3]
    assert shown.startswith('{"payload":{"output":"xxx')
    assert len(shown) > 900  # the line's start, not nothing
    hidden = len(event_json) - 1000
    assert shown.endswith(f" [… line cut: {hidden} more characters]")


def test_each_long_line_is_cut_and_the_last_one_to_the_room_left() -> None:
    text = "\n".join(f"{n}:" + "y" * 3000 for n in range(5)) + "\n"
    preview = preview_of(text.encode(), 2500, line_chars=1000)
    lines = preview.splitlines()
    assert len(lines) == 3 and len(preview.encode()) <= 2500
    assert lines[0].startswith("0:yyy") and lines[0].endswith("more characters]")
    assert lines[1].startswith("1:yyy") and lines[1].endswith("more characters]")
    assert lines[2].startswith("2:yyy") and "line cut" in lines[2]
