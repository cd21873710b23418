"""Generated Goose histories: ``sessions.db`` with Goose's tables (schema v5, or v2 before
``metadata_json``, ``name`` and ``session_type`` existed); the text is our own."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Final

import orjson

MAIN: Final = "20251124_1"
HELPER: Final = "20251124_2"
NO_CWD: Final = "20251124_3"
CWD: Final = "/home/dev/ledger"
T0: Final = 1_764_000_000  # seconds

SCHEMA_V5: Final = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT
  CURRENT_TIMESTAMP);
CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT '', user_set_name BOOLEAN DEFAULT FALSE,
  session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT
  CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}', total_tokens INTEGER,
  input_tokens INTEGER, output_tokens INTEGER, accumulated_total_tokens INTEGER,
  accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER, schedule_id TEXT,
  recipe_json TEXT, user_recipe_values_json TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
  content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
  timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
INSERT INTO schema_version (version) VALUES (5);
"""
# Schema v2: no metadata_json, no name (the description titles), no session_type.
SCHEMA_V2: Final = (
    SCHEMA_V5.replace("name TEXT NOT NULL DEFAULT '',\n", "")
    .replace(
        " user_set_name BOOLEAN DEFAULT FALSE,\n  session_type TEXT NOT NULL DEFAULT 'user',", ""
    )
    .replace(", metadata_json TEXT", "")
    .replace("VALUES (5)", "VALUES (2)")
)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_request(call: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "toolRequest",
        "id": call,
        "toolCall": {"status": "success", "value": {"name": name, "arguments": args}},
    }


def tool_response(call: str, output: str, *, wrapped: bool = True) -> dict[str, Any]:
    """Later versions wrap the content (rmcp's CallToolResult); earlier ones list it."""
    content = [{"type": "text", "text": output}]
    value: object = {"content": content, "isError": False} if wrapped else content
    return {"type": "toolResponse", "id": call, "toolResult": {"status": "success", "value": value}}


def conversation() -> dict[str, list[tuple[str, list[dict[str, Any]], dict[str, Any] | None]]]:
    """Session -> its messages (role, content, metadata)."""
    return {
        MAIN: [
            ("user", [text("Reconcile the March ledger against the bank export")], None),
            (
                "assistant",
                [
                    {"type": "thinking", "thinking": "Start with the CSV.", "signature": "s"},
                    text("I will read the export first."),
                    tool_request("tc_1", "developer__shell", {"command": "head bank.csv"}),
                ],
                None,
            ),
            ("user", [tool_response("tc_1", "date,amount\n2025-03-01,120.00")], None),
            (
                "assistant",
                [
                    tool_request(
                        "tc_2", "developer__text_editor", {"command": "view", "path": "ledger.csv"}
                    )
                ],
                None,
            ),
            # Some writers store a tool response under the role ``tool``: still its result.
            ("tool", [tool_response("tc_2", "2025-03-01,120.00", wrapped=False)], None),
            (
                "assistant",
                [text("Both agree on March 1st."), {"type": "image", "data": "AA=="}],
                None,
            ),
            (
                "user",
                [text("Summary: the March ledger matches the bank export so far.")],
                {"userVisible": False, "agentVisible": True},
            ),
            ("user", [text("Now check April")], {"userVisible": True, "agentVisible": True}),
        ],
        HELPER: [
            ("user", [text("List the CSV files under reports")], None),
            ("assistant", [text("reports/march.csv and reports/april.csv")], None),
        ],
        NO_CWD: [("user", [text("What does goose do with an empty working dir?")], None)],
    }


def write_database(path: Path, *, schema: int = 5, upto: int | None = None) -> None:
    """The database with the first ``upto`` messages of each session (all by default);
    written again with a larger ``upto``, it gains the rows after (as Goose appends)."""
    conn = sqlite3.connect(path)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name='sessions'").fetchone():
            conn.executescript(SCHEMA_V5 if schema == 5 else SCHEMA_V2)
            for n, (sid, title, cwd) in enumerate(
                [
                    (MAIN, "March ledger reconciliation", CWD),
                    (HELPER, "", CWD),
                    (NO_CWD, "Empty dir question", ""),
                ]
            ):
                created = f"2025-11-24 16:0{n}:00"
                if schema == 5:
                    kind = "sub_agent" if sid == HELPER else "user"
                    conn.execute(
                        "INSERT INTO sessions (id, name, session_type, working_dir,"
                        " created_at) VALUES (?, ?, ?, ?, ?)",
                        (sid, title, kind, cwd, created),
                    )
                else:
                    conn.execute(
                        "INSERT INTO sessions (id, description, working_dir, created_at)"
                        " VALUES (?, ?, ?, ?)",
                        (sid, title, cwd, created),
                    )
        for sid, messages in conversation().items():
            have = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,))
            start = have.fetchone()[0]
            for n, (role, content, meta) in enumerate(messages[start:upto], start=start):
                row = (sid, role, orjson.dumps(content).decode(), T0 + n * 30)
                if schema == 5:
                    conn.execute(
                        "INSERT INTO messages (session_id, role, content_json,"
                        " created_timestamp, metadata_json) VALUES (?, ?, ?, ?, ?)",
                        (*row, orjson.dumps(meta).decode() if meta else None),
                    )
                else:
                    conn.execute(
                        "INSERT INTO messages (session_id, role, content_json,"
                        " created_timestamp) VALUES (?, ?, ?, ?)",
                        row,
                    )
        conn.commit()
    finally:
        conn.close()


def write_session_file(folder: Path, name: str = "20250301_090000") -> Path:
    """The older layout: ``sessions/<name>.jsonl``, the metadata line, then one message
    per line (Goose's ``Message``: ``role``, ``created`` in seconds, ``content``)."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"working_dir": CWD, "description": "Quarterly totals", "message_count": 4,
            "total_tokens": 1200}  # fmt: skip
    messages = [
        {"role": "user", "created": T0, "content": [text("Sum the Q1 totals in ledger.csv")]},
        {"role": "assistant", "created": T0 + 5,
         "content": [tool_request("tc_9", "developer__shell", {"command": "awk"})]},
        {"role": "user", "created": T0 + 9, "content": [tool_response("tc_9", "Q1: 3410.50")]},
        {"role": "assistant", "created": T0 + 12, "content": [text("Q1 totals 3410.50.")]},
    ]  # fmt: skip
    path = folder / f"{name}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [meta, *messages]))
    return path
