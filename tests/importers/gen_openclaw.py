"""Generated OpenClaw histories, made-up content, in the shapes the ``openclaw`` package
2026.9.6 writes: an agent's ``openclaw-agent.sqlite`` (``transcript_events`` rows holding
Pi's entries with a version 4 header, a zstd-compressed row, ``session_windows`` and
``session_nodes``) with a sub-agent spawned by ``sessions_spawn``, a tool error, a
compaction, a ``leaf`` control entry that rewinds (a fork) and a ``reset``; and the older
per-agent transcripts (``sessions/<id>.jsonl`` with ``sessions.json``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Final

import orjson

from tests.importers.gen_pi import _assistant, _entry, _user, lines

CWD: Final = "/home/dev/garden"
MAIN: Final = "0c000000-0000-4000-8000-00000000a001"
SUB: Final = "0c000000-0000-4000-8000-00000000b002"
LEGACY: Final = "0c000000-0000-4000-8000-00000000c003"
LEGACY_SUB: Final = "0c000000-0000-4000-8000-00000000d004"
MAIN_KEY: Final = "agent:main:main"
SUB_KEY: Final = "agent:main:subagent:5f0e"
TITLE: Final = "Garden schedule"
SUB_TITLE: Final = "moisture check"
LEGACY_TITLE: Final = "Old garden notes"
T0: Final = 1_785_000_000_000  # milliseconds, as the store keeps them

SCHEMA: Final = """
CREATE TABLE session_nodes (session_key TEXT NOT NULL PRIMARY KEY,
  current_session_id TEXT NOT NULL, entry_json TEXT NOT NULL, legacy_acp_migration_json TEXT,
  entry_valid INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL, status TEXT,
  created_at INTEGER, created_via TEXT, created_actor_type TEXT, created_actor_id TEXT,
  owner_actor_type TEXT, owner_actor_id TEXT, owner_assigned_by_type TEXT,
  owner_assigned_by_id TEXT, owner_assigned_at INTEGER, project_id TEXT,
  parent_session_key TEXT, spawned_by TEXT, fork_source_session_key TEXT,
  fork_source_session_id TEXT, fork_source_entry_id TEXT, label TEXT, display_name TEXT,
  category TEXT, icon TEXT, pinned_at INTEGER, archived_at INTEGER, last_read_at INTEGER,
  last_interaction_at INTEGER, last_activity_at INTEGER) STRICT;
CREATE TABLE session_windows (session_id TEXT NOT NULL PRIMARY KEY,
  session_key TEXT NOT NULL, previous_session_id TEXT, reason TEXT,
  session_scope TEXT NOT NULL DEFAULT 'conversation', created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, transcript_updated_at INTEGER DEFAULT NULL,
  transcript_observed_at INTEGER DEFAULT NULL,
  session_entry_provenance INTEGER NOT NULL DEFAULT 0, acp_owned INTEGER NOT NULL DEFAULT 0,
  plugin_owner_id TEXT, hook_external_content_source TEXT, started_at INTEGER,
  ended_at INTEGER, status TEXT, chat_type TEXT, channel TEXT, account_id TEXT,
  primary_conversation_id TEXT, model_provider TEXT, model TEXT, agent_harness_id TEXT,
  parent_session_key TEXT, spawned_by TEXT, display_name TEXT) STRICT;
CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
  event_json TEXT, created_at INTEGER NOT NULL, event_zstd BLOB,
  event_utf8_bytes INTEGER, navigation_json TEXT, PRIMARY KEY (session_id, seq)) STRICT;
