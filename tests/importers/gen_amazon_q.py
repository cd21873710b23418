"""Generated Amazon Q Developer CLI and Kiro CLI databases (``data.sqlite3``), made-up
content.

The shapes follow aws/amazon-q-developer-cli 1.19.7 (``crates/chat-cli``): the migrations'
tables, and the ``ConversationState`` JSON as serde writes it (``history`` entries of
``user``/``assistant``/``request_metadata``, externally tagged enums, ``latest_summary``
as a ``[summary, metadata]`` pair); Kiro CLI's ``conversations_v2`` table holds the same
state, several conversations per directory.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/ferry"
OTHER_CWD: Final = "/home/dev/harbour"
MAIN: Final = "0c9a7d1e-52f4-4a0b-9d63-5b7e8f10a001"
COMPACTED: Final = "0c9a7d1e-52f4-4a0b-9d63-5b7e8f10a002"
KIRO: Final = "0c9a7d1e-52f4-4a0b-9d63-5b7e8f10a003"
T0: Final = 1_764_000_000_000  # milliseconds
SUMMARY: Final = "The harbour fees script now rounds to cents; tests pass."

# The Q CLI's migrations 000-007, as its database has them after the last one.
Q_SCHEMA: Final = """
CREATE TABLE migrations (id INTEGER PRIMARY KEY, version INTEGER NOT NULL,
  migration_time INTEGER NOT NULL);
CREATE TABLE history (id INTEGER PRIMARY KEY, command TEXT, shell TEXT, pid INTEGER,
  session_id TEXT, cwd TEXT, start_time INTEGER, hostname TEXT, exit_code INTEGER,
  end_time INTEGER, duration INTEGER);
