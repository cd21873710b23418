"""Generated LLM (Simon Willison's ``llm``) histories: a ``logs.db`` with the tables its
migrations create, in both generations: ``conversations``/``responses`` with their
``tool_calls``/``tool_results`` as 0.31's ``Response.log_to_db`` writes them, and the
content-addressed ``threads``/``turns``/``messages``/``parts`` as 0.36's ``LogStore``
writes them (parts' ``text`` column for plain text and reasoning, a JSON ``payload`` for
the rest, fragments by reference as ``text_ref``); the text is our own.

- ``OLD``: a conversation of 0.31: a system prompt, a prompt with an attachment and a
  fragment, a tool call, its result (an exception: an error) sent with the next call,
  another call and its result, the answer;
- ``CONT``: a 0.31 conversation continued by 0.36 (``llm -c``): the thread has its id, and
  its first turn's chain starts with the history 0.36 rebuilt from the responses;
- ``MAIN``: a 0.36 thread: a system message, reasoning, a tool call and result, redacted
  reasoning, a failing call, a prompt borrowing a fragment and carrying an image;
- ``FORK``: a thread ``forked_from`` MAIN after its first answer, with a turn of its own.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

OLD: Final = "01kpa0000000000000000old01"
CONT: Final = "01kpa0000000000000000cont1"
MAIN: Final = "01kpb000000000000000main01"
FORK: Final = "01kpb000000000000000fork01"
FRAGMENT: Final = "def total(cart):\n    return sum(item.price for item in cart)\n"
DAY: Final = "2026-11-30"

SCHEMA: Final = """
CREATE TABLE "conversations" ("id" TEXT PRIMARY KEY, "name" TEXT, "model" TEXT);
CREATE TABLE "responses" ("id" TEXT PRIMARY KEY, "model" TEXT, "prompt" TEXT,
  "system" TEXT, "prompt_json" TEXT, "options_json" TEXT, "response" TEXT,
  "response_json" TEXT, "conversation_id" TEXT REFERENCES "conversations"("id"),
  "duration_ms" INTEGER, "datetime_utc" TEXT, "input_tokens" INTEGER,
  "output_tokens" INTEGER, "token_details" TEXT, "schema_id" TEXT, "resolved_model" TEXT);
CREATE TABLE "attachments" ("id" TEXT PRIMARY KEY, "type" TEXT, "path" TEXT, "url" TEXT,
  "content" BLOB);
CREATE TABLE "prompt_attachments" ("response_id" TEXT, "attachment_id" TEXT,
  "order" INTEGER, PRIMARY KEY ("response_id", "attachment_id"));
CREATE TABLE "fragments" ("id" INTEGER PRIMARY KEY, "hash" TEXT, "content" TEXT,
  "datetime_utc" TEXT, "source" TEXT);
CREATE TABLE "prompt_fragments" ("response_id" TEXT, "fragment_id" INTEGER, "order" INTEGER,
  PRIMARY KEY ("response_id", "fragment_id", "order"));
CREATE TABLE "tool_calls" ("id" INTEGER PRIMARY KEY, "response_id" TEXT, "tool_id" INTEGER,
  "name" TEXT, "arguments" TEXT, "tool_call_id" TEXT);
CREATE TABLE "tool_results" ("id" INTEGER PRIMARY KEY, "response_id" TEXT,
  "tool_id" INTEGER, "name" TEXT, "output" TEXT, "tool_call_id" TEXT,
  "instance_id" INTEGER, "exception" TEXT);
CREATE TABLE "messages" ("hash" TEXT PRIMARY KEY, "parent_hash" TEXT, "role" TEXT,
  "provider_metadata" TEXT);
CREATE TABLE "parts" ("id" INTEGER PRIMARY KEY, "message_hash" TEXT, "position" INTEGER,
  "type" TEXT, "tool_name" TEXT, "text" TEXT, "payload" TEXT);
CREATE TABLE "threads" ("id" TEXT PRIMARY KEY, "name" TEXT, "tip_message_hash" TEXT,
  "forked_from" TEXT, "datetime_utc" TEXT);
CREATE TABLE "turns" ("id" TEXT PRIMARY KEY, "thread_id" TEXT, "parent_message_hash" TEXT,
  "tip_message_hash" TEXT, "model" TEXT, "resolved_model" TEXT, "options_json" TEXT,
  "schema_id" TEXT, "input_tokens" INTEGER, "output_tokens" INTEGER, "token_details" TEXT,
  "duration_ms" INTEGER, "datetime_utc" TEXT, "response_json" TEXT);
