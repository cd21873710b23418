"""Generated Crush histories: ``<project>/.crush/crush.db`` with the tables Crush's
migrations create (all of them, or the first three: before ``provider``,
``is_summary_message`` and ``todos``) and ``parts`` as ``marshalParts`` writes them
(``[{"type": ..., "data": {...}}]``, Go's field names); the text is our own."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Final

import orjson

MAIN: Final = "5f0c1d2e-8a7b-4c3d-9e1f-0a1b2c3d4e5f"
OTHER: Final = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
AGENT_MESSAGE: Final = "m-04"
AGENT_CALL: Final = "toolu_agent_01"
CHILD: Final = f"{AGENT_MESSAGE}$${AGENT_CALL}"  # CreateAgentToolSessionID
TITLER: Final = f"title-{MAIN}"  # CreateTitleSession: generates the title, no conversation
T0: Final = 1_764_000_000  # seconds, as strftime('%s', 'now') writes

SCHEMA: Final = """
CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT,
  version_id INTEGER NOT NULL, is_applied INTEGER NOT NULL,
  tstamp TIMESTAMP DEFAULT (datetime('now')));
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0),
  prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0.0, updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL,
  summary_message_id TEXT);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL,
  content TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE,
  UNIQUE(path, session_id, version));
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
  parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, finished_at INTEGER,
  FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE);
CREATE TRIGGER update_session_message_count_on_insert AFTER INSERT ON messages
BEGIN UPDATE sessions SET message_count = message_count + 1 WHERE id = new.session_id; END;
"""
# The later migrations (2025-06 to 2026-01), as Crush applies them.
LATER: Final = """
ALTER TABLE messages ADD COLUMN provider TEXT;
ALTER TABLE messages ADD COLUMN is_summary_message INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE sessions ADD COLUMN todos TEXT;
CREATE TABLE read_files (session_id TEXT NOT NULL CHECK (session_id != ''),
  path TEXT NOT NULL CHECK (path != ''), read_at INTEGER NOT NULL,
  FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE,
  PRIMARY KEY (path, session_id));
