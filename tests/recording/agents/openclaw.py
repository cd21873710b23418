"""OpenClaw (``openclaw``): ``openclaw agent`` through a Gateway started in the namespace
(``openclaw gateway run`` on the loopback, no auth; ``agent --local`` refuses sub-agents
and compacts only past a byte threshold) against the OpenAI Chat Completions dialect, a
custom provider in ``~/.openclaw/openclaw.json`` (``models.providers`` with the scripted
server's ``baseUrl``); the startup update check and telemetry off with OpenClaw's own
settings (``update.checkOnStart``, ``telemetry.enabled``, ``OPENCLAW_NO_AUTO_UPDATE``).
Node 24.

Tools: ``exec``, ``read``, ``edit`` (``edits``), ``write``, and ``sessions_spawn``, which
tool search (on by default) defers: the model runs it through ``tool_call``; the
sub-agent's completion comes back as a turn of the parent's own. Steps: the Gateway, the
fix, the refund prompt in the same ``--session-id``, ``sessions compact``, a turn
interrupted (SIGINT: the CLI aborts the run) while its command runs, a question after it,
a rename (``sessions.patch``'s ``label``); then the Gateway stopped and the store
checkpointed, its own text left out, and vacuumed.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import SLOW_COMMAND, SLOW_PROMPT, PlanScript
from tests.recording.script import Conversation, Reply, ToolCall, call

TASK = RECORD_ROOT / "openclaw" / "shop"
PROVIDER, MODEL = "scripted", "scripted-coder"
SESSION = "ledger-fix"
KEY = f"agent:main:explicit:{SESSION}"
PORT = 18789  # the namespace's own loopback: no other Gateway there
RENAMED = "Ledger fixes"
SUBAGENT_DONE = "The helper confirmed that refund() subtracts the amount."
DB = ".openclaw/agents/main/agent/openclaw-agent.sqlite"
# OpenClaw's own text in the store, left out before the fixture is kept (scrub.py reads
# SQLite with Python's, whose version cannot rewrite this schema: it uses octet_length): the
# tool descriptions its runtime trace copies, the skills listing (its prompt and the skills'
# descriptions) each session node keeps, and the USER.md template its memory index chunks.
# Then the store as one small file: its WAL checkpointed, then vacuumed into 512-byte
# pages (some 130 tables and indexes, a page each at least: with 4 KiB pages an empty store
# is 600 KB). What the agent wrote is otherwise unchanged. Node's SQLite, as the agent's.
CHECKPOINT = """
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(process.argv[1]);
const MARK = "[openclaw's own prompt text, ";
const own = (t) =>
  t.startsWith(MARK) ? t : `${MARK}${t.length} characters, left out of the fixture]`;