"""


def _header(session: str, version: int = 4) -> dict[str, Any]:
    return {"type": "session", "version": version, "id": session,
            "timestamp": "2025-08-01T07:00:00.000Z", "cwd": CWD}  # fmt: skip


def _result(n: int, parent: int, call: str, tool: str, text: str, *, error: bool = False,
            details: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    message = {"role": "toolResult", "toolCallId": call, "toolName": tool, "isError": error,
               "content": [{"type": "text", "text": text}], "timestamp": 3,
               **({"details": details} if details else {})}  # fmt: skip
    return _entry(n, parent, "message", message=message)


def _call(call: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolCall", "id": call, "name": name, "arguments": arguments}


# A row too large to store plain: OpenClaw compresses it with zstd (the zstd extra here).
COMPRESSED: Final = object()
COMPRESSED_TEXT: Final = "Moisture by bed: " + "bed four holds 41 percent, " * 50


def compressed_entry() -> dict[str, Any]:
    return _entry(23, 22, "message", message=_assistant({"type": "text", "text": COMPRESSED_TEXT}))


# OpenClaw's tool search (on by default in 2026.9.6) offers ``sessions_spawn`` among its
# deferred tools: the model runs it through ``tool_call``, and OpenClaw writes the nested
# run as a ``custom`` message of its own (its input and result) before the outer result.
NESTED_TOOL: Final = "openclaw.nested-tool.v1"


def _nested(n: int, parent: int, call: str, spawned: dict[str, Any]) -> dict[str, Any]:
    details = {
        "runId": "run-7",
        "scopeId": "scope-1",
        "afterEntryId": f"e{parent:02d}",
        "startOrder": 0,
        "parentToolCallId": call,
        "toolCallId": f"tool_search_code:{call}:sessions_spawn:1",
        "toolName": "sessions_spawn",
        "input": {"task": "Read the soil moisture log"},
        "result": {
            "content": [{"type": "text", "text": orjson.dumps(spawned).decode()}],
            "details": spawned,
        },
        "isError": False,
        "startedAt": 2,
        "timestamp": 3,
    }
    message = {
        "role": "custom",
        "customType": NESTED_TOOL,
        "display": True,
        "excludeFromContext": True,
        "content": "",
        "details": details,
        "timestamp": 2,
        "idempotencyKey": f"scope-1:tool_search_code:{call}:sessions_spawn:1",
    }
    return _entry(n, parent, "message", message=message)


def rows(*, search: bool = False) -> list[tuple[str, object]]:
    """The store's transcript rows in the order OpenClaw writes them: the sub-agent's
    transcript begins while the parent's ``sessions_spawn`` call runs (``search``: run
    through tool search's ``tool_call``, its nested run recorded before the result, and the
    sub-agent's transcript begun after it, as a Gateway run of 2026.9.6 writes them)."""
    spawned = {"status": "accepted", "childSessionKey": SUB_KEY, "runId": "run-7"}
    spawn_args = {"task": "Read the soil moisture log", "label": SUB_TITLE}
    spawn = (_call("tc-3", "tool_call", {"id": "sessions_spawn", "args": spawn_args}) if search
             else _call("tc-3", "sessions_spawn", spawn_args))  # fmt: skip
    outer = {"tool": {"id": "openclaw:core:sessions_spawn", "name": "sessions_spawn"},
             "result": {"details": spawned}}  # fmt: skip
    result = (_result(8, 11, "tc-3", "tool_call", orjson.dumps(outer).decode(), details=outer)
              if search else _result(8, 7, "tc-3", "sessions_spawn",
                                     orjson.dumps(spawned).decode(), details=spawned))  # fmt: skip
    nested = [(MAIN, _nested(11, 7, "tc-3", spawned))] if search else []
    child: list[tuple[str, object]] = [
        (SUB, _header(SUB)),
        (SUB, _entry(21, None, "message", message=_user("Read the soil moisture log"))),
        (SUB, _entry(22, 21, "message", message=_assistant(
            {"type": "text", "text": "Soil moisture holds at 41 percent."}))),
        (SUB, COMPRESSED),
    ]  # fmt: skip
    return [
        (MAIN, _header(MAIN)),
        (MAIN, _entry(1, None, "model_change", provider="openai", modelId="gpt-5")),
        (MAIN, _entry(2, 1, "message", message=_user("should the tomatoes get less water?"))),
        (MAIN, _entry(3, 2, "message", message=_assistant(
            {"type": "thinking", "thinking": "Check the watering schedule first."},
            {"type": "text", "text": "Reading the schedule."},
            _call("tc-1", "read", {"path": "schedule.yaml"})))),
        (MAIN, _result(4, 3, "tc-1", "read", "tomatoes: daily")),
        (MAIN, _entry(5, 4, "message", message=_assistant(
            _call("tc-2", "exec", {"command": "garden-cli status"})))),
        (MAIN, _result(6, 5, "tc-2", "exec", "garden-cli: command not found", error=True)),
        (MAIN, _entry(7, 6, "message", message=_assistant(spawn))),
        *([] if search else child),
        *nested,
        (MAIN, result),
        *(child if search else []),
        (MAIN, _entry(9, 8, "message", message=_assistant(
            {"type": "text", "text": "The soil stays moist: water every other day."}))),
        (MAIN, _entry(10, 9, "compaction", summary="Tomatoes: water every other day.",
                      firstKeptEntryId="e09", tokensBefore=51_000)),
        # A rewind to e02: the leaf names it; the next entry is written after the tail.
        (MAIN, {"type": "leaf", "id": "f001", "parentId": "e10", "targetId": "e02",
                "appendParentId": "e10", "timestamp": "2025-08-01T07:11:00.000Z"}),
        (MAIN, _entry(12, 10, "message", message=_user("plan the fertiliser instead"))),
        (MAIN, _entry(13, 12, "message", message=_assistant(
            {"type": "text", "text": "Fertilise every two weeks."}))),
        (MAIN, _entry(14, 13, "reset", reason="new")),
    ]  # fmt: skip