CREATE TABLE auth_kv (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE state (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT);
"""
KIRO_SCHEMA: Final = """
CREATE TABLE conversations_v2 (key TEXT NOT NULL, conversation_id TEXT NOT NULL,
  value TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (key, conversation_id));
"""


def _stamp(second: int) -> str:
    """chrono's RFC 3339 with the local offset, to the nanosecond."""
    return f"2025-11-24T17:{second // 60:02d}:{second % 60:02d}.412337089+01:00"


def user(content: dict[str, Any], second: int, *, context: str = "",
         images: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    env = {"env_state": {"operating_system": "linux", "current_working_directory": CWD,
                         "environment_variables": []}}  # fmt: skip
    return {"additional_context": context, "env_context": env, "content": content,
            "timestamp": _stamp(second), "images": images}  # fmt: skip


def prompt(text: str, second: int, **more: Any) -> dict[str, Any]:
    return user({"Prompt": {"prompt": text}}, second, **more)


def results(*items: dict[str, Any], second: int, cancelled: bool = False) -> dict[str, Any]:
    if cancelled:
        return user({"CancelledToolUses": {"prompt": None, "tool_use_results": list(items)}},
                    second)  # fmt: skip
    return user({"ToolUseResults": {"tool_use_results": list(items)}}, second)


def result(call: str, block: dict[str, Any], *, error: bool = False) -> dict[str, Any]:
    return {"tool_use_id": call, "content": [block], "status": "Error" if error else "Success"}


def tool_use(call: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call, "name": name, "orig_name": name, "args": args, "orig_args": args}


def answer(message: str, text: str, *uses: dict[str, Any]) -> dict[str, Any]:
    if uses:
        return {"ToolUse": {"message_id": message, "content": text, "tool_uses": list(uses)}}
    return {"Response": {"message_id": message, "content": text}}


def metadata(message: str, second: int) -> dict[str, Any]:
    start = T0 + second * 1000
    return {"request_id": f"req-{message}", "message_id": message,
            "request_start_timestamp_ms": start, "stream_end_timestamp_ms": start + 2000,
            "time_to_first_chunk": {"secs": 0, "nanos": 500000000}, "time_between_chunks": [],
            "user_prompt_length": 40, "response_size": 120, "chat_conversation_type": None,
            "tool_use_ids_and_names": [], "model_id": "claude-sonnet-4"}  # fmt: skip


def entry(n: int, user_message: dict[str, Any], assistant: dict[str, Any], second: int
          ) -> dict[str, Any]:  # fmt: skip
    message = f"m-{n:03d}"
    for variant in assistant.values():
        variant["message_id"] = message
    return {"user": user_message, "assistant": assistant,
            "request_metadata": metadata(message, second)}  # fmt: skip


def main_history() -> list[dict[str, Any]]:
    image = {"format": "png", "source": {"Bytes": [137, 80, 78, 71]}}
    return [
        entry(1, prompt("Why does the ferry timetable test fail?", 0, images=[image],
                        context="--- CONTEXT ENTRY BEGIN ---\nAGENTS.md: run pytest\n"),
              answer("", "Let me run the tests.",
                     tool_use("tooluse_run", "execute_bash", {"command": "pytest -q"})), 0),
        entry(2, results(result("tooluse_run", {"Json": {
                  "exit_status": "1", "stdout": "1 failed: test_sailings", "stderr": ""}}),
                  second=5),
              answer("", "", tool_use("tooluse_read", "fs_read", {
                  "operations": [{"mode": "Line", "path": "fixtures/sailings.csv"}]})), 5),
        entry(3, results(result("tooluse_read", {"Text": "No such file: sailings.csv"},
                                error=True), second=9),
              answer("", "The test reads a fixture that is missing."), 9),
        entry(4, prompt("Create the fixture then", 30),
              answer("", "", tool_use("tooluse_write", "fs_write", {"path": "x"})), 30),
        entry(5, results(result("tooluse_write", {"Text": "Tool use was cancelled by the user"},
                                error=True), second=40, cancelled=True),
              answer("", "Understood, I will not write it."), 40),
    ]  # fmt: skip


def state(conversation: str, history: list[Any], *,
          summary: str | None = None) -> dict[str, Any]:  # fmt: skip
    latest = [summary, metadata("m-sum", 250)] if summary else None
    return {"conversation_id": conversation, "next_message": None, "history": history,
            "valid_history_range": [0, len(history)], "transcript": ["> hello"],
            "tools": {}, "context_manager": None, "context_message_length": None,
            "latest_summary": latest, "model_info": {"model_name": "claude-sonnet-4",
                                                     "model_id": "claude-sonnet-4"},
            "file_line_tracker": {}, "checkpoint_manager": None, "mcp_enabled": True}  # fmt: skip


def compacted() -> dict[str, Any]:
    """After ``/compact``: the summary, the entry it kept, and one after it."""
    kept = entry(21, prompt("Round the harbour fees to cents", 200),
                 answer("", "Done: fees are rounded with Decimal."), 200)  # fmt: skip
    after = entry(22, prompt("And the dues?", 300), answer("", "Dues round the same way."), 300)
    return state(COMPACTED, [kept, after], summary=SUMMARY)


def write_q(path: Path, *, upto: int | None = None) -> Path:
    """An Amazon Q CLI ``data.sqlite3`` (``upto``: the main conversation's first entries)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = not path.exists()
    with sqlite3.connect(path) as conn:
        if fresh:
            conn.executescript(Q_SCHEMA)
        rows = [(CWD, state(MAIN, main_history()[:upto])), (OTHER_CWD, compacted())]
        conn.executemany("INSERT OR REPLACE INTO conversations (key, value) VALUES (?, ?)",
                         [(key, orjson.dumps(value).decode()) for key, value in rows])  # fmt: skip
    conn.close()
    return path


def write_kiro(path: Path) -> Path:
    """A Kiro CLI ``data.sqlite3``: one conversation in ``conversations_v2``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    history = [entry(31, prompt("List the ferry routes", 500),
                     answer("", "Routes: Dover-Calais, Harwich-Hook."), 500)]  # fmt: skip
    with sqlite3.connect(path) as conn:
        conn.executescript(KIRO_SCHEMA)
        conn.execute("INSERT INTO conversations_v2 VALUES (?, ?, ?, ?, ?)",
                     (CWD, KIRO, orjson.dumps(state(KIRO, history)).decode(), T0 + 500_000,
                      T0 + 503_000))  # fmt: skip
    conn.close()
    return path


def write(home: Path) -> dict[str, Path]:
    """Both CLIs' databases where they keep them under ``home`` (Linux)."""
    data = home / ".local" / "share"
    return {"amazon-q": write_q(data / "amazon-q" / "data.sqlite3"),
            "kiro-cli": write_kiro(data / "kiro-cli" / "data.sqlite3")}  # fmt: skip
