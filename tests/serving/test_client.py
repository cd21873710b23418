"""The requester client against a real nats-server: calls, cancel, manifest, spill fetch."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import ObjectMeta, ObjectMetaOptions

from contracts.client import (
    NoWorkerError,
    SessionQueryClient,
    SpillDigestMismatch,
    SpillFetchError,
)
from contracts.envelope import Execution, SpillLocator, ToolReply, ToolRequest
from contracts.errors import ErrorCode
from contracts.spill_crypto import plaintext_digest, seal
from contracts.subjects import TOOL_NAMES, Subjects


async def _echo_responder(nc: NATS, subjects: Subjects, seen: list[ToolRequest]) -> None:
    """A stand-in worker: answers each tool with what it received."""

    async def handle(msg: Msg) -> None:
        request = ToolRequest.model_validate_json(msg.data)
        seen.append(request)
        tool = msg.subject.rsplit(".", 1)[1]
        if request.arguments.get("fail"):
            reply = ToolReply.failure(request.request_id, ErrorCode.NOT_FOUND, "no such session")
        else:
            reply = ToolReply.ok(request.request_id, f"{tool}: {orjson.dumps(request.arguments)!r}")
        await msg.respond(reply.to_json())

    await nc.subscribe(f"{subjects.prefix}.tool.*", cb=handle)


async def test_call_sends_the_contract_envelope(nc: NATS, subjects: Subjects) -> None:
    seen: list[ToolRequest] = []
    await _echo_responder(nc, subjects, seen)
    client = SessionQueryClient(nc, subjects)
    reply = await client.call(
        "session_search",
        {"query": "flaky test"},
        {"agent": {"session_id": "s-abc"}, "step_start_seq": 5},
    )
    assert reply.status == "ok"
    assert reply.content is not None and reply.content.startswith("session_search:")
    assert seen[0].request_id.startswith("r-")
    assert seen[0].request_id == reply.request_id
    assert seen[0].execution.agent is not None
    assert seen[0].execution.agent.session_id == "s-abc"
    assert seen[0].execution.step_start_seq == 5
    assert seen[0].arguments == {"query": "flaky test"}

    fixed = await client.call(
        "session_event_read",
        {"fail": True},
        Execution(),
        request_id="r-fixed",
    )
    assert fixed.request_id == "r-fixed"
    assert fixed.status == "error"
    assert fixed.error is not None and fixed.error.code is ErrorCode.NOT_FOUND


async def test_call_refuses_unknown_tool_and_reports_no_worker(
    nc: NATS, subjects: Subjects
) -> None:
    client = SessionQueryClient(nc, subjects)
    with pytest.raises(ValueError, match="unknown tool"):
        await client.call("session_delete", {}, {})
    with pytest.raises(NoWorkerError, match="no session query worker"):
        await client.call(TOOL_NAMES[0], {"query": "x"}, {})
    with pytest.raises(NoWorkerError):
        await client.manifest()


async def test_cancel_broadcasts_request_id_and_reason(nc: NATS, subjects: Subjects) -> None:
    got: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def on_cancel(msg: Msg) -> None:
        await got.put(orjson.loads(msg.data))

    await nc.subscribe(subjects.cancel, cb=on_cancel)
    await SessionQueryClient(nc, subjects).cancel(
        "r-1", "user pressed stop", agent={"session_id": "s-1", "agent_id": "a-1"}
    )
    # The cancel carries the requester's identity: a worker honours only its owner's cancel.
    assert await asyncio.wait_for(got.get(), 5) == {
        "request_id": "r-1",
        "agent": {"session_id": "s-1", "agent_id": "a-1"},
        "reason": "user pressed stop",
    }


async def test_cancelling_a_pending_call_broadcasts_a_cancel(nc: NATS, subjects: Subjects) -> None:
    arrived = asyncio.Event()
    cancels: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def hold(msg: Msg) -> None:
        arrived.set()  # never answers

    async def on_cancel(msg: Msg) -> None:
        await cancels.put(orjson.loads(msg.data))

    await nc.subscribe(subjects.tool("session_trace"), cb=hold)
    await nc.subscribe(subjects.cancel, cb=on_cancel)
    client = SessionQueryClient(nc, subjects)
    execution = {"agent": {"session_id": "s-held"}}
    task = asyncio.create_task(client.call("session_trace", {}, execution, request_id="r-held"))
    await asyncio.wait_for(arrived.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    sent = await asyncio.wait_for(cancels.get(), 5)
    assert sent["request_id"] == "r-held"
    assert sent["agent"] == {"session_id": "s-held"}


async def test_manifest_returns_the_json_object(nc: NATS, subjects: Subjects) -> None:
    manifest = {"tools": [{"name": n} for n in TOOL_NAMES], "prompt_section": "p"}

    async def handle(msg: Msg) -> None:
        await msg.respond(orjson.dumps(manifest))

    await nc.subscribe(subjects.manifest, cb=handle)
    assert await SessionQueryClient(nc, subjects).manifest() == manifest


async def _put_object(nc: NATS, bucket: str, name: str, data: bytes) -> SpillLocator:
    """Store ``data`` sealed as the worker's spill step does; the locator holds the key."""
    js = nc.jetstream()
    store = await js.create_object_store(bucket)
    meta = ObjectMeta(name=name, options=ObjectMetaOptions(max_chunk_size=1024 * 1024))
    sealed, encryption = seal(data)
    info = await store.put(name, sealed, meta=meta)
    assert info.digest is not None and info.size == len(data) + 16
    return SpillLocator(
        bucket=bucket,
        name=name,
        size=len(data),
        digest=plaintext_digest(data),
        hint="fetch it",
        encryption=encryption,
        expires_at="2026-12-03T00:00:00.000Z",
    )


