"""A client written from docs/protocol.md alone: raw nats-py, no import of ``contracts``.

Over 400 lines: the wire contract, section by section.

It builds the envelope, parses every kind of reply, reads a spill with the standard object
store client and checks its digest, cancels, publishes events at the documented size limit
and reads a dead letter, all by the rules (and section numbers) of docs/protocol.md. The
worker is the real one, started as a user starts it (``sessionquery serve``, embedded
nats-server). ``test_the_javascript_client_conforms`` runs the same kind of client written
with the official nats.js packages (tests/js/conformance.mjs) when node is installed.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import nats
import nats.js.errors
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.js._npm import node_workdir

CLI = [sys.executable, "-m", "worker.cli"]
START_LIMIT_S = 60  # a hang guard, not an assertion on speed
# From docs/protocol.md (§ numbers in the comments below).
PREFIX = "sessionquery"
SERVICE = "session-query"
ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
DIGEST = re.compile(r"^SHA-256=[A-Za-z0-9_-]{43}=$")
ERROR_CODES = {
    "SESSION_QUERY_INVALID_ARGUMENTS": "400",
    "SESSION_QUERY_NO_IDENTITY": "401",
    "SESSION_QUERY_NOT_FOUND": "404",
    "SESSION_QUERY_GENERATION_CHANGED": "409",
    "SESSION_QUERY_CANCELLED": "499",
    "SESSION_QUERY_TOOL_FAILED": "500",
    "SESSION_QUERY_OVERLOADED": "503",
    "SESSION_QUERY_TIMEOUT": "504",
}
TOOLS = (
    "session_search",
    "session_event_search",
    "session_trace",
    "session_event_trace",
    "session_event_read",
)
# The sample corpus `serve --sample-corpus` publishes (README quick start).
CALLER = "s-pay-retry-docs"
CALLER_STEP = 8
OWN_ROOT = "s-pay-refund-flake"
FOREIGN = "s-web-static-migration"
SPILL_THRESHOLD = 1024
PREVIEW_BYTES = 400


@dataclass
class Served:
    url: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("conformance")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "SESSIONQUERY_"))}
    process = subprocess.Popen(
        [
            *CLI, "serve", "--sample-corpus", "--embedded-port", "-1", "--home", str(home),
            "--spill-threshold-bytes", str(SPILL_THRESHOLD),
            "--spill-preview-bytes", str(PREVIEW_BYTES),
        ],
        cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    url = ""
    assert process.stdout is not None
    deadline = time.monotonic() + START_LIMIT_S
    try:
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            if match := re.search(r"export NATS_URL=(\S+)", line):
                url = match.group(1)
            if line.startswith("serving the five"):
                break
        assert url, "serve did not start"
        yield Served(url=url)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
async def nc(served: Served) -> AsyncIterator[NATS]:
    client = await nats.connect(served.url)
    try:
        yield client
    finally:
        await client.close()


# -- the client, from the document ----------------------------------------------------


def new_id() -> str:
    return "r-" + uuid.uuid4().hex  # §3.2


def unpadded_b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def envelope(arguments: dict[str, Any], **execution: Any) -> dict[str, Any]:
    """§3.1: a trusted execution (identity, current step, deadline in epoch ms)."""
    execution.setdefault("agent", {"session_id": CALLER, "agent_id": "a-conformance"})
    execution.setdefault("deadline_ms", int(time.time() * 1000) + 30_000)
    return {"request_id": new_id(), "execution": execution, "arguments": arguments}


@dataclass
class Reply:
    body: dict[str, Any]
    headers: dict[str, str]


async def request(nc: NATS, tool: str, body: bytes | dict[str, Any]) -> Reply:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await nc.request(f"{PREFIX}.tool.{tool}", data, timeout=35)
    return parse_reply(msg)


def parse_reply(msg: Msg) -> Reply:
    """§3.3: ok (inline or spilled) or error, with the micro headers on errors only."""
    body = json.loads(msg.data)
    headers = dict(msg.headers or {})
    assert isinstance(body["request_id"], str)
    assert body["status"] in ("ok", "error")
    assert "null" not in {json.dumps(v) for v in body.values()}  # absent, never null
    if body["status"] == "ok":
        assert isinstance(body["content"], str) and "error" not in body
        assert "Nats-Service-Error" not in headers and "Nats-Service-Error-Code" not in headers
        if "spill" in body:
            assert set(body["spill"]) >= {"bucket", "name", "size", "digest", "hint"}
    else:
        error = body["error"]
        assert set(error) == {"code", "message"}
        assert headers["Nats-Service-Error-Code"] == ERROR_CODES[error["code"]]
        assert headers["Nats-Service-Error"] == " ".join(error["message"].split())[:512]
    return Reply(body, headers)


def digest_of(data: bytes) -> str:
    """§5.1: SHA-256=, then URL-safe base64 with padding."""
    return "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


# -- the tests ---------------------------------------------------------------------


async def test_discovery_and_manifest(nc: NATS) -> None:
    ping = json.loads((await nc.request(f"$SRV.PING.{SERVICE}", b"", timeout=5)).data)
    info_msg = await nc.request(f"$SRV.INFO.{SERVICE}.{ping['id']}", b"", timeout=5)
    info = json.loads(info_msg.data)
    meta = info["metadata"]  # §1.1
    assert meta["cancel"] == f"{PREFIX}.cancel" and meta["manifest"] == f"{PREFIX}.manifest"
    assert meta["subject_prefix"] == PREFIX and meta["manifest_version"] == info["version"]
    endpoints = {e["name"]: e for e in info["endpoints"]}
    for tool in TOOLS:
        assert endpoints[tool]["subject"] == f"{PREFIX}.tool.{tool}"
        assert endpoints[tool]["queue_group"] == "q"
        expected = "exclusive" if tool.endswith("search") else "parallel"
        assert endpoints[tool]["metadata"]["execution"] == expected
    manifest = json.loads((await nc.request(meta["manifest"], b"", timeout=5)).data)  # §2
    assert manifest["version"] == info["version"]
    assert [t["name"] for t in manifest["tools"]] == list(TOOLS)
    for tool in manifest["tools"]:
        schema = tool["input_schema"]
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["additionalProperties"] is False and tool["read_only"] is True
    assert manifest["prompt_section"]


async def test_every_tool_answers_an_envelope_built_from_the_document(nc: NATS) -> None:
    calls = {
        "session_search": envelope({"query": "flaky refund test"}, step_start_seq=CALLER_STEP),
        "session_event_search": envelope({"query": "refund", "session_id": OWN_ROOT}),
        "session_trace": envelope({"session_id": OWN_ROOT}),
        "session_event_trace": envelope({"session_id": OWN_ROOT, "seq": 4}),
        "session_event_read": envelope({"session_id": OWN_ROOT, "seq": 4}),
    }
    for tool, body in calls.items():
        reply = await request(nc, tool, body)
        assert reply.body["status"] == "ok", (tool, reply.body)
        assert reply.body["request_id"] == body["request_id"]


async def test_error_replies_codes_and_unreadable_requests(nc: NATS) -> None:
    foreign = await request(nc, "session_event_read", envelope({"session_id": FOREIGN, "seq": 1}))
    missing = await request(nc, "session_event_read", envelope({"session_id": "s-none", "seq": 1}))
    assert foreign.body["error"]["code"] == "SESSION_QUERY_NOT_FOUND"
    # §8: the same reply, once the id it names is replaced.
    assert json.dumps(foreign.body["error"]).replace(FOREIGN, "<id>") == json.dumps(
        missing.body["error"]
    ).replace("s-none", "<id>")
    no_identity = await request(nc, "session_trace", envelope({}, agent=None))
    assert no_identity.body["error"]["code"] == "SESSION_QUERY_NO_IDENTITY"
    extra = await request(nc, "session_trace", envelope({"workspace": "/"}))
    assert extra.body["error"]["code"] == "SESSION_QUERY_INVALID_ARGUMENTS"
    # §3.1: a deadline in seconds is refused, saying so.
    seconds = envelope({}, deadline_ms=int(time.time()) + 30)
    late = await request(nc, "session_trace", seconds)
    assert late.body["request_id"] == seconds["request_id"]
    assert "epoch milliseconds" in late.body["error"]["message"]
    past = await request(nc, "session_trace", envelope({}, deadline_ms=1_000_000_000_000))
    assert past.body["error"]["code"] == "SESSION_QUERY_TIMEOUT"
    # §3.3: unreadable bodies are answered with an empty request_id.
    for body in (b"not json", b"[1, 2]", b'{"request_id": "bad id!"}'):
        reply = await request(nc, "session_event_search", body)
        assert reply.body["request_id"] == ""
        assert reply.body["error"]["code"] == "SESSION_QUERY_INVALID_ARGUMENTS"
        assert "instance" not in reply.body["error"]["message"]
    # §3.2: a search's request_id is refused the second time.
    search = envelope({"query": "refund"}, step_start_seq=CALLER_STEP)
    first = await request(nc, "session_search", search)
    again = await request(nc, "session_search", search)
    assert first.body["status"] == "ok"
    assert again.body["error"]["code"] == "SESSION_QUERY_INVALID_ARGUMENTS"
    # §1.1: STATS count error replies.
    stats = json.loads((await nc.request(f"$SRV.STATS.{SERVICE}", b"", timeout=5)).data)
    by_name = {e["name"]: e for e in stats["endpoints"]}
    assert by_name["session_event_read"]["num_errors"] >= 2
    assert re.fullmatch(r"\d{3}:.*", by_name["session_event_read"]["last_error"])


async def test_a_cancel_before_its_request_answers_cancelled(nc: NATS) -> None:
    body = envelope({"session_id": OWN_ROOT})
    # §6: the cancel carries the request's own agent (§6.1).
    cancel = {
        "request_id": body["request_id"],
        "reason": "conformance: stop",
        "agent": body["execution"]["agent"],
    }
    await nc.publish(f"{PREFIX}.cancel", json.dumps(cancel).encode())
    await nc.flush()
    await asyncio.sleep(0.2)  # fire-and-forget: give every worker time to hear it
    reply = await request(nc, "session_trace", body)
    assert reply.body["error"] == {
        "code": "SESSION_QUERY_CANCELLED",
        "message": 'The request was cancelled by the runtime (reason: "conformance: stop")',
    }


async def test_a_spilled_reply_is_read_and_verified_with_the_object_store(nc: NATS) -> None:
    body = envelope({"session_id": OWN_ROOT, "seq": 7})  # a long multi-line tool/result
    reply = await request(nc, "session_event_read", body)
    spill = reply.body["spill"]  # §5.1
    assert spill["bucket"] == "sessionquery-spill"
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", spill["name"])
    assert DIGEST.fullmatch(spill["digest"]), spill["digest"]
    preview = reply.body["content"]  # §5.3
    assert len(preview.encode()) <= PREVIEW_BYTES
    assert "[… line cut: " in preview  # the event's one-line JSON, cut with a marker
    assert "partial" in spill["hint"] and spill["name"] in spill["hint"]
    assert "fetch_spilled" not in spill["hint"]
    assert spill["encryption"]["alg"] == "A256GCM"  # §5.4
    assert datetime.fromisoformat(spill["expires_at"]) > datetime.now(UTC)
    store = await nc.jetstream().object_store(spill["bucket"])  # §5.2, a standard client
    result = await store.get(spill["name"])
    assert result.data is not None
    assert result.info.size == spill["size"] + 16  # ciphertext || 16-byte tag
    plain = AESGCM(unpadded_b64url(spill["encryption"]["key"])).decrypt(
        unpadded_b64url(spill["encryption"]["nonce"]), bytes(result.data), None
    )
    assert len(plain) == spill["size"]
    assert digest_of(plain) == spill["digest"]  # the digest covers the plaintext
    text = plain.decode("utf-8")
    assert text.startswith(preview.split("\n", 1)[0])
    assert '"seq":7' in text


def _event(session_id: str, seq: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {
        "session_id": session_id,
        "seq": seq,
        "event_id": f"e-{session_id}-{seq}",
        "type": kind,
        "surface": "system",
        "time": stamp,
        "payload": payload,
    }


def _workspace_key(cwd: str | None) -> str:
    """§10.1: the first 16 hex digits of SHA-256 of the UTF-8 cwd; 16 zeros for none."""
    return "0" * 16 if cwd is None else hashlib.sha256(cwd.encode()).hexdigest()[:16]


def _partition(key: str, count: int) -> int:
    """§10.2: 32-bit FNV-1a of the key's ASCII bytes, modulo the partition count."""
    h = 0x811C9DC5
    for byte in key.encode("ascii"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h % count


def _padded(event: dict[str, Any], size: int) -> bytes:
    """The event's compact JSON, padded to exactly ``size`` bytes."""
    event["payload"]["pad"] = "x" * (size - len(json.dumps(event, separators=(",", ":"))))
    data = json.dumps(event, separators=(",", ":")).encode()
    assert len(data) == size
    return data


async def test_events_up_to_the_documented_size_limit_and_dead_letters(
    nc: NATS, served: Served
) -> None:
    js = nc.jetstream()
    session = "s-conf-" + uuid.uuid4().hex[:12]
    msg_id = f"{session}:1"
    # §7.3: the documented maximum event size, max_payload less 1 KiB, fits with the header.
    limit = nc.max_payload - 1024
    data = _padded(_event(session, 1, "session/start", {"cwd": "/conformance", "pad": ""}), limit)
    key = _workspace_key("/conformance")
    subject = f"sessions.events.{key}.{session}"  # §7, §10.1
    ack = await js.publish(subject, data, headers={"Nats-Msg-Id": msg_id})
    assert ack.stream == "SESSIONS" and not ack.duplicate
    again = await js.publish(subject, data, headers={"Nats-Msg-Id": msg_id})
    assert again.duplicate  # §7.3: a retried publish is dropped
    # §10.2: the count is in the stream's metadata; the event is stored with its partition.
    info = await js.stream_info("SESSIONS")
    count = int((info.config.metadata or {})["sessionquery_partitions"])
    stored = await js.get_last_msg("SESSIONS", f"sessions.events.*.{key}.{session}")
    assert stored.subject == f"sessions.events.{_partition(key, count)}.{key}.{session}"
    # §7: protocol 1's form is not stored, and the publisher hears so.
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await js.publish(f"sessions.events.{session}", data)
    # Past the transport bound (max_payload - 27 - len(id) with the header) the server closes
    # the connection: on a connection of its own.
    bound = nc.max_payload - 27 - len(msg_id)
    over = _padded(_event(session + "-b", 1, "session/start", {"pad": ""}), bound + 1)
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    doomed = await nats.connect(served.url, allow_reconnect=False, error_cb=on_error)
    try:
        with pytest.raises(Exception):  # noqa: B017 - the client's error type varies
            await doomed.jetstream().publish(
                f"sessions.events.{_workspace_key(None)}.{session}-b",
                over,
                headers={"Nats-Msg-Id": msg_id},
            )
        # The server answers -ERR and closes the connection: the client's reader task keeps
        # the -ERR as the connection's last error, and error_cb hears of the reset; either
        # may come first (error_cb alone stayed empty once in CI). Let one arrive before
        # close() stops that task.
        for _ in range(250):
            if errors or doomed.last_error is not None:
                break
            await asyncio.sleep(0.02)
        seen = [*errors, doomed.last_error]
    finally:
        await doomed.close()
    # The -ERR ("maximum payload violation"), or the reset of the connection it closed.
    refused = [e for e in seen if "payload" in str(e).lower() or isinstance(e, ConnectionError)]
    assert refused, f"the server accepted a message over max_payload: {seen}"
    # §7.4: a gap is dead-lettered with its reason, stream sequence and exact bytes.
    sub = await nc.subscribe("sessions.deadletter")
    gap = json.dumps(_event(session, 3, "step/start", {})).encode()
    gap_ack = await js.publish(subject, gap, headers={"Nats-Msg-Id": f"{session}:3"})
    deadline = time.monotonic() + 30
    while True:
        letter = await sub.next_msg(timeout=max(0.1, deadline - time.monotonic()))
        if letter.data == gap:
            break
    await sub.unsubscribe()
    assert letter.headers is not None
    assert letter.headers["Sessionquery-Reason"].startswith(f"gap in session {session}")
    assert letter.headers["Sessionquery-Stream-Seq"] == str(gap_ack.seq)
    # §10.3: a later event under another workspace's key is refused with its reason.
    sub = await nc.subscribe("sessions.deadletter")
    moved = json.dumps(_event(session, 2, "step/start", {})).encode()
    await js.publish(f"sessions.events.{_workspace_key('/elsewhere')}.{session}", moved)
    deadline = time.monotonic() + 30
    while True:
        letter = await sub.next_msg(timeout=max(0.1, deadline - time.monotonic()))
        if letter.data == moved:
            break
    await sub.unsubscribe()
    assert letter.headers is not None
    assert letter.headers["Sessionquery-Reason"].startswith("workspace key mismatch")


def test_the_javascript_client_conforms(
    served: Served, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = node_workdir(tmp_path_factory)
    done = subprocess.run(
        ["node", "conformance.mjs"],
        cwd=work,
        env={**os.environ, "NATS_URL": served.url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    checks = [line for line in done.stdout.splitlines() if line.startswith("ok ")]
    assert len(checks) >= 6, done.stdout
