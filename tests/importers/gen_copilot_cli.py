"""A generated GitHub Copilot CLI history (``~/.copilot/session-state``), made-up content.

The shapes follow the CLI's session event log as the public parsers and schema notes of
its users describe it (copilotVersion 0.0.3xx–1.0.x, 2025–2026): the event envelope
(``type``, ``id``, ``parentId``, ``timestamp``, ``data``), a session folder with
``events.jsonl`` and ``workspace.yaml``, and the older flat ``<id>.jsonl`` without a
``context`` in its ``session.start``. The resume (``session.resume`` after a
``session.shutdown``, the session going on in the same file) and the shutdown's fields
follow the event schemas bundled in ``@github/copilot`` 1.0.60.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/milk-steamer"
MAIN: Final = "c0p1-0000-4000-8000-00000000a001"
OLD: Final = "c0p1-0000-4000-8000-00000000b002"
GONE: Final = "c0p1-0000-4000-8000-00000000c003"  # in the index, its event log deleted
SUMMARY: Final = "Steamer spits water"
# The title included; the end is not: the shutdown is the last record, and the end is
# published once the file is quiet (import's end_quiet, watch's idle).
MAIN_EVENTS: Final = 15
# Events before the first shutdown, without the title (no workspace.yaml beside it).
BEFORE_RESUME: Final = 12
OLD_EVENTS: Final = 3
MAIN_SKIPPED: Final = {
    "record:session.model_change": 1, "record:assistant.turn_start": 1,
    "record:session.compaction_start": 1, "record:hook.start": 1, "record:session.resume": 1,
}  # fmt: skip
RESUMED_PROMPT: Final = "the wand also drips after steaming"


class _Log:
    """One session's events, each with the envelope the CLI writes."""

    def __init__(self, minute: int = 0) -> None:
        self.events: list[dict[str, Any]] = []
        self.second = minute * 60

    def add(self, kind: str, **data: Any) -> _Log:
        self.second += 7
        parent = self.events[-1]["id"] if self.events else None
        self.events.append({
            "type": kind, "data": data, "id": f"ev-{len(self.events) + 1:04d}",
            "timestamp": f"2025-07-01T10:{self.second // 60:02d}:{self.second % 60:02d}.000Z",
            "parentId": parent,
        })  # fmt: skip
        return self

    def bytes(self) -> bytes:
        return b"".join(orjson.dumps(event) + b"\n" for event in self.events)