async def test_fetch_spilled_round_trips_16_mib(nc: NATS, subjects: Subjects) -> None:
    data = os.urandom(16 * 1024 * 1024 - 12345)  # not a whole number of chunks
    locator = await _put_object(nc, subjects.spill_bucket, "result-1", data)
    started = time.perf_counter()
    fetched = await SessionQueryClient(nc, subjects).fetch_spilled(locator)
    elapsed = time.perf_counter() - started
    assert fetched == data
    # Informational only (machines are noisy); bench/ holds the throughput target.
    print(f"fetched 16 MiB at {len(data) / elapsed / 2**20:.0f} MiB/s")
    small = await _put_object(nc, subjects.spill_bucket + "-s", "tiny", b"hello\n")
    assert await SessionQueryClient(nc, subjects).fetch_spilled(small) == b"hello\n"


async def _rewrite_record(nc: NATS, bucket: str, name: str, *, digest: str) -> None:
    """Replace an object's stored record with one claiming ``digest`` (base64url SHA-256),
    as whoever can write the bucket could."""
    js = nc.jetstream()
    info = await (await js.object_store(bucket)).get_info(name)
    record = {
        "name": info.name,
        "bucket": info.bucket,
        "nuid": info.nuid,
        "size": info.size,
        "chunks": info.chunks,
        "digest": f"SHA-256={digest}",
    }
    meta_subject = f"$O.{bucket}.M." + base64.urlsafe_b64encode(name.encode()).decode()
    await js.publish(meta_subject, orjson.dumps(record), headers={"Nats-Rollup": "sub"})


async def test_fetch_spilled_detects_digest_mismatch(nc: NATS, subjects: Subjects) -> None:
    data = os.urandom(3 * 1024 * 1024)
    locator = await _put_object(nc, subjects.spill_bucket, "result-2", data)
    client = SessionQueryClient(nc, subjects)
    wrong = base64.urlsafe_b64encode(hashlib.sha256(b"other").digest()).decode()
    with pytest.raises(SpillDigestMismatch):
        await client.fetch_spilled(locator.model_copy(update={"digest": f"SHA-256={wrong}"}))

    # Tamper with the stored record itself: the chunks no longer hash to what it claims.
    await _rewrite_record(nc, subjects.spill_bucket, "result-2", digest=wrong)
    tampered = locator.model_copy(update={"digest": f"SHA-256={wrong}"})
    with pytest.raises(SpillDigestMismatch, match="recorded digest"):
        await client.fetch_spilled(tampered)
    # The true digest no longer agrees with the record either.
    with pytest.raises(SpillDigestMismatch):
        await client.fetch_spilled(locator)


