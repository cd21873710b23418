"""Generated Claude Code transcripts of shapes seen in real homes, made-up content.

Plan mode's "clear context and implement" (2.1.2x): the planning session ends on an
``ExitPlanMode`` call it never answers; Claude Code starts a new session whose file opens
with that call's rejected result (under the new ``sessionId``, its ``parentUuid`` the
planning session's record), "[Request interrupted by user for tool use]", then the plan
as the user's prompt. The new session's id sorts before the planning one's here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/kiln"
PLANNING: Final = "e7000000-0000-4000-8000-00000000a001"
IMPLEMENTING: Final = "2b000000-0000-4000-8000-00000000b002"
CALL: Final = "call_5e1f00000000000000000001"
REJECTED: Final = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if"
    " it was a file edit, the new_string was NOT written to the file). STOP what you are"
    " doing and wait for the user to tell you how to proceed."
)


def _record(session: str, n: int, parent: str | None, kind: str, minute: int) -> dict[str, Any]:
    return {
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD,
        "sessionId": session, "version": "2.1.22", "gitBranch": "", "type": kind,
        "uuid": f"{session[:8]}-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-01-29T04:{minute:02d}:00.000Z",
    }  # fmt: skip


def planning() -> list[dict[str, Any]]:
    ask = _record(PLANNING, 1, None, "user", 30)
    ask["message"] = {"role": "user", "content": "plan a firing schedule for cone 6"}
    plan = _record(PLANNING, 2, ask["uuid"], "assistant", 31)
    exit_plan = {"type": "tool_use", "id": CALL, "name": "ExitPlanMode",
                 "input": {"plan": "# Firing schedule\n1. candle\n2. ramp"}}  # fmt: skip
    content = [{"type": "text", "text": "Here is the plan."}, exit_plan]
    plan["message"] = {"id": "msg_1", "type": "message", "role": "assistant",
                       "model": "glm-4.7", "content": content}  # fmt: skip
    return [ask, plan]


def implementing() -> list[dict[str, Any]]:
    result = _record(IMPLEMENTING, 1, f"{PLANNING[:8]}-0000-4000-8000-{2:012d}", "user", 38)
    block = {"type": "tool_result", "content": REJECTED, "is_error": True, "tool_use_id": CALL}
    result["message"] = {"role": "user", "content": [block]}
    result["toolUseResult"] = "Error: " + REJECTED
    stop = _record(IMPLEMENTING, 2, result["uuid"], "user", 38)
    stop["message"] = {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}  # fmt: skip
    prompt = _record(IMPLEMENTING, 3, stop["uuid"], "user", 38)
    prompt["message"] = {"role": "user", "content": "Implement the following plan:\n\n"
                         "# Firing schedule\n1. candle\n2. ramp"}  # fmt: skip
    answer = _record(IMPLEMENTING, 4, prompt["uuid"], "assistant", 39)
    done = [{"type": "text", "text": "Done."}]
    answer["message"] = {"id": "msg_2", "type": "message", "role": "assistant",
                         "model": "glm-4.7", "content": done}  # fmt: skip
    return [result, stop, prompt, answer]


def write_plan_then_implement(projects: Path) -> Path:
    """Both sessions' files in one project folder under ``projects``; returns it."""
    project = projects / "-home-dev-kiln"
    project.mkdir(parents=True)
    for session, records in ((PLANNING, planning()), (IMPLEMENTING, implementing())):
        (project / f"{session}.jsonl").write_bytes(
            b"".join(orjson.dumps(r) + b"\n" for r in records)
        )
    return projects


# Seen in real 2.1.x homes: thinking Claude Code keeps without its text (an empty
# ``thinking`` and the signature), and a text block that is only a newline.
HIDDEN: Final = "4c000000-0000-4000-8000-00000000c003"


def hidden_thinking() -> list[dict[str, Any]]:
    ask = _record(HIDDEN, 1, None, "user", 10)
    ask["message"] = {"role": "user", "content": "why does the kiln stall at 900?"}
    reply = _record(HIDDEN, 2, ask["uuid"], "assistant", 11)
    blocks = [{"type": "thinking", "thinking": "", "signature": "EqQBCkYIBxgC"},
              {"type": "text", "text": "\n"},
              {"type": "text", "text": "The thermocouple is failing."}]  # fmt: skip
    reply["message"] = {"id": "msg_3", "type": "message", "role": "assistant",
                        "model": "claude-opus-4-6", "content": blocks}  # fmt: skip
    return [ask, reply]


def write_hidden_thinking(projects: Path) -> Path:
    project = projects / "-home-dev-kiln"
    project.mkdir(parents=True, exist_ok=True)
    (project / f"{HIDDEN}.jsonl").write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in hidden_thinking())
    )
    return projects