def main_session() -> _Log:
    log = _Log()
    log.add(
        "session.start",
        sessionId=MAIN,
        version=1,
        producer="copilot-agent",
        copilotVersion="0.0.369",
        startTime="2025-07-01T10:00:00.000Z",
        context={"cwd": CWD, "gitRoot": CWD, "branch": "main", "repository": "dev/steamer"},
    )
    log.add("session.model_change", newModel="claude-sonnet-4.5")
    log.add("user.message", content="the milk steamer spits water before the steam", attachments=[])
    log.add("assistant.turn_start", turnId="0")
    log.add("assistant.reasoning", reasoningId="r-1", content="Probably condensate in the wand.")
    log.add(
        "assistant.message",
        messageId="m-1",
        content="Let me look at the purge settings.",
        toolRequests=[
            {
                "toolCallId": "call-1",
                "name": "bash",
                "type": "function",
                "arguments": {"command": "cat steamer.toml"},
            }
        ],
    )
    log.add(
        "tool.execution_start",
        toolCallId="call-1",
        toolName="bash",
        arguments={"command": "cat steamer.toml"},
    )
    log.add(
        "tool.execution_complete",
        toolCallId="call-1",
        success=True,
        result={"content": "purge_seconds = 0\nboiler_temp = 125"},
        toolTelemetry={},
    )
    log.add(
        "tool.execution_start",
        toolCallId="call-2",
        toolName="view",
        arguments={"path": "wand.toml"},
    )
    log.add(
        "tool.execution_complete",
        toolCallId="call-2",
        success=False,
        error={"message": "wand.toml does not exist", "code": "ENOENT"},
    )
    log.add("session.compaction_start")
    log.add(
        "session.compaction_complete",
        success=True,
        preCompactionTokens=120_000,
        summaryContent="User's steamer spits water; purge_seconds is 0.",
    )
    log.add("user.message", content="set the purge to two seconds")
    log.add(
        "assistant.message", messageId="m-2", content="Purge set to 2 seconds.", toolRequests=[]
    )
    log.add("abort", reason="user initiated")
    log.add("hook.start", hookType="postToolUse")  # an event type this importer does not know
    shutdown = {
        "shutdownType": "routine",
        "totalPremiumRequests": 2,
        "totalApiDurationMs": 9100,
        "codeChanges": {
            "linesAdded": 1,
            "linesRemoved": 1,
            "filesModified": [f"{CWD}/steamer.toml"],
        },
    }
    log.add("session.shutdown", **shutdown)
    # ``copilot --resume``: the same file goes on.
    log.add(
        "session.resume",
        resumeTime="2025-07-01T10:02:06.000Z",
        eventCount=17,
        selectedModel="claude-sonnet-4.5",
        context={"cwd": CWD, "branch": "main"},
        alreadyInUse=False,
    )
    log.add("user.message", content=RESUMED_PROMPT)
    log.add(
        "assistant.message",
        messageId="m-3",
        content="Purge after steaming set to 1 second.",
        toolRequests=[],
    )
    log.add("session.shutdown", **shutdown)
    return log  # fmt: skip


def old_session() -> _Log:
    log = _Log(minute=30)
    log.add(
        "session.start",
        sessionId=OLD,
        version=1,
        producer="copilot-agent",
        copilotVersion="0.0.330",
        startTime="2025-07-01T10:30:00.000Z",
    )
    log.add("user.message", content="descale reminder every 200 shots")
    log.add("assistant.message", messageId="m-9", content="Added the 200-shot reminder.")
    return log  # fmt: skip


def write(home: Path) -> Path:
    """The history under ``home/.copilot/session-state``; returns that folder."""
    state = home / ".copilot" / "session-state"
    folder = state / MAIN
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_bytes(main_session().bytes())
    (folder / "workspace.yaml").write_text(
        f"id: {MAIN}\ncwd: {CWD}\nbranch: main\nsummary: {SUMMARY}\nsummary_count: 1\n"
    )
    (state / f"{OLD}.jsonl").write_bytes(old_session().bytes())
    return state


# Versions before 1.0 (0.0.3xx, seen in a real Windows home) record no cwd in
# ``session.start`` and write no workspace.yaml, but state it in the system prompt: the
# ``system.message`` after the first prompt holds its environment context.
PROMPTED: Final = "c0p1-0000-4000-8000-00000000b012"
PROMPTED_CWD: Final = "c:\\Users\\dev\\milk-steamer"
SYSTEM_PROMPT: Final = (
    "You are the GitHub Copilot CLI, a terminal assistant.\n\n<version_information>\n"
    "Version number: 0.0.343\n</version_information>\n\n<environment_context>\n"
    "You are working in the following environment.\n"
    f"* Current working directory: {PROMPTED_CWD}\n* Git repository root: C:\\Users\\dev\n"
    "* Operating System: Windows_NT\n</environment_context>\n\nWork only in the current "
    "working directory and its children."
)


def prompted_session() -> _Log:
    log = _Log(minute=40)
    log.add("session.start", sessionId=PROMPTED, version=1, producer="copilot-agent",
            copilotVersion="unknown", startTime="2025-07-01T10:40:00.000Z")  # fmt: skip
    log.add("user.message", content="why does the wand drip?", attachments=[])
    log.add("system.message", content=SYSTEM_PROMPT, role="system")
    log.add("assistant.message", messageId="m-12", content="The purge is too short.")
    return log