async def _chunk_seqs(nc: NATS, bucket: str, name: str) -> tuple[str, list[int]]:
    """The chunk subject of object ``name`` and its chunks' stream sequences, in order."""
    js = nc.jetstream()
    info = await (await js.object_store(bucket)).get_info(name)
    subject = f"$O.{bucket}.C.{info.nuid}"
    seqs: list[int] = []
    seq = 0
    while len(seqs) < int(info.chunks or 0):
        msg = await js.get_msg(f"OBJ_{bucket}", seq + 1, subject=subject, next=True)
        assert msg.seq is not None
        seq = msg.seq
        seqs.append(seq)
    return subject, seqs


async def _replace_last_chunk(nc: NATS, bucket: str, name: str, flip_at: int) -> bytes:
    """The object's last chunk replaced by a copy with one byte flipped (same length, same
    place in the order); returns the new chunk."""
    js = nc.jetstream()
    subject, seqs = await _chunk_seqs(nc, bucket, name)
    last = await js.get_msg(f"OBJ_{bucket}", seqs[-1])
    changed = bytearray(last.data or b"")
    changed[flip_at] ^= 0x01
    await js.delete_msg(f"OBJ_{bucket}", seqs[-1])
    await js.publish(subject, bytes(changed))
    return bytes(changed)


async def test_fetch_spilled_detects_a_corrupted_chunk(nc: NATS, subjects: Subjects) -> None:
    data = os.urandom(3 * 1024 * 1024 + 100)  # 4 chunks; the tag ends the last one
    bucket = subjects.spill_bucket
    locator = await _put_object(nc, bucket, "result-c", data)
    client = SessionQueryClient(nc, subjects)
    assert await client.fetch_spilled(locator) == data
    await _replace_last_chunk(nc, bucket, "result-c", flip_at=10)
    with pytest.raises(SpillDigestMismatch, match="recorded digest"):
        await client.fetch_spilled(locator)


async def test_fetch_spilled_authenticates_chunks_that_match_a_rewritten_record(
    nc: NATS, subjects: Subjects
) -> None:
    """Whoever can write the bucket but has no key changes a chunk and the object's record
    to match it: the streamed decryption's tag check refuses the result."""
    data = os.urandom(2 * 1024 * 1024 + 7)
    bucket = subjects.spill_bucket
    locator = await _put_object(nc, bucket, "result-r", data)
    js = nc.jetstream()
    sealed = bytearray()
    _, seqs = await _chunk_seqs(nc, bucket, "result-r")
    for seq in seqs[:-1]:
        sealed += (await js.get_msg(f"OBJ_{bucket}", seq)).data or b""
    sealed += await _replace_last_chunk(nc, bucket, "result-r", flip_at=3)
    digest = base64.urlsafe_b64encode(hashlib.sha256(sealed).digest()).decode()
    await _rewrite_record(nc, bucket, "result-r", digest=digest)
    with pytest.raises(SpillDigestMismatch, match="does not authenticate"):
        await SessionQueryClient(nc, subjects).fetch_spilled(locator)


@pytest.mark.parametrize("which", ["first", "middle", "last"])
async def test_fetch_spilled_detects_a_missing_chunk(
    nc: NATS, subjects: Subjects, which: str
) -> None:
    data = os.urandom(3 * 1024 * 1024)  # 4 chunks (the tag spills into the fourth)
    bucket = subjects.spill_bucket
    locator = await _put_object(nc, bucket, "result-m", data)
    _, seqs = await _chunk_seqs(nc, bucket, "result-m")
    assert len(seqs) == 4
    gone = {"first": seqs[0], "middle": seqs[1], "last": seqs[-1]}[which]
    await nc.jetstream().delete_msg(f"OBJ_{bucket}", gone)
    started = time.monotonic()
    with pytest.raises(SpillDigestMismatch, match="shorter than recorded"):
        await SessionQueryClient(nc, subjects).fetch_spilled(locator, timeout=20.0)
    # Told at once, from what the server says is left, not after the pull expires.
    assert time.monotonic() - started < 10.0


