"""A generated Zed agent history (``threads/threads.db``), made-up content.

The shapes follow zed-industries/zed's ``crates/agent/src/db.rs`` (the ``threads`` table
with the columns added over time, ``data_type`` ``zstd`` or ``json``), ``thread.rs``
(``DbThread`` 0.3.0: ``User``/``Agent``/``Resume`` messages as serde writes them, tool
results keyed by call id, ``subagent_context``), ``spawn_agent_tool.rs`` (its output naming
the sub-agent's session) and ``legacy_thread.rs`` (a 0.2.0 thread of the first agent).
Rows are written as ``json`` unless ``zstd=True`` (which needs the ``zstandard`` module).
"""

from __future__ import annotations

import importlib
import sqlite3
from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/lighthouse"
OTHER: Final = "/home/dev/aaa-shared"  # sorts first, but was opened second
LEGACY_CWD: Final = "/home/dev/buoy"
MAIN: Final = "6f1c2d3e-4a5b-4c6d-8e7f-00000000a001"
SUB: Final = "6f1c2d3e-4a5b-4c6d-8e7f-00000000a002"
LEGACY: Final = "6f1c2d3e-4a5b-4c6d-8e7f-00000000a003"
UNTITLED: Final = "6f1c2d3e-4a5b-4c6d-8e7f-00000000a004"
TITLE: Final = "Lamp timer drift"
SUB_TITLE: Final = "Check the other timers"
SPAWN: Final = "toolu_01Spawn"

# The table as Zed creates it, then alters it (parent, folders, creation time).
SCHEMA: Final = """
CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL,
  data_type TEXT NOT NULL, data BLOB NOT NULL);
ALTER TABLE threads ADD COLUMN parent_id TEXT;
ALTER TABLE threads ADD COLUMN folder_paths TEXT;
ALTER TABLE threads ADD COLUMN folder_paths_order TEXT;
ALTER TABLE threads ADD COLUMN created_at TEXT;
"""
OLD_SCHEMA: Final = SCHEMA.split(";")[0] + ";"  # before any ALTER


def _time(minute: int) -> str:
    return f"2025-11-24T10:{minute:02d}:00+00:00"


def tool_use(call: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"ToolUse": {"id": call, "name": name, "raw_input": orjson.dumps(args).decode(),
                        "input": args, "is_input_complete": True}}  # fmt: skip


def tool_result(call: str, name: str, text: str, *, error: bool = False,
                output: object = None) -> dict[str, Any]:  # fmt: skip
    return {"tool_use_id": call, "tool_name": name, "is_error": error,
            "content": [{"Text": text}], "output": output}  # fmt: skip


def agent(*content: dict[str, Any], results: list[dict[str, Any]] | None = None
          ) -> dict[str, Any]:  # fmt: skip
    by_id = {r["tool_use_id"]: r for r in results or []}
    return {"Agent": {"content": list(content), "tool_results": by_id,
                      "reasoning_details": None}}  # fmt: skip


def user(n: int, *content: dict[str, Any]) -> dict[str, Any]:
    return {"User": {"id": f"u-{n}", "content": list(content)}}


def thread(title: str, messages: list[Any], minute: int, **more: Any) -> dict[str, Any]:
    return {"title": title, "messages": messages, "updated_at": _time(minute),
            "detailed_summary": None, "initial_project_snapshot": None,
            "cumulative_token_usage": {"input_tokens": 10, "output_tokens": 20},
            "request_token_usage": {}, "model": {"provider": "zed.dev", "model": "claude"},
            "profile": "write", "imported": False, "subagent_context": None,
            "thinking_enabled": False, "version": "0.3.0", **more}  # fmt: skip


def main_messages() -> list[Any]:
    spawned = {"session_id": SUB, "output": "Only the lamp timer sleeps 1001 ms.",
               "session_info": {"session_id": SUB, "message_start_index": 0,
                                "message_end_index": 1}}  # fmt: skip
    image = {"Image": {"source": "iVBORw0KGgo=", "size": {"width": 1, "height": 1}}}
    mention = {"Mention": {"uri": {"File": {"abs_path": f"{CWD}/src/timer.rs"}},
                           "content": "fn tick() { sleep(1001) }"}}  # fmt: skip
    return [
        user(1, {"Text": "Why does the lamp timer drift?"}, mention, image),
        agent({"Thinking": {"text": "Read tick first.", "signature": "sig"}},
              {"Text": "Reading the timer."},
              tool_use("toolu_01Read", "read_file", {"path": "src/timer.rs"}),
              results=[tool_result("toolu_01Read", "read_file", "fn tick() { sleep(1001) }")]),
        agent(tool_use(SPAWN, "spawn_agent", {"label": SUB_TITLE,
                                              "message": "Do other timers sleep 1001 ms?"}),
              results=[tool_result(SPAWN, "spawn_agent", orjson.dumps(
                  {"session_id": SUB, "output": spawned["output"]}).decode(), output=spawned)]),
        agent(tool_use("toolu_01Test", "terminal", {"command": "cargo test", "cd": CWD}),
              results=[tool_result("toolu_01Test", "terminal", "error: test tick failed",
                                   error=True)]),
        "Resume",
        agent({"Text": "The sleep is 1001 ms; it should be 1000."},
              {"RedactedThinking": "opaque"}),
    ]  # fmt: skip