def write_prompted(home: Path) -> Path:
    state = home / ".copilot" / "session-state"
    state.mkdir(parents=True, exist_ok=True)
    (state / f"{PROMPTED}.jsonl").write_bytes(prompted_session().bytes())
    return state


# 1.0.10 (seen in a real home) marks a sub-agent's run with ``subagent.started`` and
# ``subagent.completed`` around the ``task`` call, without an ``agentId`` and without the
# sub-agent's own records: the call's result holds its answer.
MARKED: Final = "c0p1-0000-4000-8000-00000000b013"


def marked_session() -> _Log:
    log = _Log(minute=50)
    log.add("session.start", sessionId=MARKED, version=1, producer="copilot-agent",
            copilotVersion="1.0.10", startTime="2025-07-01T10:50:00.000Z",
            context={"cwd": CWD})  # fmt: skip
    log.add("user.message", content="where is the purge timer set?", attachments=[])
    log.add("tool.execution_start", toolCallId="tc-task", toolName="task",
            arguments={"agent_type": "explore", "prompt": "find the purge timer"})  # fmt: skip
    marker = {"toolCallId": "tc-task", "agentName": "explore",
              "agentDisplayName": "Explore Agent"}  # fmt: skip
    log.add("subagent.started", agentDescription="Fast codebase exploration.", **marker)
    log.add("subagent.completed", **marker)
    log.add("tool.execution_complete", toolCallId="tc-task", success=True,
            result={"content": "wand.toml: purge_seconds"})  # fmt: skip
    return log


def write_marked(home: Path) -> Path:
    state = home / ".copilot" / "session-state"
    (state / MARKED).mkdir(parents=True)
    (state / MARKED / "events.jsonl").write_bytes(marked_session().bytes())
    return state


PERMISSION: Final = "c0p1-0000-4000-8000-00000000c003"


def permission_session() -> _Log:
    """As Copilot CLI 1.0.5x writes it (seen in real homes): the system prompt as
    ``system.message``, and a tool's write asked for (``permission.requested``) and denied
    (``permission.completed``) before its execution completes."""
    log = _Log(minute=40)
    log.add("session.start", sessionId=PERMISSION, version=1, producer="copilot-agent",
            copilotVersion="1.0.60", startTime="2025-07-01T10:40:00.000Z",
            context={"cwd": CWD})  # fmt: skip
    log.add("system.message", role="system", content="You are the GitHub Copilot CLI...")
    log.add("user.message", content="write the descaling notes", attachments=[])
    log.add("tool.execution_start", toolCallId="call-9", toolName="create",
            arguments={"path": "NOTES.md"})  # fmt: skip
    log.add(
        "permission.requested",
        requestId="req-1",
        permissionRequest={"kind": "write", "toolCallId": "call-9", "fileName": "NOTES.md"},
    )
    log.add("permission.completed", requestId="req-1", toolCallId="call-9",
            result={"kind": "denied-interactively-by-user"})  # fmt: skip
    log.add("tool.execution_complete", toolCallId="call-9", success=False,
            error={"message": "The user rejected this tool call."})  # fmt: skip
    log.add("assistant.message", messageId="m-20", content="Left NOTES.md unwritten.")
    return log


SKILL: Final = "c0p1-0000-4000-8000-00000000d004"