async def test_fetch_spilled_detects_chunks_of_other_sizes(nc: NATS, subjects: Subjects) -> None:
    data = os.urandom(1024 * 1024 + 5)
    bucket = subjects.spill_bucket
    client = SessionQueryClient(nc, subjects)
    js = nc.jetstream()
    # Bytes past the recorded chunks are not the object's: it still reads whole.
    locator = await _put_object(nc, bucket, "result-x", data)
    subject, _ = await _chunk_seqs(nc, bucket, "result-x")
    await js.publish(subject, b"one more chunk")
    assert await client.fetch_spilled(locator) == data
    # A recorded chunk that grew: refused before anything past the size is decrypted.
    locator = await _put_object(nc, bucket, "result-y", data)
    subject, seqs = await _chunk_seqs(nc, bucket, "result-y")
    last = await js.get_msg(f"OBJ_{bucket}", seqs[-1])
    await js.delete_msg(f"OBJ_{bucket}", seqs[-1])
    await js.publish(subject, (last.data or b"") + b"longer")
    with pytest.raises(SpillDigestMismatch, match="larger than recorded"):
        await client.fetch_spilled(locator)
    # One that shrank, with more bytes behind it: the recorded chunks fall short, at once.
    locator = await _put_object(nc, bucket, "result-z", data)
    subject, seqs = await _chunk_seqs(nc, bucket, "result-z")
    last = await js.get_msg(f"OBJ_{bucket}", seqs[-1])
    await js.delete_msg(f"OBJ_{bucket}", seqs[-1])
    await js.publish(subject, (last.data or b"")[:-1])
    await js.publish(subject, b"the rest")
    started = time.monotonic()
    with pytest.raises(SpillDigestMismatch, match="shorter than recorded"):
        await client.fetch_spilled(locator, timeout=20.0)
    assert time.monotonic() - started < 10.0


async def test_fetch_spilled_refuses_a_wrong_key(nc: NATS, subjects: Subjects) -> None:
    locator = await _put_object(nc, subjects.spill_bucket, "result-3", b"secret text\n" * 100)
    _, other = seal(b"anything")
    with pytest.raises(SpillDigestMismatch, match="does not authenticate"):
        await SessionQueryClient(nc, subjects).fetch_spilled(
            locator.model_copy(update={"encryption": other})
        )


async def test_fetch_spilled_missing_object(nc: NATS, subjects: Subjects) -> None:
    present = await _put_object(nc, subjects.spill_bucket, "present", b"x")
    missing = present.model_copy(update={"name": "absent"})
    with pytest.raises(SpillFetchError, match="not found"):
        await SessionQueryClient(nc, subjects).fetch_spilled(missing)
    no_bucket = present.model_copy(update={"bucket": subjects.spill_bucket + "-absent"})
    with pytest.raises(SpillFetchError, match="not found"):
        await SessionQueryClient(nc, subjects).fetch_spilled(no_bucket)
    not_a_bucket = present.model_copy(update={"bucket": "a.b"})
    with pytest.raises(SpillFetchError, match="not a bucket name"):
        await SessionQueryClient(nc, subjects).fetch_spilled(not_a_bucket)


async def test_client_against_a_real_worker(nc: NATS, subjects: Subjects, tmp_path: Path) -> None:
    from tests._harness import until
    from worker.commands.sample_corpus import DEMO_CALLER, PAY_ROOT, WEB_ROOT
    from worker.commands.sample_publish import publish_sample_corpus
    from worker.config import WorkerConfig
    from worker.worker import Worker

    _count, last_seq = await publish_sample_corpus(nc, subjects)
    worker = await Worker.start(
        nc, WorkerConfig(db_path=tmp_path / "index.sqlite", subjects=subjects)
    )
    try:

        async def indexed() -> bool:
            return (await worker.indexed_through() or 0) >= last_seq

        await until(indexed, within=30)
        client = SessionQueryClient(nc, subjects)
        manifest = await client.manifest()
        assert [t["name"] for t in manifest["tools"]] == list(TOOL_NAMES)
        caller = {"agent": {"session_id": DEMO_CALLER}, "step_start_seq": 8}
        found = await client.call("session_search", {"query": "idempotency"}, caller)
        assert found.status == "ok" and found.content is not None
        assert PAY_ROOT in found.content and WEB_ROOT not in found.content
        foreign = await client.call(
            "session_event_read", {"session_id": WEB_ROOT, "seq": 1}, caller
        )
        assert foreign.error is not None and foreign.error.code is ErrorCode.NOT_FOUND
        # A deadline already past is not started: the worker answers TIMEOUT at once.
        late = await client.call(
            "session_trace", {}, {**caller, "deadline_ms": int(time.time() * 1000) - 1000}
        )
        assert late.error is not None and late.error.code is ErrorCode.TIMEOUT
    finally:
        await worker.stop()