const described = (v) => {
  if (Array.isArray(v)) return v.map(described);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) =>
      [k, k === 'description' && typeof x === 'string' ? own(x) : described(x)]));
  }
  return v;
};
const rows = db.prepare('SELECT rowid AS r, event_json FROM trajectory_runtime_events').all();
const put = db.prepare('UPDATE trajectory_runtime_events SET event_json = ? WHERE rowid = ?');
for (const row of rows) {
  const event = JSON.parse(row.event_json);
  if (!Array.isArray(event.data && event.data.tools)) continue;
  event.data.tools = described(event.data.tools);
  put.run(JSON.stringify(event), row.r);
}
const nodes = db.prepare('SELECT rowid AS r, entry_json FROM session_nodes').all();
const set = db.prepare('UPDATE session_nodes SET entry_json = ? WHERE rowid = ?');
for (const node of nodes) {
  const entry = JSON.parse(node.entry_json);
  const skills = entry.skillsSnapshot;
  if (!skills) continue;
  if (typeof skills.prompt === 'string') skills.prompt = own(skills.prompt);
  entry.skillsSnapshot = described(skills);
  set.run(JSON.stringify(entry), node.r);
}
for (const table of ['memory_index_chunks', 'memory_index_chunks_fts']) {
  const chunks = db.prepare(`SELECT rowid AS r, text FROM ${table} WHERE path = 'USER.md'`).all();
  const text = db.prepare(`UPDATE ${table} SET text = ? WHERE rowid = ?`);
  for (const chunk of chunks) text.run(own(chunk.text), chunk.r);
}
db.exec('PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE');
db.exec('PRAGMA page_size=512; VACUUM');
db.close();
"""


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class OpenClawTools:
    def shell(self, step: str, command: str, description: str) -> ToolCall:
        if command == SLOW_COMMAND:
            # Kept in the foreground (exec backgrounds a command after 10 s), so the
            # interrupt lands while the call runs.
            return _call("exec", step, command=command, yieldMs=120000)
        return _call("exec", step, command=command)

    def read(self, step: str, name: str) -> ToolCall:
        return _call("read", step, path=str(TASK / name))

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        return _call("edit", step, path=str(TASK / name), oldText=old, newText=new)

    def write(self, step: str, name: str, content: str) -> ToolCall:
        return _call("write", step, path=str(TASK / name), content=content)

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        # sessions_spawn is a deferred tool: the model calls it through tool_call.
        args = {"task": prompt, "label": description, "runtime": "subagent"}
        return (_call("tool_call", step, id="sessions_spawn", args=args),)


def _is_summary(conversation: Conversation) -> bool:
    return "summar" in conversation.system.lower() and not conversation.tools


# OpenClaw stamps a prompt with the time before it and the runtime line after it, and adds
# a user message of its own context (exec sessions, sub-agents) after it.
_STAMP = re.compile(r"^\[[^\]]* UTC\] ")
_INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"


def _clean(text: str) -> str:
    return _STAMP.sub("", text).split("\n\nRuntime: ", 1)[0]


class OpenClawScript(PlanScript):
    def reply(self, conversation: Conversation) -> Reply:
        turns = tuple(
            replace(t, text=_clean(t.text)) if t.role == "user" else t
            for t in conversation.turns
            if not (t.role == "user" and t.text.startswith(_INTERNAL))
        )
        cleaned = replace(conversation, turns=turns)
        # A sub-agent's completion, announced to its parent as a turn of its own.
        if cleaned.last_user_text.startswith("A background task completed"):
            return Reply(text=SUBAGENT_DONE)
        return super().reply(cleaned)


def _script() -> OpenClawScript:
    return OpenClawScript(OpenClawTools(), _is_summary)


def _env(ctx: RunContext) -> dict[str, str]:
    state = ctx.home / ".openclaw"
    state.mkdir(parents=True, exist_ok=True)
    config = {
        "update": {"checkOnStart": False},
        "gateway": {"mode": "local", "port": PORT, "bind": "loopback", "auth": {"mode": "none"}},
        "telemetry": {"enabled": False},
        "models": {
            "providers": {
                PROVIDER: {
                    "baseUrl": f"{ctx.base_url}/v1",
                    "apiKey": "${SCRIPTED_API_KEY}",
                    "api": "openai-completions",
                    "models": [
                        {
                            "id": MODEL,
                            "name": "Scripted coder",
                            "reasoning": False,
                            "input": ["text", "image"],
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                            "contextWindow": 128000,
                            "maxTokens": 8192,
                        }
                    ],
                }
            }
        },
        "agents": {
            "defaults": {
                "workspace": str(ctx.task),
                "model": {"primary": f"{PROVIDER}/{MODEL}"},
                # `sessions compact` keeps a small tail (the default, 20,000 tokens, is all
                # of it); no memory-flush turn before a compaction.
                "compaction": {"keepRecentTokens": 200, "memoryFlush": {"enabled": False}},
            }
        },
    }
    (state / "openclaw.json").write_text(json.dumps(config, indent=2))
    return {
        "SCRIPTED_API_KEY": ctx.key,
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "OPENCLAW_DISABLE_BONJOUR": "1",
    }


def _braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


_A = ("{bin}", "agent", "--json", "--session-id", SESSION, "--message")
# The Gateway in the background of the namespace, its pid kept to stop it at the end.
GATEWAY = 'nohup "$0" gateway run > "$HOME/gateway.log" 2>&1 & echo $! > "$HOME/gateway.pid"'
WAIT = (
    "import socket, sys, time\n"
    "for _ in range(300):\n"
    "    try:\n"
    "        socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1).close()\n"
    "        break\n"
    "    except OSError:\n"
    "        time.sleep(1)\n"
    "else:\n"
    "    sys.exit('no gateway')\n"
)
STOP = 'pid="$(cat "$HOME/gateway.pid")"; kill "$pid"; while kill -0 "$pid"; do sleep 1; done'
RENAME = json.dumps({"key": KEY, "label": RENAMED})


RECIPE = Recipe(
    agent="openclaw",
    package="openclaw",
    version="2026.9.6",
    ecosystem="npm",
    bin="node_modules/.bin/openclaw",
    format="openclaw",
    session_dir=".openclaw/agents",
    node="24",
    steps=(
        Step("gateway", ("sh", "-c", GATEWAY, "{bin}")),
        Step("wait", ("python3", "-c", WAIT, str(PORT))),
        Step("fix", (*_A, FIX_PROMPT)),
        # The sub-agent's completion is a parent turn the Gateway runs after the reply.
        Step("settle", ("sleep", "20")),
        Step("resume", (*_A, REFUND_PROMPT)),
        Step("compact", ("{bin}", "sessions", "compact", KEY, "--json")),
        Step("interrupt", (*_A, SLOW_PROMPT), interrupt_after=30.0),
        Step("after-compact", (*_A, AFTER_COMPACT_PROMPT)),
        Step("rename", ("{bin}", "gateway", "call", "sessions.patch", "--params", _braces(RENAME))),
        Step("stop", ("sh", "-c", STOP)),
        # Braces doubled: a step's argv is formatted with the run's values.
        Step("checkpoint", ("node", "-e", _braces(CHECKPOINT), "{home}/" + DB)),
    ),
    script=_script,
    env=_env,
    # Lock files and the memory index's scratch copies beside the store are not sessions.
    exclude=(
        "*.sqlite-shm",
        "*.sqlite-wal",
        "*.lock.sqlite",
        "*-lock.sqlite*",
        "*.memory-reindex-*",
        "*.generation-*",
    ),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 5,
            "message/assistant": 11,
            "tool/call": 9,
            "tool/result": 9,
            "compaction": 1,
        },
        # The missing file, the interrupted command.
        "tool_errors": 2,
        "titles": [RENAMED, "Check refund handling"],
        "whole": True,
        # Skipped and counted (minimums): the nested record of the spawn run through
        # tool search.
        "skipped": {"message:custom:openclaw.nested-tool.v1": 1},
        "cwd": str(TASK),
        "no_watch": "a SQLite store (test_openclaw follows one with watch)",
    },
    note=(
        "The sub-agent's completion is announced to the parent as a turn whose prompt "
        "OpenClaw does not keep in the transcript: only the parent's answer to it is there."
    ),
)