def skill_session() -> _Log:
    """As Copilot CLI 1.0.18 writes it (seen in a real home): the model calls ``skill``
    and the CLI records the skill file it loads into the context (``skill.invoked``)."""
    log = _Log(minute=50)
    log.add("session.start", sessionId=SKILL, version=1, producer="copilot-agent",
            copilotVersion="1.0.18", startTime="2025-07-01T10:50:00.000Z",
            context={"cwd": CWD})  # fmt: skip
    log.add("user.message", content="summarise the descaling video", attachments=[])
    log.add("tool.execution_start", toolCallId="call-s", toolName="skill",
            arguments={"skill": "video-summary"})  # fmt: skip
    log.add("skill.invoked", name="video-summary",
            path=f"{CWD}/.agents/skills/video-summary/SKILL.md",
            content="---\nname: video-summary\n---\n# Summarise a video")  # fmt: skip
    log.add("tool.execution_complete", toolCallId="call-s", success=True,
            result={"content": "Skill \"video-summary\" loaded successfully."})  # fmt: skip
    log.add("assistant.message", messageId="m-30", content="The video descales in 3 steps.")
    return log


# One event of each kind Copilot CLI 1.0.102 persists (its shipped event schema;
# skips.WRITER_KINDS), with the fields the schema gives it, made-up content.
EVERY_KIND: Final = "c0p1-0000-4000-8000-00000000c0de"
TASK_SUMMARY: Final = "Purge set to 2 s; the wand no longer drips."
HANDOFF_CONTEXT: Final = "Continued from the cloud agent's session on the steamer."


