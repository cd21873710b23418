"""Generated Hermes agent histories: ``state.db`` with the tables and columns
``hermes_state.py`` creates (hermes-agent 0.19.0, schema version 22), rows in the shapes
its writer stores (OpenAI tool calls as JSON, ``"\\x00json:"`` content, compaction in
place: the earlier rows kept with ``active = 0, compacted = 1`` and the summary written
after them); the text is our own."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Final, NamedTuple

import orjson

MAIN: Final = "20261207_101500_a1b2c3"
SUB: Final = "20261207_101535_d4e5f6"
OLD: Final = "20261206_090000_0a0b0c"
NEXT: Final = "20261206_091500_1d2e3f"
CHAT: Final = "20261205_200000_445566"
CWD: Final = "/home/dev/shop"
T0: Final = 1_796_000_000.25  # seconds, as Hermes stores them (REAL)
SUMMARY: Final = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary"
    " below. The current session state may reflect work described here — avoid repeating"
    " it:\n## Active Task\nDiscounts are applied in pricing.py; the checkout total must use"
    " them.\n--- END OF CONTEXT SUMMARY — respond to the message below, not the summary"
    " above ---"
)

SCHEMA: Final = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT,
  session_key TEXT, chat_id TEXT, chat_type TEXT, thread_id TEXT, display_name TEXT,
  origin_json TEXT, expiry_finalized INTEGER DEFAULT 0, model TEXT, model_config TEXT,
  system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL,
  end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
  input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
  cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
  reasoning_tokens INTEGER DEFAULT 0, cwd TEXT, git_branch TEXT, git_repo_root TEXT,
  billing_provider TEXT, billing_base_url TEXT, billing_mode TEXT,
  estimated_cost_usd REAL, actual_cost_usd REAL, cost_status TEXT, cost_source TEXT,
  pricing_version TEXT, title TEXT, api_call_count INTEGER DEFAULT 0,
  handoff_state TEXT, handoff_platform TEXT, handoff_error TEXT,
  compression_failure_cooldown_until REAL, compression_failure_error TEXT,
  compression_fallback_streak INTEGER NOT NULL DEFAULT 0, profile_name TEXT,
  rewind_count INTEGER NOT NULL DEFAULT 0, archived INTEGER NOT NULL DEFAULT 0,
  FOREIGN KEY (parent_session_id) REFERENCES sessions(id));
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL, content TEXT,
  tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, effect_disposition TEXT,
  timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT, reasoning TEXT,
  reasoning_content TEXT, reasoning_details TEXT, codex_reasoning_items TEXT,
  codex_message_items TEXT, platform_message_id TEXT, observed INTEGER DEFAULT 0,
  active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0,
  api_content TEXT);
INSERT INTO schema_version (version) VALUES (22);
"""