"""


def at(clock: str) -> str:
    """A time as the turns and responses keep it (``datetime.isoformat()``, UTC)."""
    return f"{DAY}T{clock}.250000+00:00"


# ---- 0.31: conversations and responses ------------------------------------------------------


@dataclass
class Response:
    """One ``responses`` row with what it was sent (results) and what it asked (calls)."""

    id: str
    clock: str
    prompt: str = ""
    response: str = ""
    system: str | None = None
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    results: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    attachments: int = 0
    fragments: int = 0


def old_responses() -> list[Response]:
    return [
        Response(
            "01kpa00000000000000000r001", "09:00:00", "Why does the cart total skip discounts?",
            "Let me read cart.py.", system="Answer briefly.",
            calls=[("call_r1", "read_file", {"path": "cart.py"})], attachments=1, fragments=1,
        ),
        Response(
            "01kpa00000000000000000r002", "09:00:05", response="It is not there; pricing.py?",
            calls=[("call_r2", "read_file", {"path": "pricing.py"})],
            results=[("call_r1", "read_file", "Error: no such file", "FileNotFoundError: cart.py")],
        ),
        Response(
            "01kpa00000000000000000r003", "09:00:09",
            response="total() ignores apply_codes(); call it before summing.",
            results=[("call_r2", "read_file", "def apply_codes(cart): ...", None)],
        ),
    ]  # fmt: skip


CONT_RESPONSE: Final = Response(
    "01kpa00000000000000000c001", "10:00:00", "What is a discount code?", "A code for a price cut."
)


def _write_response(conn: sqlite3.Connection, conversation: str, row: Response) -> None:
    conn.execute(
        'INSERT INTO responses (id, model, prompt, system, response, conversation_id,'
        ' duration_ms, datetime_utc, options_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        (row.id, "gpt-4.1-mini", row.prompt, row.system, row.response, conversation, 1500,
         at(row.clock), "{}"),
    )  # fmt: skip
    for call_id, name, arguments in row.calls:
        conn.execute(
            "INSERT INTO tool_calls (response_id, name, arguments, tool_call_id)"
            " VALUES (?, ?, ?, ?)",
            (row.id, name, orjson.dumps(arguments).decode(), call_id),
        )
    for call_id, name, output, exception in row.results:
        conn.execute(
            "INSERT INTO tool_results (response_id, name, output, tool_call_id, exception)"
            " VALUES (?, ?, ?, ?, ?)",
            (row.id, name, output, call_id, exception),
        )
    for order in range(row.attachments):
        conn.execute(
            "INSERT OR IGNORE INTO attachments (id, type, path) VALUES (?, ?, ?)",
            ("a1", "image/png", "/home/dev/shop/cart.png"),
        )
        conn.execute("INSERT INTO prompt_attachments VALUES (?, ?, ?)", (row.id, "a1", order))
    for order in range(row.fragments):
        conn.execute("INSERT INTO prompt_fragments VALUES (?, ?, ?)", (row.id, 1, order))


# ---- 0.32+: threads, turns, messages, parts -------------------------------------------------


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def reasoning(value: str) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "reasoning", "text": value}
    if not value:
        part["redacted"] = True
    return part


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "arguments": arguments, "tool_call_id": call_id}


def tool_result(
    call_id: str, name: str, output: str, exception: str | None = None
) -> dict[str, Any]:
    part = {"type": "tool_result", "name": name, "output": output, "tool_call_id": call_id}
    return part | ({"exception": exception} if exception else {})


Message = tuple[str, list[dict[str, Any]]]  # role, parts


@dataclass
class Turn:
    """A model call: the messages it was sent (after the previous tip) and answered."""

    clock: str
    sent: list[Message]
    answered: list[Message]


def main_turns() -> list[Turn]:
    return [
        Turn("11:00:00",
             [("system", [text("Answer briefly.")]),
              ("user", [text("The checkout total ignores discount codes. Fix it.")])],
             [("assistant", [reasoning("Read pricing.py first."), text("Reading pricing.py."),
                             tool_call("call_m1", "read_file", {"path": "pricing.py"})])]),
        Turn("11:00:04",
             [("tool", [tool_result("call_m1", "read_file", "def apply_codes(cart): ...")])],
             [("assistant", [reasoning(""),
                             tool_call("call_m2", "shell", {"command": "pytest"})])]),
        Turn("11:00:08",
             [("tool", [tool_result("call_m2", "shell", "", "CalledProcessError: exit 1")])],
             [("assistant", [text("The tests fail: total() skips apply_codes().")])]),
        Turn("11:05:00",
             [("user", [text("Compare with this:\n" + FRAGMENT),
                        {"type": "attachment", "attachment": {"id": "a1"}}])],
             [("assistant", [text("That version sums before the codes apply.")])]),
    ]  # fmt: skip


def fork_turns() -> list[Turn]:
    """After MAIN's first answer (its read of pricing.py), a different question."""
    return [
        Turn("12:00:00", [("user", [text("Instead, explain apply_codes.")])],
             [("assistant", [text("apply_codes() takes each code's discount off.")])]),
    ]  # fmt: skip