def every_writer_kind() -> _Log:
    log = _Log()
    log.add("session.start", sessionId=EVERY_KIND, version=1, producer="copilot-agent",
            copilotVersion="1.0.102", startTime="2026-12-07T10:00:00.000Z",
            context={"cwd": CWD, "gitRoot": CWD, "branch": "main"})  # fmt: skip
    log.add("session.handoff", handoffTime="2026-12-07T10:00:00.000Z", sourceType="remote",
            context=HANDOFF_CONTEXT, summary="The purge was 0 s.")  # fmt: skip
    log.add("session.model_change", newModel="gpt-x")
    log.add("session.mode_changed", previousMode="interactive", newMode="plan")
    log.add("session.mode_notice_delivered", mode="plan", content="You are in plan mode.")
    log.add("user.message", content="fix the dripping wand", attachments=[])
    log.add("assistant.turn_start", turnId="0")
    log.add("assistant.reasoning", reasoningId="r-1", content="The purge is too short.")
    log.add("assistant.message", messageId="m-1", content="Checking the purge.",
            toolRequests=[{"toolCallId": "call-1", "name": "bash", "type": "function",
                           "arguments": {"command": "cat steamer.toml"}}])  # fmt: skip
    log.add("permission.requested", requestId="p-1", toolCallId="call-1")
    log.add("permission.completed", requestId="p-1", result={"kind": "approved"})
    log.add("permission.carriedForward", requestId="p-1")
    for kind in ("assentDetected", "contextualAuthorization", "messageAuthorization",
                 "messageAuthorizationDegraded", "messageAuthorizationRead"):  # fmt: skip
        log.add(f"permission.{kind}", turnIndex=0)
    log.add("tool.execution_start", toolCallId="call-1", toolName="bash",
            arguments={"command": "cat steamer.toml"})  # fmt: skip
    log.add("hook.start", hookInvocationId="h-1", hookType="preToolUse")
    log.add("hook.end", hookInvocationId="h-1", hookType="preToolUse", success=True)
    log.add("tool.execution_complete", toolCallId="call-1", success=True,
            result={"content": "purge_seconds = 0"})  # fmt: skip
    log.add("tool.user_requested", toolCallId="call-u", toolName="bash", arguments={})
    log.add("external_tool.requested", requestId="x-1", sessionId=EVERY_KIND,
            toolCallId="call-x", toolName="browser", arguments={})  # fmt: skip
    log.add("human_response.recorded", requestId="q-1", toolCallId="call-q", actor="user",
            response={"answer": "yes"})  # fmt: skip
    log.add("tool_search.activated", strategy="bm25", toolNames=["browser"])
    log.add("skill.invoked", name="steam", path="/skills/steam.md", content="# Steam")
    log.add("skill.invoked_ref", name="steam", contentId="ev-1")
    log.add("skill.context_delivered", content="# Steam", source="skill")
    log.add("skill.context_delivered_ref", contentId="ev-1")
    log.add("subagent.selected", agentName="reviewer")
    log.add("subagent.deselected")
    log.add("subagent.configured", agentName="explore", model="gpt-x")
    for kind in ("started", "completed"):
        log.add(f"subagent.{kind}", toolCallId="call-1", agentName="explore",
                agentDisplayName="Explore")  # fmt: skip
        log.events[-1]["agentId"] = "explore-1"
    log.add("subagent.failed", toolCallId="call-2", agentName="explore", error="timeout")
    log.events[-1]["agentId"] = "explore-2"
    log.add("assistant.fusion_phase_completed", fusionId="f-1", phaseId="ph-1",
            content="draft answer")  # fmt: skip
    log.add("assistant.fusion_phase_failed", fusionId="f-1", phaseId="ph-2", reason="error")
    for kind in ("change_checkpoint", "commit_started", "completed", "handoff", "resolved",
                 "route_failed"):  # fmt: skip
        log.add(f"session.fusion_{kind}", fusionId="f-1")
    log.add("assistant.turn_end", turnId="0")
    log.add("session.task_complete", summary=TASK_SUMMARY, success=True)
    log.add("session.completion_receipt", schemaVersion=1, attempt=1)
    log.add("system.message", content="You are Copilot.")
    log.add("system.notification", content="Background shell 1 finished.")
    log.add("session.info", message="Model switched.")
    log.add("session.warning", message="Quota at 80%.")
    log.add("session.error", message="Rate limited.")
    log.add("abort", reason="user")
    log.add("session.compaction_start")
    log.add("session.compaction_complete", success=True, summaryContent="The wand was fixed.")
    log.add("session.truncation", tokenLimit=1000)
    log.add("session.binary_asset", assetId="a-1", mimeType="image/png")
    log.add("session.context_changed", cwd=f"{CWD}/firmware", branch="main")
    log.add("session.context_cleared", initialMessage="", messagesCleared=3)
    log.add("session.usage_record", model="gpt-x", inputTokens=1)
    log.add("session.usage_checkpoint", totalPremiumRequests=1)
    log.add("session.permissions_changed", allowAll=True)
    log.add("session.permission_recovery", episodeId="e-1", status="done")
    log.add("session.model_deselected", previousModel="gpt-y", reason="withdrawn")
    log.add("session.auto_mode_resolved", chosenModel="gpt-x")
    log.add("session.autopilot_objective_changed", operation="update", id=1, status="open")
    log.add("session.plan_changed", operation="update")
    log.add("session.workspace_file_changed", path="plan.md", operation="write")
    log.add("session.session_limits_changed", sessionLimits=None)
    log.add("session.remote_steerable_changed", remoteSteerable=True)
    log.add("session.request_body_compression_disabled", encoding="zstd")
    log.add("session.schedule_created", id=1, prompt="check the wand", recurring=False)
    log.add("session.schedule_rearmed", id=1, nextRunAt=1)
    log.add("session.schedule_cancelled", id=1)
    log.add("session.canvas.recorded", instanceId="c-1", extensionId="x", canvasId="y")
    log.add("session.canvas.removed", instanceId="c-1", extensionId="x", canvasId="y")
    log.add("mcp.oauth_recovery_completed", requestId="o-1", serverName="gh", outcome="ok")
    log.add("session.shutdown", shutdownType="routine")
    log.add("session.resume", resumeTime="2026-12-07T11:00:00.000Z", eventCount=80)
    return log


def write_every_writer_kind(home: Path) -> Path:
    folder = home / ".copilot" / "session-state" / EVERY_KIND
    folder.mkdir(parents=True)
    path = folder / "events.jsonl"
    path.write_bytes(every_writer_kind().bytes())
    return path