# Seen in a real 2.1.97 home: a tool's result record written before the assistant records
# of the reply that called it (the reply's text, then its tool_use): the records'
# ``parentUuid`` links give their order, the file does not. Once the result comes right
# before the call's record, once two records before it.
EARLY: Final = "4c000000-0000-4000-8000-00000000c004"
EARLY_CALL: Final = "toolu_5c0000000000000000000early"


def early_result() -> list[dict[str, Any]]:
    ask = _record(EARLY, 1, None, "user", 10)
    ask["message"] = {"role": "user", "content": "raise the hold at 1000 to 20 minutes"}
    first = _record(EARLY, 2, ask["uuid"], "assistant", 11)
    first["message"] = {"id": "msg_4", "type": "message", "role": "assistant",
                        "model": "claude-sonnet-4-6",
                        "content": [{"type": "text", "text": "Editing the schedule."}]}  # fmt: skip
    call = _record(EARLY, 4, first["uuid"], "assistant", 11)
    edit = {"type": "tool_use", "id": EARLY_CALL, "name": "Edit",
            "input": {"file_path": "/home/dev/kiln/cone6.txt", "old_string": "10",
                      "new_string": "20"}}  # fmt: skip
    call["message"] = {"id": "msg_4", "type": "message", "role": "assistant",
                       "model": "claude-sonnet-4-6", "content": [edit]}  # fmt: skip
    result = _record(EARLY, 3, call["uuid"], "user", 11)
    answer = {"type": "tool_result", "tool_use_id": EARLY_CALL, "content": "Updated."}
    result["message"] = {"role": "user", "content": [answer]}
    done = _record(EARLY, 5, result["uuid"], "assistant", 12)
    done["message"] = {"id": "msg_5", "type": "message", "role": "assistant",
                       "model": "claude-sonnet-4-6",
                       "content": [{"type": "text", "text": "Held 20 minutes."}]}  # fmt: skip
    # The result written first: before the reply's text and its call.
    return [ask, result, first, call, done]


def write_early_result(projects: Path) -> Path:
    project = projects / "-home-dev-kiln"
    project.mkdir(parents=True, exist_ok=True)
    (project / f"{EARLY}.jsonl").write_bytes(
        b"".join(orjson.dumps(r) + b"\n" for r in early_result())
    )
    return projects


# 2.0.x (seen in real homes) warms its sub-agents' prompt cache when it starts: a sidechain
# in the main file whose user message is "Warmup" and the sub-agent's greeting, before the
# user's first prompt.
WARMED: Final = "4c000000-0000-4000-8000-00000000c005"


def warmed() -> list[dict[str, Any]]:
    warm = _record(WARMED, 1, None, "user", 20)
    warm.update(isSidechain=True, version="2.0.21")
    warm["message"] = {"role": "user", "content": "Warmup"}
    greet = _record(WARMED, 2, warm["uuid"], "assistant", 20)
    greet.update(isSidechain=True, version="2.0.21")
    greet["message"] = {"id": "msg_6", "type": "message", "role": "assistant",
                        "model": "claude-haiku-4-5",
                        "content": [{"type": "text", "text": "Ready to explore."}]}  # fmt: skip
    ask = _record(WARMED, 3, None, "user", 21)
    ask["version"] = "2.0.21"
    ask["message"] = {"role": "user", "content": "config"}
    return [warm, greet, ask]