def cont_turns() -> list[Turn]:
    """``llm -c`` by 0.36 on CONT: its first turn is sent the rebuilt history first."""
    copy = [("user", [text(CONT_RESPONSE.prompt)]), ("assistant", [text(CONT_RESPONSE.response)])]
    return [
        Turn("10:30:00", [*copy, ("user", [text("And a gift card?")])],
             [("assistant", [text("A stored balance, not a price cut.")])]),
    ]  # fmt: skip


class _Store:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def message(self, parent: str | None, role: str, parts: list[dict[str, Any]]) -> str:
        """Stored once, as ``LogStore._ensure_message`` does: the hash covers the parent."""
        body = orjson.dumps({"parent": parent, "message": {"role": role, "parts": parts}},
                            option=orjson.OPT_SORT_KEYS)  # fmt: skip
        digest = "b2:" + hashlib.blake2b(body, digest_size=16).hexdigest()
        if self.conn.execute("SELECT 1 FROM messages WHERE hash = ?", (digest,)).fetchone():
            return digest
        self.conn.execute("INSERT INTO messages VALUES (?, ?, ?, NULL)", (digest, parent, role))
        for position, part in enumerate(parts):
            payload = {k: v for k, v in part.items() if k != "type"}
            stored = payload.pop("text") if part["type"] in ("text", "reasoning") else None
            if stored is not None and FRAGMENT in stored:  # borrowed: by reference
                head, tail = stored.split(FRAGMENT, 1)
                pieces = [{"literal": head}, {"fragment": 1}] + ([{"literal": tail}] * bool(tail))
                payload["text_ref"], stored = pieces, None
            self.conn.execute(
                "INSERT INTO parts (message_hash, position, type, tool_name, text, payload)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (digest, position, part["type"], part.get("name"), stored,
                 orjson.dumps(payload).decode() if payload else None),
            )  # fmt: skip
        return digest

    def thread(self, thread_id: str, name: str, turns: list[Turn], *, tip: str | None = None,
               forked_from: str | None = None, upto: int | None = None) -> str | None:  # fmt: skip
        for index, turn in enumerate(turns[:upto]):
            for role, parts in turn.sent:
                tip = self.message(tip, role, parts)
            sent = tip
            for role, parts in turn.answered:
                tip = self.message(tip, role, parts)
            self.conn.execute(
                "INSERT OR REPLACE INTO turns (id, thread_id, parent_message_hash,"
                " tip_message_hash, model, duration_ms, datetime_utc) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (f"{thread_id}-t{index}", thread_id, sent, tip, "gpt-5-mini", 2000,
                 at(turn.clock)),
            )  # fmt: skip
        self.conn.execute(
            "INSERT OR REPLACE INTO threads VALUES (?, ?, ?, ?, ?)",
            (thread_id, name, tip, forked_from, f"{DAY} {turns[0].clock}.900000+00:00"),
        )
        return tip


def write(home: Path, *, upto: int | None = None) -> Path:
    """The whole history in ``<home>/.config/io.datasette.llm/logs.db``, or with ``upto``
    only that many turns of MAIN (``watch``: the rest written by a later call)."""
    db = home / ".config" / "io.datasette.llm" / "logs.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    fresh = not db.exists()
    conn = sqlite3.connect(db)
    if fresh:
        conn.executescript(SCHEMA)
        conn.execute("INSERT INTO fragments VALUES (1, 'h1', ?, ?, 'total.py')",
                     (FRAGMENT, at("08:59:00")))  # fmt: skip
        conn.execute("INSERT INTO conversations VALUES (?, ?, ?)",
                     (OLD, "Why does the cart total skip d…", "gpt-4.1-mini"))  # fmt: skip
        for row in old_responses():
            _write_response(conn, OLD, row)
        conn.execute("INSERT INTO conversations VALUES (?, ?, ?)",
                     (CONT, "What is a discount code?", "gpt-4.1-mini"))  # fmt: skip
        _write_response(conn, CONT, CONT_RESPONSE)
        _Store(conn).thread(CONT, "And a gift card?", cont_turns())
    store = _Store(conn)
    store.thread(MAIN, "The checkout total ignores di…", main_turns(), upto=upto)
    if upto is None:
        first = main_turns()[0]
        tip = None
        for role, parts in [*first.sent, *first.answered]:
            tip = store.message(tip, role, parts)
        store.thread(FORK, "Instead, explain apply_codes.", fork_turns(), tip=tip,
                     forked_from=MAIN)  # fmt: skip
    conn.commit()
    conn.close()
    return db