# 1.0.102's cross-session index, as its runtime.node creates it (the tables read here).
STORE_SCHEMA: Final = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT, repository TEXT, host_type TEXT,
  branch TEXT, summary TEXT, created_at TEXT DEFAULT (datetime('now')),
  updated_at TEXT DEFAULT (datetime('now')));
CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id), turn_index INTEGER NOT NULL,
  user_message TEXT, assistant_response TEXT, timestamp TEXT DEFAULT (datetime('now')),
  UNIQUE(session_id, turn_index));
CREATE TABLE checkpoints (id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id), checkpoint_number INTEGER NOT NULL,
  title TEXT, overview TEXT, history TEXT, work_done TEXT, technical_details TEXT,
  important_files TEXT, next_steps TEXT, created_at TEXT DEFAULT (datetime('now')),
  UNIQUE(session_id, checkpoint_number));
"""
# What the index keeps of GONE (its event log deleted): two turns and a checkpoint between.
GONE_TURNS: Final = (
    ("Why does the steamer spit water?", "The wand is not purged before steaming.",
     "2026-12-06T09:00:05.000Z"),
    ("How often should I descale it?", "Monthly, with citric acid.", "2026-12-06T09:05:00.000Z"),
)  # fmt: skip
GONE_CHECKPOINT: Final = ("Purging the wand", "Purge first, then steam.",
                          "2026-12-06T09:02:00.000Z")  # fmt: skip


def write_databases(state: Path) -> tuple[Path, Path]:
    """The two SQLite files 1.0.102 writes beside the event logs: the index in
    ``$COPILOT_HOME`` (listing the sessions of ``write`` and one whose log is gone) and the
    main session's ``session.db`` with a table its ``sql`` tool made (a real one also holds
    its workflow runs' tables)."""
    store = state.parent / "session-store.db"
    conn = sqlite3.connect(store)
    try:
        conn.executescript(STORE_SCHEMA)
        for sid in (MAIN, OLD):
            conn.execute("INSERT INTO sessions (id, cwd, summary) VALUES (?, ?, ?)",
                         (sid, CWD, SUMMARY))  # fmt: skip
            conn.execute("INSERT INTO turns (session_id, turn_index, user_message,"
                         " assistant_response) VALUES (?, 0, 'Descale it?', 'Yes, monthly.')",
                         (sid,))  # fmt: skip
        # The writer's upserts pass the times it read from the session's events.
        conn.execute("INSERT INTO sessions (id, cwd, branch, summary, created_at, updated_at)"
                     " VALUES (?, ?, 'main', ?, ?, ?)", (GONE, CWD, SUMMARY,
                     "2026-12-06T09:00:00.000Z", "2026-12-06T09:05:01.000Z"))  # fmt: skip
        for n, (asked, answer, at) in enumerate(GONE_TURNS):
            conn.execute("INSERT INTO turns (session_id, turn_index, user_message,"
                         " assistant_response, timestamp) VALUES (?, ?, ?, ?, ?)",
                         (GONE, n, asked, answer, at))  # fmt: skip
        title, overview, at = GONE_CHECKPOINT
        conn.execute("INSERT INTO checkpoints (session_id, checkpoint_number, title, overview,"
                     " created_at) VALUES (?, 1, ?, ?, ?)",
                     (GONE, title, overview, at))  # fmt: skip
        conn.commit()
    finally:
        conn.close()
    scratch = state / MAIN / "session.db"
    conn = sqlite3.connect(scratch)
    try:
        conn.execute("CREATE TABLE todos (id TEXT PRIMARY KEY, title TEXT, status TEXT)")
        conn.execute("INSERT INTO todos VALUES ('descale', 'Descale the boiler', 'pending')")
        conn.commit()
    finally:
        conn.close()
    return store, scratch


def write_home(home: Path) -> Path:
    """``write``'s history with the two databases beside it (the index listing a session
    whose log is gone); returns the ``session-state`` folder."""
    state = write(home)
    write_databases(state)
    return state
