"""A generated Qwen Code history (``~/.qwen/projects``), made-up content.

The shapes follow Qwen Code's own chat recording (``ChatRecord`` in
``packages/core/src/services/chatRecordingService.ts`` of QwenLM/qwen-code, 2025–2026):
records linked by ``uuid``/``parentUuid`` carrying ``sessionId``, ``cwd``, ``version``
and ``gitBranch``; messages as model API content (``parts`` with text, thoughts,
function calls and responses); ``system`` records with subtypes (compression, titles,
slash commands, telemetry); a sub-agent's sidechain records inline; a sub-session naming
its parent.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/kettle"
MAIN: Final = "0e000000-0000-4000-8000-00000000a001"
AGENT: Final = "explore-7f3c"
SIDE: Final = f"{MAIN}-agent-{AGENT}"
SUB: Final = "0e000000-0000-4000-8000-00000000b002"
TITLE: Final = "Kettle boils dry"
EVENTS: Final = {MAIN: 13, SIDE: 3, SUB: 2}
SKIPPED: Final = {"record:system:ui_telemetry": 1, "record:file-history": 1}


class _Chat:
    def __init__(self, session: str, minute: int = 0) -> None:
        self.session, self.records, self.minute = session, list[dict[str, Any]](), minute

    def add(self, kind: str, parts: list[dict[str, Any]] | None = None, **extra: Any) -> None:
        self.minute += 1
        record: dict[str, Any] = {
            "uuid": f"{self.session[:8]}-{len(self.records) + 1:04d}",
            "parentUuid": self.records[-1]["uuid"] if self.records else None,
            "sessionId": self.session, "timestamp": f"2025-09-01T08:{self.minute:02d}:00.000Z",
            "type": kind, "cwd": CWD, "version": "0.0.14", "gitBranch": "main",
        }  # fmt: skip
        if parts is not None:
            record["message"] = {"role": "model" if kind == "assistant" else "user", "parts": parts}
        self.records.append(record | extra)

    def bytes(self) -> bytes:
        return b"".join(orjson.dumps(record) + b"\n" for record in self.records)


def main_chat() -> _Chat:
    chat = _Chat(MAIN)
    chat.add("user", [{"text": "the kettle boils dry and keeps heating"}])
    chat.add(
        "assistant",
        [
            {"text": "The cut-off sensor may be stuck.", "thought": True},
            {"text": "Checking the thermostat code."},
            {"functionCall": {"id": "fc-1", "name": "read_file", "args": {"path": "thermostat.c"}}},
        ],
    )
    chat.add(
        "tool_result",
        [
            {
                "functionResponse": {
                    "id": "fc-1",
                    "name": "read_file",
                    "response": {"output": "if (temp > 100) { /* TODO */ }"},
                }
            }
        ],
        toolCallResult={"callId": "fc-1", "status": "success"},
    )
    # A sub-agent's records, inline.
    chat.add("user", [{"text": "find every use of dry_boil"}], isSidechain=True, agentId=AGENT)
    chat.add("assistant", [{"text": "dry_boil is never set."}], isSidechain=True, agentId=AGENT)
    chat.add(
        "assistant",
        [
            {
                "functionCall": {
                    "id": "fc-2",
                    "name": "run_shell_command",
                    "args": {"command": "make test"},
                }
            }
        ],
    )
    chat.add(
        "tool_result",
        [
            {
                "functionResponse": {
                    "id": "fc-2",
                    "name": "run_shell_command",
                    "response": {"error": "make: *** [test] Error 2"},
                }
            }
        ],
    )
    chat.add("system", subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "x"}})
    chat.add(
        "system",
        subtype="slash_command",
        systemPayload={"phase": "invocation", "rawCommand": "/compress"},
    )
    chat.add(
        "system",
        subtype="chat_compression",
        systemPayload={
            "info": {"originalTokenCount": 9000, "newTokenCount": 800},
            "compressedHistory": [
                {
                    "role": "user",
                    "parts": [{"text": "Kettle boils dry: thermostat cut-off is a TODO."}],
                }
            ],
        },
    )
    chat.add("system", subtype="custom_title", systemPayload={"customTitle": TITLE})
    chat.add("user", [{"text": "implement the cut-off at 100 degrees"}])
    chat.add("assistant", [{"text": "Cut-off implemented and tested."}])
    chat.records.append({"type": "file-history", "snapshot": {}})  # a record type not known
    return chat  # fmt: skip


def sub_chat() -> _Chat:
    chat = _Chat(SUB, minute=30)
    chat.add("system", subtype="parent_session", systemPayload={"parentSessionId": MAIN})
    chat.add("user", [{"text": "write the release note for the cut-off"}])
    return chat


def write(home: Path) -> Path:
    """The history under ``home/.qwen/projects``; returns that folder."""
    projects = home / ".qwen" / "projects"
    chats = projects / "-home-dev-kettle" / "chats"
    chats.mkdir(parents=True)
    (chats / f"{MAIN}.jsonl").write_bytes(main_chat().bytes())
    (chats / f"{SUB}.jsonl").write_bytes(sub_chat().bytes())
    return projects


SLASH: Final = "0e000000-0000-4000-8000-00000000d004"


def slash_chat() -> _Chat:
    """Slash commands as Qwen Code 0.14 records them (seen in real homes): a dialog command
    (``/agents create``) whose result holds no output items, and one that printed a line."""
    chat = _Chat(SLASH, minute=30)
    chat.add("user", [{"text": "list my agents"}])
    for command, items in (("/agents create", []), ("/about", [{"type": "info", "text": "v0.14"}])):
        chat.add("system", subtype="slash_command",
                 systemPayload={"phase": "invocation", "rawCommand": command})  # fmt: skip
        chat.add("system", subtype="slash_command",
                 systemPayload={"phase": "result", "rawCommand": command,
                                "outputHistoryItems": items})  # fmt: skip
    return chat


# One record of each type and system subtype Qwen Code 0.24.4's chat recording writes
# (skips.WRITER_KINDS), in its shapes, made-up content.
EVERY_KIND: Final = "0e000000-0000-4000-8000-00000000c0de"
BACKGROUND_DONE: Final = "Background task lint finished: 0 problems"


def every_writer_kind() -> _Chat:
    chat = _Chat(EVERY_KIND)
    system = functools.partial(chat.add, "system")
    system(subtype="session_source", systemPayload={"sourceType": "fork", "sourceId": MAIN})
    system(subtype="session_model", systemPayload={"model": "qwen-x", "authType": "openai"})
    chat.add("user", [{"text": "lint the kettle firmware"}])
    system(subtype="user_text_elements", systemPayload={"elements": [{"type": "text"}]})
    system(subtype="omni_recall", systemPayload={"items": [], "query": "kettle"})
    chat.add("assistant", [{"functionCall": {"id": "fc-9", "name": "run_shell_command",
                                             "args": {"command": "make lint"}}}])  # fmt: skip
    response = {"id": "fc-9", "name": "run_shell_command", "response": {"output": "0 problems"}}
    chat.add("tool_result", [{"functionResponse": response}])
    chat.add("user", [{"text": "also check the docs"}], subtype="mid_turn_user_message",
             systemPayload={"displayText": "also check the docs"})  # fmt: skip
    chat.add("user", [{"text": "Keep going with the goal."}], subtype="goal_runtime",
             provenance="goal_runtime", goalContext={"goalId": "g1"})  # fmt: skip
    chat.add("user", [{"text": "what changed?"}], subtype="realtime_message")
    chat.add("assistant", [{"text": "Only the lint config."}], subtype="realtime_message")
    system(
        subtype="background_task_completed",
        systemPayload={
            "displayText": BACKGROUND_DONE,
            "backgroundTask": {"taskId": "t1", "status": "done"},
        },
    )
    system(subtype="goal_state", provenance="goal_control",
           systemPayload={"snapshot": {"activity": "idle"}})  # fmt: skip
    system(subtype="goal_turn_end", goalContext={"goalId": "g1"},
           systemPayload={"toolCallId": "fc-9"})  # fmt: skip
    system(subtype="branch_checkpoint", systemPayload={"v": 1, "startExclusiveRecordUuid": "a",
                                                       "assistantRecordUuid": "b"})  # fmt: skip
    system(subtype="turn_result", systemPayload={"status": "completed"})
    system(subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "api_response"}})
    system(subtype="attribution_snapshot", systemPayload={"files": {}})
    system(subtype="file_history_snapshot", systemPayload={"snapshots": []})
    system(subtype="session_artifact_event", systemPayload={"path": "lint.txt"})
    system(subtype="session_artifact_snapshot", systemPayload={"artifacts": []})
    system(subtype="session_sources_snapshot", systemPayload={"sources": []})
    system(subtype="at_command", systemPayload={"filesRead": ["a.c"], "displayText": "@a.c"})
    system(subtype="slash_command", systemPayload={"phase": "invocation", "rawCommand": "/stats"})
    output = {"phase": "result", "outputHistoryItems": [{"text": "3 turns"}]}
    system(subtype="slash_command", systemPayload=output)
    system(
        subtype="chat_compression",
        systemPayload={
            "compressedHistory": [{"role": "user", "parts": [{"text": "Linted; config fixed."}]}]
        },
    )
    system(subtype="rewind", systemPayload={"targetTurnIndex": 1})
    system(subtype="custom_title", systemPayload={"customTitle": TITLE})
    return chat


def write_every_writer_kind(home: Path) -> Path:
    chats = home / ".qwen" / "projects" / "-home-dev-kettle" / "chats"
    chats.mkdir(parents=True)
    path = chats / f"{EVERY_KIND}.jsonl"
    path.write_bytes(every_writer_kind().bytes())
    return path
