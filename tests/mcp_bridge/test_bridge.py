"""``sessionquery mcp`` driven by the mcp SDK's own client, over stdio and Streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import httpx2 as httpx
import orjson
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp_types import RequestParamsMeta
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from contracts.client import SessionQueryClient
from contracts.partitions import DEFAULT_PARTITION_COUNT, partition_of_cwd
from contracts.subjects import TOOL_NAMES, Subjects
from tests._harness import body, call, start_recorded_worker, until
from tests.importers._corpus import CLAUDE_AGENT, CLAUDE_SESSION, CODEX_SESSION, WORKSPACE
from tests.mcp_bridge._harness import bridge_args, bridge_command, indexed_worker, text_of
from worker.mcp_bridge.bridge import CANCEL_REASON, TIMEOUT_META_KEY
from worker.worker import Worker

ARGUMENTS: dict[str, dict[str, Any]] = {
    "session_search": {"query": "checkout flake"},
    "session_event_search": {"query": "datetime", "session_id": CLAUDE_SESSION},
    "session_trace": {"session_id": CLAUDE_SESSION},
    "session_event_trace": {"session_id": CLAUDE_SESSION, "seq": 6},
    "session_event_read": {"session_id": CODEX_SESSION, "seq": 7},
}


def stdio(nats_url: str, subjects: Subjects, *extra: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=bridge_args(nats_url, subjects, *extra),
        env={**os.environ, "SESSIONQUERY_LOG_LEVEL": "warning"},
    )  # fmt: skip
    return Client(params)


async def direct(nc: NATS, subjects: Subjects, tool: str, caller: str, **args: Any) -> str:
    """What the worker answers the same request directly, spilled text fetched whole."""
    reply, _ = await call(nc, subjects, tool, body(None, caller=caller, **args))
    if reply.get("spill"):
        from contracts.envelope import SpillLocator

        locator = SpillLocator.model_validate(reply["spill"])
        return bytes(await SessionQueryClient(nc, subjects).fetch_spilled(locator)).decode()
    return str(reply.get("content") or reply["error"]["message"])


async def test_stdio_lists_the_manifest_and_calls_each_tool(
    nc: NATS, nats_url: str, subjects: Subjects, worker: Worker
) -> None:
    manifest = await SessionQueryClient(nc, subjects).manifest()
    async with stdio(nats_url, subjects, "--session-id", CODEX_SESSION) as client:
        assert client.instructions == manifest["prompt_section"]
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == list(TOOL_NAMES)
        for tool, spec in zip(listed, manifest["tools"], strict=True):
            assert tool.input_schema == spec["input_schema"]
            assert tool.description == spec["description"]
        for name, args in ARGUMENTS.items():
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, text_of(result))
            assert text_of(result) == await direct(nc, subjects, name, CODEX_SESSION, **args)
        texts = {n: text_of(await client.call_tool(n, a)) for n, a in ARGUMENTS.items()}
        assert CLAUDE_SESSION in texts["session_search"]
        assert "seq 8" in texts["session_event_search"]
        assert CLAUDE_AGENT in texts["session_trace"]
        assert "タイムゾーン" in texts["session_event_read"]
        # An error reply is a tool error carrying the worker's model-facing message.
        missing = {"session_id": "s-never-existed", "seq": 1}
        failed = await client.call_tool("session_event_read", missing)
        assert failed.is_error
        expected = await direct(nc, subjects, "session_event_read", CODEX_SESSION, **missing)
        assert text_of(failed) == expected
        invalid = await client.call_tool("session_search", {"query": "x", "workspace": "/"})
        assert invalid.is_error and "workspace" in text_of(invalid)


async def test_a_spilled_result_is_returned_whole_then_cut_at_a_line(
    nc: NATS, nats_url: str, subjects: Subjects, worker: Worker
) -> None:
    args: dict[str, Any] = {"session_id": CLAUDE_SESSION, "seq": 8}  # the compaction
    reply, _ = await call(nc, subjects, "session_event_trace", body(caller=CODEX_SESSION, **args))
    assert reply.get("spill"), "the fixture trace should spill at this threshold"
    whole = await direct(nc, subjects, "session_event_trace", CODEX_SESSION, **args)
    async with stdio(nats_url, subjects, "--session-id", CODEX_SESSION) as client:
        result = await client.call_tool("session_event_trace", args)
        assert text_of(result) == whole
    async with stdio(nats_url, subjects, "--session-id", CODEX_SESSION,
                     "--max-result-bytes", "700") as client:  # fmt: skip
        cut = text_of(await client.call_tool("session_event_trace", args))
    kept, note = cut.rsplit("\n[Result cut by the MCP bridge: ", 1)
    assert whole.startswith(kept) and kept.endswith("\n") and len(kept.encode()) <= 700
    assert note.startswith(f"{len(kept.encode())} of {len(whole.encode())} bytes shown.")


async def test_without_a_session_id_the_bridge_acts_in_its_cwd_workspace(
    nc: NATS, nats_url: str, subjects: Subjects, worker: Worker
) -> None:
    async with stdio(nats_url, subjects, "--cwd", WORKSPACE) as client:
        found = text_of(await client.call_tool("session_search", {"query": "Zeitzonenfehler"}))
        assert CODEX_SESSION in found
    elsewhere = stdio(nats_url, subjects, "--cwd", "/somewhere/else")
    async with elsewhere as client:
        result = await client.call_tool("session_search", {"query": "Zeitzonenfehler"})
        assert not result.is_error and CODEX_SESSION not in text_of(result)


async def test_the_bridge_calls_the_partition_of_its_cwd(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    """A worker holding only the workspace's partition (no unpartitioned subjects) answers
    every call the bridge makes from that workspace."""
    partition = partition_of_cwd(WORKSPACE, DEFAULT_PARTITION_COUNT)
    shard = await indexed_worker(nc, subjects, tmp_path, partitions=str(partition))
    try:
        async with stdio(nats_url, subjects, "--cwd", WORKSPACE) as client:
            found = await client.call_tool("session_search", {"query": "Zeitzonenfehler"})
            assert not found.is_error and CODEX_SESSION in text_of(found)
    finally:
        await shard.stop()


async def test_a_session_id_on_shards_is_asked_on_its_cwd_s_partition_only(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    """On shards only (no worker of every partition): with the agent's --session-id and its
    own --cwd, every tool answers as the worker does on that partition; with another
    directory's --cwd (a partition the shard also holds), the call reads exactly as an
    unknown caller's, and the bridge's second try on the unpartitioned subject finds nobody
    and leaves that reply as it is."""
    home = partition_of_cwd(WORKSPACE, DEFAULT_PARTITION_COUNT)
    elsewhere = next(
        f"/elsewhere/{n}"
        for n in range(100)
        if partition_of_cwd(f"/elsewhere/{n}", DEFAULT_PARTITION_COUNT) != home
    )
    other = partition_of_cwd(elsewhere, DEFAULT_PARTITION_COUNT)
    shard = await indexed_worker(nc, subjects, tmp_path, partitions=f"{home},{other}")
    client = SessionQueryClient(nc, subjects)
    execution = {"agent": {"session_id": CODEX_SESSION}}
    try:
        async with stdio(
            nats_url, subjects, "--session-id", CODEX_SESSION, "--cwd", WORKSPACE
        ) as bridge:
            for name, args in ARGUMENTS.items():
                reply = await client.call(name, args, execution, cwd=WORKSPACE)
                assert reply.error is None, (name, reply)
                expected = (
                    (await client.fetch_spilled(reply.spill)).decode()
                    if reply.spill
                    else reply.content
                )
                result = await bridge.call_tool(name, args)
                assert not result.is_error and text_of(result) == expected, name
        async with stdio(
            nats_url, subjects, "--session-id", CODEX_SESSION, "--cwd", elsewhere
        ) as bridge:
            args = ARGUMENTS["session_trace"]
            wrong = await bridge.call_tool("session_trace", args)
            unknown = await client.call(
                "session_trace", args, {"agent": {"session_id": "s-unknown"}}, cwd=WORKSPACE
            )
            assert unknown.error is not None
            assert wrong.is_error
            assert text_of(wrong) == unknown.error.message.replace("s-unknown", CODEX_SESSION)
    finally:
        await shard.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_streamable_http_serves_the_tools_and_refuses_foreign_origins(
    nc: NATS, nats_url: str, subjects: Subjects, worker: Worker
) -> None:
    port = free_port()
    command = bridge_command(
        nats_url, subjects, "--session-id", CODEX_SESSION, "--http", f"127.0.0.1:{port}"
    )
    process = await asyncio.to_thread(
        subprocess.Popen, command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:

        async def listening() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return True
            except OSError:
                return False

        await until(listening, within=20)
        async with Client(url) as client:
            assert [t.name for t in (await client.list_tools()).tools] == list(TOOL_NAMES)
            for name, args in ARGUMENTS.items():
                result = await client.call_tool(name, args)
                assert text_of(result) == await direct(nc, subjects, name, CODEX_SESSION, **args)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}  # fmt: skip
        async with httpx.AsyncClient() as http:

            async def post(origin: str) -> int:
                response = await http.post(
                    url, content=orjson.dumps(init), headers={**headers, "Origin": origin}
                )
                return int(response.status_code)

            assert await post("http://evil.example") == 403
            assert await post(f"http://127.0.0.1:{port}") == 200
    finally:
        process.terminate()
        process.wait(timeout=20)


async def test_an_mcp_cancellation_reaches_the_worker(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    cancels: list[dict[str, Any]] = []

    async def record(msg: Msg) -> None:
        cancels.append(orjson.loads(msg.data))

    sub = await nc.subscribe(subjects.cancel, cb=record)
    try:
        async with stdio(nats_url, subjects, "--session-id", "s-caller",
                         "--agent-id", "a-1") as client:  # fmt: skip
            with pytest.raises(MCPError):  # the client's timeout: it sends notifications/cancelled
                await client.call_tool(
                    "session_trace", {"tag": "held", "hold": True}, read_timeout_seconds=1.5
                )
            # The worker started the held call, then its signal fired with our reason.
            await until(lambda: "held" in recorder.finished, within=10)
        ours = [c for c in cancels if c.get("reason") == CANCEL_REASON]
        assert ours and ours[0]["agent"] == {"session_id": "s-caller", "agent_id": "a-1"}
        assert set(ours[0]) == {"request_id", "reason", "agent"}
    finally:
        recorder.release.set()
        await sub.unsubscribe()
        await worker.stop()


async def test_the_deadline_comes_from_the_request_meta(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    recorder, worker = await start_recorded_worker(nc, subjects, tmp_path)
    try:
        async with stdio(nats_url, subjects, "--session-id", "s-caller") as client:
            result = await client.call_tool(
                "session_trace", {"tag": "slow", "hold": True},
                meta=cast(RequestParamsMeta, {TIMEOUT_META_KEY: 700}),
            )  # fmt: skip
        # The worker's own TIMEOUT answer, as a tool error, long before the 30 s default.
        assert result.is_error and "deadline" in text_of(result).lower()
        assert "slow" in recorder.finished
    finally:
        recorder.release.set()
        await worker.stop()


def test_the_bridge_without_a_worker_says_so(nats_url: str, subjects: Subjects) -> None:
    done = subprocess.run(bridge_command(nats_url, subjects, "--session-id", "s-x"),
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 2
    assert b"cannot read the worker's manifest" in done.stderr