"""


def part(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": data}


def text(value: str) -> dict[str, Any]:
    return part("text", text=value)


def finish(reason: str, at: int, message: str = "", details: str = "") -> dict[str, Any]:
    data: dict[str, Any] = {"reason": reason, "time": at}
    data |= {k: v for k, v in (("message", message), ("details", details)) if v}  # omitempty
    return {"type": "finish", "data": data}


def call(call_id: str, name: str, args: dict[str, Any], *, done: bool = True) -> dict[str, Any]:
    return part("tool_call", id=call_id, name=name, input=orjson.dumps(args).decode(),
                provider_executed=False, finished=done)  # fmt: skip


def result(call_id: str, name: str, content: str, *, error: bool = False) -> dict[str, Any]:
    return part("tool_result", tool_call_id=call_id, name=name, content=content, data="",
                mime_type="", metadata="", is_error=error)  # fmt: skip


def reasoning(thought: str, at: int) -> dict[str, Any]:
    return part("reasoning", thinking=thought, signature="sig", thought_signature="",
                tool_id="", responses_data=None, started_at=at, finished_at=at + 2)  # fmt: skip


# (message id, role, parts, is_summary_message); the main session's are 10 s apart.
Message = tuple[str, str, list[dict[str, Any]], bool]


def conversation() -> dict[str, list[Message]]:
    t = T0
    return {
        MAIN: [
            ("m-01", "user", [text("Find out why test_upload is flaky"),
                              part("binary", Path="shot.png", MIMEType="image/png",
                                   Data="iVBORw0KGgo=")], False),
            ("m-02", "assistant", [reasoning("Look at the test first.", t),
                                   text("Reading the test."),
                                   call("toolu_view_01", "view", {"file_path": "tests/up.py"}),
                                   finish("tool_use", t + 20)], False),
            ("m-03", "tool", [result("toolu_view_01", "view", "def test_upload(): retry(3)")],
             False),
            (AGENT_MESSAGE, "assistant", [call(AGENT_CALL, "agent",
                                               {"prompt": "Find every retry helper"}),
                                          finish("tool_use", t + 40)], False),
            ("m-05", "tool", [result(AGENT_CALL, "agent", "retry() in net/backoff.py")], False),
            ("m-06", "assistant", [call("toolu_bash_01", "bash", {"command": "pytest -x"}),
                                   finish("tool_use", t + 60)], False),
            ("m-07", "tool", [result("toolu_bash_01", "bash", "exit status 1", error=True)],
             False),
            ("m-08", "user", [part("shell_command", command="git status",
                                   output="nothing to commit", exit_code=0)], False),
            ("m-09", "assistant", [text("Summary: the upload test races the backoff timer."),
                                   finish("end_turn", t + 90)], True),
            ("m-10", "user", [text("Now make the timer injectable")], False),
            ("m-11", "assistant", [finish("error", t + 110, "Provider error",
                                          "rate limit exceeded")], False),
        ],
        CHILD: [
            ("c-01", "user", [text("Find every retry helper")], False),
            ("c-02", "assistant", [text("Only retry() in net/backoff.py."),
                                   finish("end_turn", t + 50)], False),
        ],
        TITLER: [
            ("t-01", "user", [text("Generate a title for: Find out why test_upload is flaky")],
             False),
        ],
        OTHER: [
            ("o-01", "user", [text("What does the Makefile's lint target run?")], False),
            ("o-02", "assistant", [text("ruff and mypy."), finish("end_turn", t + 130)], False),
        ],
    }  # fmt: skip


SESSIONS: Final = [
    (MAIN, None, "Flaky upload test"),
    (CHILD, MAIN, "Find every retry helper"),
    (TITLER, MAIN, "Generate a title"),
    (OTHER, None, "Untitled Session"),
]


def write_database(path: Path, *, latest: bool = True, upto: int | None = None) -> Path:
    """``crush.db`` with the first ``upto`` messages of each session (all by default);
    written again with a larger ``upto``, it gains the rows after (as Crush inserts)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sessions'").fetchone():
            conn.executescript(SCHEMA + (LATER if latest else ""))
            for n, (sid, parent, title) in enumerate(SESSIONS):
                created = T0 + (40 if sid == CHILD else n)
                conn.execute(
                    "INSERT INTO sessions (id, parent_session_id, title, updated_at, created_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (sid, parent, title, created, created),
                )
        first = {MAIN: T0, CHILD: T0 + 41, TITLER: T0 + 3, OTHER: T0 + 200}
        for sid, messages in conversation().items():
            have = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,))
            start = have.fetchone()[0]
            for n, (mid, role, parts, summary) in enumerate(messages[start:upto], start=start):
                at = first[sid] + (10 if sid == MAIN else 1) * n
                done = at if role == "assistant" else None
                row = (mid, sid, role, orjson.dumps(parts).decode(), at, at, done)
                if latest:
                    conn.execute(
                        "INSERT INTO messages (id, session_id, role, parts, created_at,"
                        " updated_at, finished_at, provider, is_summary_message)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, 'anthropic', ?)",
                        (*row, int(summary)),
                    )
                    if summary:
                        conn.execute(
                            "UPDATE sessions SET summary_message_id = ? WHERE id = ?", (mid, sid)
                        )
                else:
                    conn.execute(
                        "INSERT INTO messages (id, session_id, role, parts, created_at,"
                        " updated_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        row,
                    )
        conn.commit()
    finally:
        conn.close()
    return path


def write(home: Path, project: str = "work/uploader") -> Path:
    """A home where Crush opened ``project``: its ``.crush/crush.db`` and the global
    ``projects.json`` naming it; returns the data folder."""
    folder = home / project / ".crush"
    write_database(folder / "crush.db")
    listed = {"projects": [{"path": str(home / project), "data_dir": str(folder),
                            "last_accessed": "2025-11-24T16:00:00Z"}]}  # fmt: skip
    registry = home / ".local" / "share" / "crush" / "projects.json"
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_bytes(orjson.dumps(listed, option=orjson.OPT_INDENT_2))
    return folder


# Seen in a real crush.db: a local model's malformed call, which Crush keeps with an
# empty id and name, and its "Tool not found: " result naming the same empty id.
UNNAMED_CALL: Final = ("o-03", "assistant", [part("tool_call", id="", name="", input="",
                       type="function", finished=True), finish("tool_use", T0 + 210)])  # fmt: skip
UNNAMED_RESULT: Final = ("o-04", "tool", [part("tool_result", tool_call_id="", name="",
                         content="Tool not found: ", metadata="", is_error=True)])  # fmt: skip


def write_unnamed_call(path: Path) -> Path:
    """The database, then the malformed call and its result at the end of OTHER."""
    write_database(path)
    conn = sqlite3.connect(path)
    try:
        for n, (mid, role, parts) in enumerate((UNNAMED_CALL, UNNAMED_RESULT)):
            at = T0 + 210 + n
            conn.execute(
                "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at,"
                " finished_at, provider, is_summary_message) VALUES (?, ?, ?, ?, ?, ?, ?,"
                " 'openai-compat', 0)",
                (mid, OTHER, role, orjson.dumps(parts).decode(), at, at, at),
            )
        conn.commit()
    finally:
        conn.close()
    return path