def write_store(path: Path, *, upto: int | None = None, search: bool = False) -> Path:
    """The store with its first ``upto`` transcript rows (all by default); written again
    with a larger ``upto``, it gains the rows after, as OpenClaw appends them. ``search``:
    the sub-agent spawned through tool search (``rows``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name='session_nodes'").fetchone():
            conn.executescript(SCHEMA)
            for sid, key, spawned_by, name, at in (
                (MAIN, MAIN_KEY, None, "Tomato watering", T0),
                (SUB, SUB_KEY, MAIN_KEY, SUB_TITLE, T0 + 60_000),
            ):
                conn.execute(
                    "INSERT INTO session_windows (session_id, session_key, reason, created_at,"
                    " updated_at, started_at, spawned_by, display_name)"
                    " VALUES (?, ?, 'initial', ?, ?, ?, ?, ?)",
                    (sid, key, at, at, at, spawned_by, name),
                )  # fmt: skip
                conn.execute(
                    "INSERT INTO session_nodes (session_key, current_session_id, entry_json,"
                    " updated_at, spawned_by, label, display_name) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, sid, "{}", at, spawned_by, TITLE if sid == MAIN else None, name),
                )  # fmt: skip
        have = conn.execute("SELECT COUNT(*) FROM transcript_events").fetchone()[0]
        for index, (sid, entry) in enumerate(rows(search=search)[have:upto], start=have):
            seq = index + 1
            if entry is COMPRESSED:
                conn.execute(
                    "INSERT INTO transcript_events (session_id, seq, created_at, event_zstd,"
                    " event_utf8_bytes, navigation_json) VALUES (?, ?, ?, ?, ?, ?)",
                    (sid, seq, T0 + seq, _zstd(orjson.dumps(compressed_entry())), 4096, "{}"),
                )  # fmt: skip
                continue
            conn.execute(
                "INSERT INTO transcript_events (session_id, seq, event_json, created_at)"
                " VALUES (?, ?, ?, ?)", (sid, seq, orjson.dumps(entry).decode(), T0 + seq),
            )  # fmt: skip
        conn.commit()
    finally:
        conn.close()
    return path


def write_legacy(sessions: Path) -> Path:
    """The older layout: ``sessions/<id>.jsonl`` beside ``sessions.json`` (session key ->
    entry), a sub-agent named by ``spawnedBy``, and a compaction checkpoint copy that is
    not a session."""
    sessions.mkdir(parents=True, exist_ok=True)
    store = {
        MAIN_KEY: {"sessionId": LEGACY, "updatedAt": T0, "label": LEGACY_TITLE},
        "agent:main:subagent:77": {"sessionId": LEGACY_SUB, "updatedAt": T0,
                                   "spawnedBy": MAIN_KEY},
    }  # fmt: skip
    (sessions / "sessions.json").write_bytes(orjson.dumps(store))
    main = [_header(LEGACY, 3), _entry(31, None, "message", message=_user("prune the roses?")),
            _entry(32, 31, "message", message=_assistant(
                {"type": "text", "text": "Prune roses in late winter."}))]  # fmt: skip
    sub = [_header(LEGACY_SUB, 3), _entry(41, None, "message", message=_user("rose varieties")),
           _entry(42, 41, "message", message=_assistant(
               {"type": "text", "text": "Hybrid teas need the hardest pruning."}))]  # fmt: skip
    (sessions / f"{LEGACY}.jsonl").write_bytes(lines(main))
    (sessions / f"{LEGACY_SUB}.jsonl").write_bytes(lines(sub))
    checkpoint = f"{LEGACY}.checkpoint.0c000000-0000-4000-8000-00000000e005.jsonl"
    (sessions / checkpoint).write_bytes(lines(main))
    return sessions


def write(home: Path) -> Path:
    """``~/.openclaw/agents`` under ``home`` with both layouts; returns that folder."""
    agents = home / ".openclaw" / "agents"
    write_store(agents / "main" / "agent" / "openclaw-agent.sqlite")
    write_legacy(agents / "main" / "sessions")
    return agents


def _zstd(data: bytes) -> bytes:
    import zstandard  # the test extra: OpenClaw's Node writes these frames

    return bytes(zstandard.ZstdCompressor().compress(data))


# Seen in a real home (transcript version 3): OpenClaw truncated the transcript back after
# each heartbeat turn that answered HEARTBEAT_OK, so the next entries hang from entries
# the file no longer holds.
HEARTBEAT: Final = "0c000000-0000-4000-8000-00000000f006"


def write_pruned_heartbeats(sessions: Path) -> Path:
    """A transcript whose heartbeat entries hang from pruned ones; returns its file."""
    sessions.mkdir(parents=True, exist_ok=True)
    poll = _user("[OpenClaw heartbeat poll]")
    entries = [
        _header(HEARTBEAT, 3),
        _entry(51, None, "message", message=_user("water the basil today?")),
        _entry(52, 51, "message", message=_assistant({"type": "text", "text": "Yes, lightly."})),
        _entry(55, 54, "message", message=poll),  # e54: a pruned heartbeat's answer
        _entry(57, 56, "message", message=_assistant({"type": "text", "text": "HEARTBEAT_OK"})),
    ]
    path = sessions / f"{HEARTBEAT}.jsonl"
    path.write_bytes(lines(entries))
    return path


# OpenClaw's session guard drops a call naming a tool the session does not have before it
# writes the assistant message (and drops the message when nothing is left), while the
# loop's "not found" result for it is written: seen in real transcripts of a local model.
DROPPED: Final = "0c000000-0000-4000-8000-00000000f007"
DROPPED_CALLS: Final = ("ollama_call_0c0e1", "ollama_call_0c0e2")


def write_dropped_calls(sessions: Path) -> Path:
    """A transcript in that shape: a prompt, two results of unwritten calls, the answer."""
    sessions.mkdir(parents=True, exist_ok=True)
    entries = [
        _header(DROPPED, 3),
        _entry(61, None, "message", message=_user("frost tonight? cover the seedlings?")),
        _result(62, 61, DROPPED_CALLS[0], "weather:forecast",
                "Tool weather:forecast not found", error=True),
        _result(63, 62, DROPPED_CALLS[1], "calendar:events",
                "Tool calendar:events not found", error=True),
        _entry(64, 63, "message", message=_assistant(
            {"type": "text", "text": "Cover them if it drops below 2 degrees."})),
    ]  # fmt: skip
    path = sessions / f"{DROPPED}.jsonl"
    path.write_bytes(lines(entries))
    return path