def legacy_thread() -> dict[str, Any]:
    """A thread of Zed's first agent (0.2.0): roles, segments, tool uses and results."""
    messages = [
        {"id": 0, "role": "user", "segments": [{"type": "text", "text": "Buoy battery?"}],
         "tool_uses": [], "tool_results": [], "context": "", "creases": [],
         "is_hidden": False},
        {"id": 1, "role": "assistant", "segments": [
            {"type": "thinking", "text": "Check the log.", "signature": None},
            {"type": "text", "text": "Reading the log."}],
         "tool_uses": [{"id": "tu_1", "name": "read_file", "input": {"path": "b.log"}}],
         "tool_results": [{"tool_use_id": "tu_1", "is_error": False,
                           "content": "battery 12%", "output": None}],
         "context": "", "creases": [], "is_hidden": False},
        {"id": 2, "role": "system", "segments": [], "tool_uses": [], "tool_results": [],
         "context": "", "creases": [], "is_hidden": True},
    ]  # fmt: skip
    snapshot = {"worktree_snapshots": [{"worktree_path": LEGACY_CWD, "git_state": None}],
                "unsaved_buffer_paths": [], "timestamp": _time(30)}  # fmt: skip
    return {"version": "0.2.0", "summary": "Buoy battery", "updated_at": _time(31),
            "messages": messages, "initial_project_snapshot": snapshot,
            "cumulative_token_usage": {}, "request_token_usage": [],
            "detailed_summary_state": "NotGenerated"}  # fmt: skip


def rows(upto: int | None = None) -> list[tuple[Any, ...]]:
    """(id, parent, folders, order, summary, updated, created, thread) per thread."""
    sub = thread(SUB_TITLE, [user(1, {"Text": "Do other timers sleep 1001 ms?"}),
                             agent({"Text": "Only the lamp timer sleeps 1001 ms."})], 3,
                 subagent_context={"parent_thread_id": MAIN, "depth": 1})  # fmt: skip
    untitled = thread("New Thread", [user(1, {"Text": "hello from nowhere"})], 40)
    main_minute = 2 if upto is not None else 9
    return [
        (MAIN, None, f"{OTHER}\n{CWD}", "1,0", TITLE, _time(main_minute), _time(1),
         thread(TITLE, main_messages()[:upto], main_minute)),
        (SUB, MAIN, CWD, "0", SUB_TITLE, _time(3), _time(2), sub),
        (LEGACY, None, None, None, "Buoy battery", _time(31), _time(30), legacy_thread()),
        (UNTITLED, None, None, None, "New Thread", _time(40), _time(40), untitled),
    ]  # fmt: skip


def encode(value: dict[str, Any], zstd: bool) -> tuple[str, bytes]:
    data = orjson.dumps(value)
    if not zstd:
        return "json", data
    zstandard = importlib.import_module("zstandard")
    # As Zed's ``zstd::encode_all``: a streaming frame that does not record its size.
    compressor = zstandard.ZstdCompressor(level=3, write_content_size=False)
    return "zstd", bytes(compressor.compress(data))


def write(folder: Path, *, upto: int | None = None, zstd: bool = False) -> Path:
    """``threads.db`` in ``folder`` (``upto``: the main thread's first messages)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "threads.db"
    fresh = not path.exists()
    with sqlite3.connect(path) as conn:
        if fresh:
            conn.executescript(SCHEMA)
        for id_, parent, folders, order, summary, updated, created, value in rows(upto):
            data_type, data = encode(value, zstd)
            conn.execute(
                "INSERT INTO threads (id, parent_id, folder_paths, folder_paths_order, summary,"
                " updated_at, data_type, data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(id) DO UPDATE SET summary = excluded.summary,"
                " updated_at = excluded.updated_at, data_type = excluded.data_type,"
                " data = excluded.data",
                (id_, parent, folders, order, summary, updated, data_type, data, created),
            )
    conn.close()
    return path


def write_home(home: Path) -> Path:
    """Zed's threads folder under ``home`` (Linux)."""
    return write(home / ".local" / "share" / "zed" / "threads").parent