def write_warmed(projects: Path) -> Path:
    project = projects / "-home-dev-kiln"
    project.mkdir(parents=True, exist_ok=True)
    (project / f"{WARMED}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in warmed()))
    return projects


# 2.1.16x's Workflow tool (seen in a real home): the call's result names the run
# (``toolUseResult.runId``), whose agents' transcripts are in
# ``<session>/subagents/workflows/<run id>/agent-<id>.jsonl`` beside the runner's
# ``journal.jsonl`` (each agent started, its structured result: bookkeeping).
FLOWING: Final = "4c000000-0000-4000-8000-00000000c006"
FLOW_CALL: Final = "toolu_5c000000000000000000000flow"
FLOW_RUN: Final = "wf_d66113ec-b09"
FLOW_AGENT: Final = "a9918ee13924681b1"
FLOW_SUMMARY: Final = "Check the firing schedule's numbers"


def flowing() -> list[dict[str, Any]]:
    ask = _record(FLOWING, 1, None, "user", 30)
    ask["message"] = {"role": "user", "content": "verify the schedule"}
    call = _record(FLOWING, 2, ask["uuid"], "assistant", 31)
    use = {"type": "tool_use", "id": FLOW_CALL, "name": "Workflow",
           "input": {"script": "export const meta = { name: 'verify' }"}}  # fmt: skip
    call["message"] = {"id": "msg_7", "type": "message", "role": "assistant",
                       "model": "claude-opus-4-7", "content": [use]}  # fmt: skip
    result = _record(FLOWING, 3, call["uuid"], "user", 31)
    text = f"Workflow launched in background. Task ID: wr9zg\nSummary: {FLOW_SUMMARY}"
    result["message"] = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": FLOW_CALL, "content": text}]}  # fmt: skip
    result["toolUseResult"] = {"status": "async_launched", "taskType": "local_workflow",
                               "runId": FLOW_RUN, "summary": FLOW_SUMMARY}  # fmt: skip
    return [ask, call, result]


def write_flowing(projects: Path) -> Path:
    project = projects / "-home-dev-kiln"
    run = project / FLOWING / "subagents" / "workflows" / FLOW_RUN
    run.mkdir(parents=True)
    (project / f"{FLOWING}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in flowing()))
    agent = _record(FLOWING, 4, None, "user", 32)
    agent.update(isSidechain=True, agentId=FLOW_AGENT)
    agent["message"] = {"role": "user", "content": "Review the cone 6 numbers."}
    (run / f"agent-{FLOW_AGENT}.jsonl").write_bytes(orjson.dumps(agent) + b"\n")
    (run / f"agent-{FLOW_AGENT}.meta.json").write_text('{"agentType":"workflow-subagent"}')
    journal = [{"type": "started", "key": "v2:ab", "agentId": FLOW_AGENT},
               {"type": "result", "key": "v2:ab", "agentId": FLOW_AGENT,
                "result": {"findings": [], "overallVerdict": "ok"}}]  # fmt: skip
    (run / "journal.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in journal))
    return projects


# Every record type Claude Code 2.1.337's writer appends to a session's file, in the
# shapes it writes them (read in its package; skips.WRITER_KINDS lists them), made-up
# content: the conversation records first, then the script's calls (host-row) and one
# record of each bookkeeping kind.
EVERY_KIND: Final = "4c000000-0000-4000-8000-00000000c003"
SCRIPT_CALL: Final = "toolu_5c00000000000000000000repl"
INNER_CALL: Final = "toolu_5c0000000000000000000inner"


def every_writer_kind() -> list[dict[str, Any]]:
    s = EVERY_KIND
    user = _record(s, 1, None, "user", 1) | {
        "message": {"role": "user", "content": "Sum the ledger with a script."}
    }
    call = _record(s, 2, user["uuid"], "assistant", 2) | {
        "message": {"role": "assistant", "model": "claude-x", "content": [
            {"type": "tool_use", "id": SCRIPT_CALL, "name": "REPL",
             "input": {"code": "await Read({file_path: 'ledger.py'})"}},
        ]},
    }  # fmt: skip
    result = _record(s, 3, call["uuid"], "user", 3) | {
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": SCRIPT_CALL, "content": "total 42"},
        ]},
    }  # fmt: skip
    system = _record(s, 4, result["uuid"], "system", 3) | {
        "subtype": "turn_duration",
        "content": "",
        "level": "info",
    }
    base = {"sessionId": s, "timestamp": "2026-12-07T04:03:00.000Z"}
    inner_use = {"type": "tool_use", "id": INNER_CALL, "name": "Read",
                 "input": {"file_path": "ledger.py"}}  # fmt: skip
    inner_result = {"type": "tool_result", "tool_use_id": INNER_CALL, "content": "def total():"}
    host = {"type": "host-row", **base, "ranByToolUseId": SCRIPT_CALL}
    bookkeeping: list[dict[str, Any]] = [
        {"type": "summary", "summary": "Ledger sum", "leafUuid": result["uuid"]},
        {"type": "custom-title", "customTitle": "Ledger script", "sessionId": s},
        {"type": "ai-title", "aiTitle": "Summing the ledger", "sessionId": s},
        host | {"rowUuid": "5c000000-0000-4000-8000-000000000001", "block": inner_use},
        host | {"rowUuid": "5c000000-0000-4000-8000-000000000002", "block": inner_result},
        host | {"rowUuid": "5c000000-0000-4000-8000-000000000003", "block": inner_use},
        host | {"withheld": True},
        _record(s, 5, system["uuid"], "progress", 3) | {
            "data": {"type": "hook_progress"}, "toolUseID": SCRIPT_CALL},
        _record(s, 6, system["uuid"], "attachment", 3) | {
            "attachment": {"type": "date_change", "newDate": "2026-12-07"}},
        {"type": "file-history-snapshot", "messageId": user["uuid"], "isSnapshotUpdate": False,
         "snapshot": {"messageId": user["uuid"], "trackedFileBackups": {},
                      "timestamp": base["timestamp"]}},
        {"type": "file-history-delta", "messageId": call["uuid"], "snapshotMessageId":
         user["uuid"], "trackingPath": "ledger.py", "backup": None, **base},
        {"type": "last-prompt", "lastPrompt": "Sum the ledger with a script.", "sessionId": s},
        {"type": "continued-in", "continuedInSessionId": "4c000000-0000-4000-8000-00000000c004",
         "sessionId": s},
        {"type": "resume-head-vouch", "sessionId": s, "sum": "0f3a"},
        {"type": "content-replacement", "sessionId": s, "replacements": [
            {"kind": "tool-result", "toolUseId": SCRIPT_CALL, "replacement": "<persisted>"}]},
        {"type": "data-flow-records", "v": 1, "sessionId": s, "records": [], "snapshot": True},
        {"type": "data-flow-incomplete", "v": 1, "sessionId": s, "codes": ["lost"]},
        {"type": "derived-from", "v": 1, "sessionId": s,
         "sessions": [{"type": "unknown", "id": None, "via": "import"}]},
        {"type": "api-request-shape", "sessionId": s, "shape": "a1"},
        {"type": "api-request-blob", "sessionId": s, "messages": []},
        {"type": "api-request", "sessionId": s, "model": "claude-x"},
        {"type": "api-request-resumed", "sessionId": s, "messageId": "msg_1", **base},
        {"type": "api-request-route", "sessionId": s, "provider": "firstParty",
         "credential": "api-key"},
        {"type": "fork-context-ref", "agentId": "a1", "parentSessionId": s,
         "parentLastUuid": result["uuid"], "contextLength": 0},
        {"type": "frame-link", "artifactCount": 1, **base},
        {"type": "ended-by-model", **base},
        {"type": "tag", "tag": "ledger", "sessionId": s},
        {"type": "relocated", "relocatedCwd": "/home/dev/kiln2", "sessionId": s},
        {"type": "agent-name", "agentName": "Ledger script", "sessionId": s},
        {"type": "agent-color", "agentColor": "blue", "sessionId": s},
        {"type": "agent-setting", "agentSetting": "reviewer", "sessionId": s},
        {"type": "pr-link", "sessionId": s, "prNumber": 7, "prUrl": "https://example.com/7",
         "prRepository": "dev/kiln", "timestamp": base["timestamp"]},
        {"type": "artifact-comment-monitor", "v": 1, "sessionId": s, "artifacts": {}},
        {"type": "artifact-autoreact-ledger", "v": 1, "sessionId": s, "accountUuid": "u1",
         "artifacts": {}},
        {"type": "bridge-session", "sessionId": s, "bridgeSessionId": "", "lastSequenceNum": 0},
        {"type": "history-suppression", "sessionId": s, "reason": "migration"},
        {"type": "attribution-snapshot", "messageId": call["uuid"], "surface": "cli",
         "fileStates": {}, **base},
        {"type": "mode", "mode": "normal", "sessionId": s},
        {"type": "permission-mode", "permissionMode": "default", "sessionId": s},
        {"type": "isolation-latch", "side": "connectors", "sessionId": s},
        {"type": "session-owner", "accountUuid": "u1", "sessionId": s},
        {"type": "dev-mods", "folder": "/home/dev/mods", "sessionId": s},
        {"type": "memory-mode", "mode": "on", "afterUuid": user["uuid"], **base},
        {"type": "atis-latch", "sessionId": s, "atis": "x1"},
        {"type": "denial-counts", "sessionId": s, "consecutive": 0, "total": 1},
        {"type": "tools-used", "sessionId": s, "tools": ["REPL", "Read"]},
        {"type": "worktree-state", "worktreeSession": None, "sessionId": s},
        {"type": "cost-state", "sessionId": s, "costUsd": 0.01},
        {"type": "queue-operation", "operation": "enqueue", "content": "later", **base},
        {"type": "observer-ref", "sessionId": s, "agentId": "o1", **base},
        {"type": "repl-mode", "replMode": True, "sessionId": s},
        {"type": "hybrid-organization", "organizationUuid": "org1", "sessionId": s},
    ]  # fmt: skip
    return [user, call, result, system, *bookkeeping]


def write_every_writer_kind(projects: Path) -> Path:
    path = projects / "-home-dev-kiln" / f"{EVERY_KIND}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in every_writer_kind()))
    return path