class Row(NamedTuple):
    """One ``messages`` row: when (seconds after T0), who, what; ``compact`` first
    archives every earlier row of the session, as ``archive_and_compact`` does."""

    at: float
    role: str
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    reasoning: str | None = None
    compact: bool = False


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call as Hermes keeps it (``build_assistant_message``)."""
    function = {"name": name, "arguments": orjson.dumps(arguments).decode()}
    return {"id": call_id, "call_id": call_id, "response_item_id": f"fc_{call_id}",
            "type": "function", "function": function}  # fmt: skip


def result(call_id: str, name: str, value: dict[str, Any], at: float) -> Row:
    return Row(at, "tool", orjson.dumps(value).decode(), tool_call_id=call_id, tool_name=name)


def parts(*values: dict[str, Any]) -> str:
    """Structured content as ``SessionDB._encode_content`` stores it."""
    return "\x00json:" + orjson.dumps(list(values)).decode()


def sessions() -> list[dict[str, Any]]:
    """The ``sessions`` rows: a CLI session with a sub-agent, a session continued after
    compression (rotation), a gateway chat without a cwd."""
    return [
        {"id": OLD, "source": "cli", "cwd": CWD, "title": "Tidy the README",
         "started_at": T0 - 90000,
         "ended_at": T0 - 89100, "end_reason": "compression", "model": "model-a"},
        {"id": NEXT, "source": "cli", "cwd": CWD, "title": "Tidy the README #2",
         "started_at": T0 - 89100, "parent_session_id": OLD, "model": "model-a"},
        {"id": CHAT, "source": "telegram", "cwd": None, "title": None,
         "started_at": T0 - 180000, "model": "model-a"},
        {"id": MAIN, "source": "cli", "cwd": CWD, "title": "Fix the checkout total",
         "started_at": T0, "model": "model-a"},
        # A sub-agent's row has no cwd (as hermes 0.19.0 writes it, run for real).
        {"id": SUB, "source": "subagent", "cwd": None, "title": None, "started_at": T0 + 35,
         "parent_session_id": MAIN, "model": "model-b",
         "model_config": orjson.dumps({"_delegate_from": MAIN}).decode()},
    ]  # fmt: skip


def messages() -> dict[str, list[Row]]:
    read = call("call_1", "read_file", {"path": "cart.py"})
    tests = call("call_2", "terminal", {"command": "pytest -q"})
    delegate = call("call_3", "delegate_task", {"goal": "Find where discounts are applied"})
    search = call("call_s1", "search_files", {"pattern": "discount"})
    return {
        MAIN: [
            Row(0, "user", "The checkout total ignores the discount code"),
            Row(10, "assistant", "", [read], reasoning="Look at the cart module first."),
            result("call_1", "read_file", {"content": "def total(items): ...",
                                           "total_lines": 1, "error": None}, 11),
            Row(20, "assistant", "I will run the tests.", [tests]),
            result("call_2", "terminal", {"output": "", "exit_code": 127,
                                          "error": "command not found: pytest"}, 21),
            Row(30, "assistant", None, [delegate]),
            result("call_3", "delegate_task", {"results": [{"task_index": 0, "status": "completed",
                   "summary": "pricing.py applies discounts in apply_codes()"}],
                   "total_duration_seconds": 4.2}, 60),
            Row(70, "assistant", "Discounts are applied in pricing.py; fixing the total."),
            # In-place compaction: the head, the summary, the kept tail, written again;
            # the kept tail carries its time (a copy), the head had none (a new time).
            Row(80, "user", "The checkout total ignores the discount code", compact=True),
            Row(80.001, "user", SUMMARY),
            Row(70, "assistant", "Discounts are applied in pricing.py; fixing the total."),
            Row(90, "user", "Now add a test for the discount"),
            Row(100, "assistant", "Added tests/test_cart.py with a discounted checkout."),
        ],
        SUB: [
            Row(36, "user", "Find where discounts are applied"),
            Row(40, "assistant", None, [search]),
            result("call_s1", "search_files", {"matches": ["pricing.py:12: def apply_codes"]}, 41),
            Row(50, "assistant", "pricing.py applies discounts in apply_codes()"),
        ],
        OLD: [
            Row(-90000, "user", "Tidy the README's install section"),
            Row(-89990, "assistant", "Reordered the install steps."),
        ],
        NEXT: [
            Row(-89100, "user", "[CONTEXT SUMMARY]: The README's install steps were reordered."),
            Row(-89090, "user", parts({"type": "text", "text": "Does this screenshot match?"},
                                      {"type": "image_url", "image_url": {"url": "data:,"}})),
            Row(-89080, "assistant", "Yes, the screenshot shows the new order."),
        ],
        CHAT: [
            Row(-180000, "user", "Remind me what a discount code is"),
            Row(-179990, "assistant", "A code that lowers the price at checkout."),
            # The gateway's header of the session, written after its first turn (seen in
            # a real weixin session of schema 12): the model, tools, platform; no content.
            Row(-179990, "session_meta"),
            # A provider's message object is flushed with bare calls: no id.
            Row(-179985, "assistant", None, [{"name": "web_search",
                                              "arguments": '{"query": "discount code"}'}]),
            result("call_w1", "web_search", {"results": ["a code for a lower price"]}, -179984),
            Row(-179980, "system", "gateway note"),
        ],
    }  # fmt: skip


def write(path: Path, *, upto: int | None = None) -> Path:
    """``state.db`` with the first ``upto`` messages of each session (all by default);
    written again with a larger ``upto``, it gains the rows after (as Hermes appends)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name='sessions'").fetchone():
            conn.executescript(SCHEMA)
            for info in sessions():
                keys = ", ".join(info)
                marks = ", ".join("?" for _ in info)
                conn.execute(f"INSERT INTO sessions ({keys}) VALUES ({marks})", list(info.values()))
        for sid, rows in messages().items():
            have = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,))
            for row in rows[have.fetchone()[0] : upto]:
                if row.compact:
                    conn.execute("UPDATE messages SET active = 0, compacted = 1"
                                 " WHERE session_id = ? AND active = 1", (sid,))  # fmt: skip
                calls = orjson.dumps(row.tool_calls).decode() if row.tool_calls else None
                conn.execute(
                    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls,"
                    " tool_name, timestamp, reasoning, active) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
                    (sid, row.role, row.content, row.tool_call_id, calls, row.tool_name,
                     T0 + row.at, row.reasoning),
                )  # fmt: skip
        conn.commit()
    finally:
        conn.close()
    return path


def write_home(home: Path) -> Path:
    """``~/.hermes/state.db`` under ``home``; returns the Hermes home."""
    write(home / ".hermes" / "state.db")
    return home / ".hermes"
