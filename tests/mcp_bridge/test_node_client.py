"""A foreign client: the npm ``@modelcontextprotocol/sdk`` client drives the bridge over stdio."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from contracts.subjects import TOOL_NAMES, Subjects
from tests.importers._corpus import CLAUDE_AGENT, CLAUDE_SESSION, CODEX_SESSION
from tests.mcp_bridge._harness import bridge_command
from worker.worker import Worker

SDK = "@modelcontextprotocol/sdk@1"

CLIENT = """
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
const client = new Client({ name: "node-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const traceArgs = JSON.parse(process.argv[3]);
const trace = await client.callTool({ name: "session_trace", arguments: traceArgs });
const missing = await client.callTool({
  name: "session_event_read", arguments: { session_id: "s-never-existed", seq: 1 } });
console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name),
  instructions: client.getInstructions() ?? null,
  trace: trace.content.map((c) => c.text).join(""),
  traceError: trace.isError ?? false,
  missingError: missing.isError ?? false,
}));
await client.close();
"""


@pytest.fixture(scope="module")
def node_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node or npm not installed: the foreign-client test needs both")
    root = tmp_path_factory.mktemp("node-mcp")
    (root / "package.json").write_text('{"type": "module", "private": true}')
    try:
        done = subprocess.run(
            [npm, "install", "--silent", "--no-audit", "--no-fund", SDK],
            cwd=root, capture_output=True, timeout=300,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm install {SDK} took over 300 s")
    if done.returncode != 0:
        pytest.skip(f"npm install {SDK} failed: {done.stderr.decode()[-300:]}")
    script = root / "client.mjs"
    script.write_text(CLIENT)
    return script


async def test_the_npm_sdk_client_lists_and_calls(
    node_client: Path, nats_url: str, subjects: Subjects, worker: Worker
) -> None:
    command = bridge_command(nats_url, subjects, "--session-id", CODEX_SESSION)
    arguments = {"session_id": CLAUDE_SESSION}
    done = await asyncio.to_thread(
        subprocess.run,
        ["node", str(node_client), json.dumps(command), json.dumps(arguments)],
        capture_output=True, timeout=120, cwd=node_client.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    result = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert result["tools"] == list(TOOL_NAMES)
    assert result["instructions"]
    assert not result["traceError"] and CLAUDE_AGENT in result["trace"]
    assert result["missingError"] is True
