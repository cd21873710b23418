"""Generated OpenCode histories: ``opencode.db`` with OpenCode's tables, or the older tree.

The schema follows OpenCode's ``session.sql.ts`` as studied (project, session with
``parent_id``/``directory``/``title``, message and part rows whose ``data`` is the JSON of
``message-v2.ts``'s shapes); the text is our own. The database is in WAL mode, as
OpenCode keeps it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Final

import orjson

MAIN: Final = "ses_0a1b2c3d4e5fMainSession01"
CHILD: Final = "ses_0a1b2c3d4e60ChildSession1"
COMPACTED: Final = "ses_0a1b2c3d4e61Compacted001"
CWD: Final = "/home/dev/shop"
T0: Final = 1_764_000_000_000  # ms

SCHEMA: Final = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT,
  name TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id),
  workspace_id TEXT, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, path TEXT,
  title TEXT NOT NULL, version TEXT NOT NULL, share_url TEXT, cost REAL NOT NULL DEFAULT 0,
  agent TEXT, model TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
  time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id),
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id),
  session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
  data TEXT NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message(session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part(message_id, id);
"""
# OpenCode 1.18.33's newer message model (its binary's migrations): one row per v2
# message, ``data`` being the message without its ``id`` and ``type``; ``seq`` is the
# durable sequence of the session event that appended it (so it has gaps).
ENTRY_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS session_message (id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES session(id), type TEXT NOT NULL, seq INTEGER NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS session_message_session_seq_idx
  ON session_message(session_id, seq);
"""
V2: Final = "ses_0a1b2c3d4e62PromptedByApi"


class History:
    """Sessions, messages and parts in OpenCode's shapes, numbered like OpenCode's ids."""

    def __init__(self) -> None:
        self.sessions: list[dict[str, Any]] = []
        self.messages: dict[str, list[dict[str, Any]]] = {}  # session -> infos
        self.parts: dict[str, list[dict[str, Any]]] = {}  # message -> parts
        self.entries: dict[str, list[dict[str, Any]]] = {}  # session -> v2 messages
        self.clock = T0
        self.counter = 0

    def tick(self) -> int:
        self.clock += 1500
        return self.clock

    def _id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.clock:013x}{self.counter:06d}"

    def session(
        self, sid: str, title: str, *, parent: str | None = None, directory: str = CWD
    ) -> None:
        self.sessions.append(
            {
                "id": sid,
                "projectID": "prj_shop",
                "directory": directory,
                "parentID": parent,
                "title": title,
                "version": "1.0.140",
                "time": {"created": self.tick(), "updated": self.clock},
            }
        )
        self.messages[sid] = []

    def message(self, sid: str, role: str, *, done: bool = True, **extra: Any) -> str:
        mid = self._id("msg")
        time: dict[str, int] = {"created": self.tick()}
        if role == "assistant" and done:
            time["completed"] = self.clock + 900
        info = {"id": mid, "sessionID": sid, "role": role, "time": time, **extra}
        if role == "assistant":
            info |= {
                "modelID": "model-x",
                "providerID": "prov",
                "mode": "build",
                "path": {"cwd": CWD, "root": CWD},
                "cost": 0,
                "tokens": {"input": 1},
            }
        self.messages[sid].append(info)
        self.parts[mid] = []
        return mid

    def entry(self, sid: str, kind: str, *, done: bool = True, **fields: Any) -> dict[str, Any]:
        """A v2 message (``Session.Message``) as the v2 runner appends it."""
        time: dict[str, int] = {"created": self.tick()}
        if kind in ("assistant", "shell") and done:
            time["completed"] = self.clock + 900
        listed = self.entries.setdefault(sid, [])
        seq = (listed[-1]["seq"] if listed else 0) + 3  # other events of the session between
        entry = {"id": self._id("msg"), "type": kind, "seq": seq, "time": time, **fields}
        listed.append(entry)
        return entry

    def part(self, sid: str, mid: str, kind: str, **fields: Any) -> None:
        self.parts[mid].append(
            {"id": self._id("prt"), "sessionID": sid, "messageID": mid, "type": kind, **fields}
        )

    def text(self, sid: str, mid: str, text: str, *, ended: bool = True, **extra: Any) -> None:
        span = {"start": self.clock, **({"end": self.clock + 10} if ended else {})}
        self.part(sid, mid, "text", text=text, time=span, **extra)

    def tool(
        self,
        sid: str,
        mid: str,
        tool: str,
        args: dict[str, Any],
        output: str,
        *,
        status: str = "completed",
        metadata: dict[str, Any] | None = None,
    ) -> None:
        state: dict[str, Any] = {"status": status, "input": args}
        if status == "pending":
            state["raw"] = orjson.dumps(args).decode()
        if status in ("running", "completed", "error"):
            state["time"] = {"start": self.clock}
            state["metadata"] = metadata or {}
        if status == "completed":
            state |= {"output": output, "title": f"{tool} done", "time": {"start": 1, "end": 2}}
        if status == "error":
            state |= {"error": output, "time": {"start": 1, "end": 2}}
        self.part(sid, mid, "tool", callID=f"call_{self.counter}", tool=tool, state=state)


def corpus() -> History:
    """A main session with a sub-agent (spawned by its ``task`` call) and a compacted
    session, with the part types OpenCode writes and one it does not (yet)."""
    h = History()
    h.session(MAIN, "Fix the checkout rounding")
    u = h.message(MAIN, "user", agent="build", model={"providerID": "p", "modelID": "m"})
    h.text(MAIN, u, "Why is the checkout total off by one cent for carts over 100 EUR?")
    h.text(MAIN, u, "Called the Read tool with the following input: cart.py", synthetic=True)
    h.part(MAIN, u, "file", mime="text/x-python", url="file:///home/dev/shop/cart.py")
    a = h.message(MAIN, "assistant", parentID=u)
    h.part(MAIN, a, "step-start", snapshot="abc")
    h.part(MAIN, a, "reasoning", text="The sum is rounded per line.", time={"start": 1, "end": 2})
    h.tool(MAIN, a, "grep", {"pattern": "round("}, "cart.py:41: total += round(price, 2)")
    h.tool(
        MAIN,
        a,
        "task",
        {"description": "Find every rounding call", "prompt": "Search", "subagent_type": "general"},
        "Found three rounding calls",
        metadata={"sessionId": CHILD},
    )
    h.part(MAIN, a, "hologram", shimmer=True)  # a part type from a future version
    h.text(MAIN, a, "Rounding per line loses a cent; I will round the total once instead.")
    h.part(
        MAIN,
        a,
        "step-finish",
        reason="stop",
        cost=0,
        tokens={"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}},
    )
    h.session(CHILD, "Find every rounding call (@general subagent)", parent=MAIN)
    c = h.message(CHILD, "user", agent="general", model={"providerID": "p", "modelID": "m"})
    h.text(CHILD, c, "Search the code base for every call to round() in the cart module")
    ca = h.message(CHILD, "assistant", parentID=c)
    h.tool(CHILD, ca, "read", {"filePath": "/home/dev/shop/cart.py"}, "41 total += round(x)")
    h.tool(CHILD, ca, "bash", {"command": "false"}, "exit status 1", status="error")
    h.text(CHILD, ca, "Found three rounding calls in cart.py")
    h.session(COMPACTED, "New session - 2025-11-24T16:00:00.000Z")  # OpenCode's placeholder
    for n in range(2):
        q = h.message(COMPACTED, "user", agent="build", model={"providerID": "p", "modelID": "m"})
        h.text(COMPACTED, q, f"Question {n} about the invoice PDF layout")
        r = h.message(COMPACTED, "assistant", parentID=q)
        h.text(COMPACTED, r, f"Answer {n}: the margins come from the template")
    k = h.message(COMPACTED, "user", agent="build", model={"providerID": "p", "modelID": "m"})
    h.part(COMPACTED, k, "compaction", auto=True)
    s = h.message(COMPACTED, "assistant", parentID=k, summary=True)
    h.text(COMPACTED, s, "Summary: we discussed invoice PDF margins and the template.")
    q = h.message(COMPACTED, "user", agent="build", model={"providerID": "p", "modelID": "m"})
    h.text(COMPACTED, q, "Now make the footer smaller")
    return h


def v2_history() -> History:
    """A session prompted through OpenCode's v2 API: its conversation is only in
    ``session_message`` (every message type the writer has), plus an older session with
    v1 messages that a v2 prompt went on."""
    h = History()
    h.session(V2, "Tidy the invoice module")
    model = {"id": "model-x", "providerID": "prov"}
    h.entry(V2, "agent-switched", agent="build")
    h.entry(V2, "user", text="Split invoice.py into a renderer and a calculator",
            files=[{"uri": "file:///home/dev/shop/invoice.py", "mime": "text/x-python",
                    "name": "invoice.py"}])  # fmt: skip
    h.entry(V2, "synthetic", sessionID=V2, text="The user attached invoice.py (212 lines)")
    h.entry(V2, "system", text="The project uses ruff for formatting")
    stamp = {"created": h.clock, "completed": h.clock + 5}
    h.entry(V2, "assistant", agent="build", model=model, finish="tool-calls", content=[
        {"type": "reasoning", "id": "rs_1", "text": "Rendering and totals are mixed.",
         "time": stamp},
        {"type": "tool", "id": "call_v2_read", "name": "read",
         # 1.18.33's v2 read, as recorded: what it read in ``structured``, no content.
         "state": {"status": "completed", "input": {"path": "invoice.py"}, "content": [],
                   "outputPaths": [],
                   "structured": {"uri": "file:///work/invoice.py", "name": "invoice.py",
                                  "content": "def render(invoice):", "encoding": "utf8",
                                  "mime": "text/x-python"}},
         "time": {"created": h.clock, "ran": h.clock, "completed": h.clock + 5}},
        {"type": "tool", "id": "call_v2_test", "name": "bash",
         "state": {"status": "error", "input": {"command": "pytest -q"}, "content": [],
                   "structured": {}, "error": {"type": "unknown", "message": "exit status 1"}},
         "time": {"created": h.clock}},
        {"type": "text", "id": "tx_1", "text": "The tests fail before the split; I will fix them."},
    ])  # fmt: skip
    h.entry(V2, "shell", callID="call_v2_shell", command="git status --short",
            output=" M invoice.py")  # fmt: skip
    h.entry(V2, "model-switched", model=model)
    h.entry(V2, "compaction", reason="auto", summary="Summary: invoice.py is being split.",
            recent="user: Split invoice.py")  # fmt: skip
    h.entry(V2, "assistant", agent="build", model=model, content=[
        {"type": "text", "id": "tx_2", "text": "Split done: renderer.py and calculator.py."},
    ], error={"type": "unknown", "message": "the provider closed the stream"})  # fmt: skip
    h.entry(V2, "hologram", shimmer=True)  # a v2 type from a future version
    h.session(MAIN, "Fix the checkout rounding")
    u = h.message(MAIN, "user", agent="build", model={"providerID": "p", "modelID": "m"})
    h.text(MAIN, u, "Why is the checkout total off by one cent?")
    a = h.message(MAIN, "assistant", parentID=u)
    h.text(MAIN, a, "Rounding per line loses a cent.")
    h.entry(MAIN, "user", text="Now round the total once")
    h.entry(MAIN, "assistant", agent="build", model=model, content=[
        {"type": "text", "id": "tx_3", "text": "Done: the total is rounded once."},
    ])  # fmt: skip
    return h


def write_database(path: Path, history: History) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name='session'").fetchone():
            conn.executescript(SCHEMA)
            conn.execute(
                "INSERT INTO project VALUES ('prj_shop', ?, 'git', 'shop', ?, ?)", (CWD, T0, T0)
            )
        sync_database(conn, history)
        conn.commit()
    finally:
        conn.close()


def sync_database(conn: sqlite3.Connection, history: History) -> None:
    """Insert or update every row, as OpenCode upserts a part while it streams."""
    for s in history.sessions:
        conn.execute(
            "INSERT OR REPLACE INTO session (id, project_id, parent_id, slug, directory, title,"
            " version, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                s["id"],
                s["projectID"],
                s["parentID"],
                s["id"][-6:],
                s["directory"],
                s["title"],
                s["version"],
                s["time"]["created"],
                s["time"]["updated"],
            ),
        )
        for m in history.messages[s["id"]]:
            data = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
            conn.execute(
                "INSERT OR REPLACE INTO message VALUES (?, ?, ?, ?, ?)",
                (
                    m["id"],
                    s["id"],
                    m["time"]["created"],
                    m["time"]["created"],
                    orjson.dumps(data).decode(),
                ),
            )
            for p in history.parts[m["id"]]:
                data = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
                conn.execute(
                    "INSERT OR REPLACE INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        p["id"],
                        m["id"],
                        s["id"],
                        m["time"]["created"],
                        m["time"]["created"],
                        orjson.dumps(data).decode(),
                    ),
                )
        if history.entries:
            conn.executescript(ENTRY_SCHEMA)
        for e in history.entries.get(s["id"], []):
            data = {k: v for k, v in e.items() if k not in ("id", "type", "seq")}
            conn.execute(
                "INSERT OR REPLACE INTO session_message VALUES (?, ?, ?, ?, ?, ?, ?)",
                (e["id"], s["id"], e["type"], e["seq"], e["time"]["created"],
                 e["time"]["created"], orjson.dumps(data).decode()),
            )  # fmt: skip


def write_tree(storage: Path, history: History) -> None:
    """The pre-SQLite layout: one JSON file per project, session, message and part."""
    (storage / "project").mkdir(parents=True, exist_ok=True)
    (storage / "project" / "prj_shop.json").write_bytes(
        orjson.dumps({"id": "prj_shop", "worktree": CWD, "vcs": "git"})
    )
    for s in history.sessions:
        folder = storage / "session" / s["projectID"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{s['id']}.json").write_bytes(orjson.dumps(s))
        for m in history.messages[s["id"]]:
            mdir = storage / "message" / s["id"]
            mdir.mkdir(parents=True, exist_ok=True)
            (mdir / f"{m['id']}.json").write_bytes(orjson.dumps(m))
            pdir = storage / "part" / m["id"]
            pdir.mkdir(parents=True, exist_ok=True)
            for p in history.parts[m["id"]]:
                (pdir / f"{p['id']}.json").write_bytes(orjson.dumps(p))


def empty_text_history() -> History:
    """A finished answer whose first text part stayed empty (seen in a real Kilo CLI
    database: the model went straight to its tool calls), then its text."""
    h = History()
    h.session(MAIN, "Empty text")
    u = h.message(MAIN, "user", agent="build")
    h.text(MAIN, u, "Set up the project")
    a = h.message(MAIN, "assistant", parentID=u)
    h.text(MAIN, a, "")
    h.tool(MAIN, a, "read", {"filePath": "/home/dev/shop/README.md"}, "# Shop")
    h.text(MAIN, a, "Read the README.")
    return h
