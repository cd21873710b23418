"""Codex shapes seen in real homes: web search items, archived threads, and the index
files beside the rollouts (generated here in the shapes Codex 0.116-0.121 writes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.importers._corpus import bodies
from worker.importers.builtin import CodexImporter
from worker.importers.pipeline import convert_file


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    return path


def _rollout(thread: str) -> list[dict[str, Any]]:
    return [
        {"timestamp": "2026-04-01T04:26:00Z", "type": "session_meta",
         "payload": {"id": thread, "cwd": "/w", "cli_version": "0.118.0"}},
        {"timestamp": "2026-04-01T04:26:01Z", "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "look it up"}]}},
    ]  # fmt: skip


def test_a_web_search_item_is_a_call_paired_with_its_result(tmp_path: Path) -> None:
    actions = [
        {"type": "search", "query": "rollout format"},
        {"type": "open_page", "url": "https://example.invalid/a"},
        {"type": "find_in_page", "url": "https://example.invalid/a", "pattern": "archive"},
    ]
    lines = _rollout("t-1") + [
        {"timestamp": "2026-04-01T04:26:02Z", "type": "response_item",
         "payload": {"type": "web_search_call", "status": "completed", "action": action}}
        for action in actions
    ]  # fmt: skip
    outs, tally = convert_file("codex", _write(tmp_path / "rollout-t-1.jsonl", lines))
    events = bodies(outs)
    calls = [e for e in events if e["type"] == "tool/call"]
    results = [e for e in events if e["type"] == "tool/result"]
    assert [c["payload"]["tool"] for c in calls] == ["web_search"] * 3
    assert [c["payload"]["arguments"] for c in calls] == actions
    assert [r["cites"] for r in results] == [[{"session_id": "t-1", "seq": c["seq"]}]
                                             for c in calls]  # fmt: skip
    assert all(r["payload"]["status"] == "completed" for r in results)
    assert not any("web_search" in key for key in tally.skipped)


def test_the_index_files_beside_the_rollouts_are_not_sources(tmp_path: Path) -> None:
    """``session_index.jsonl`` (thread names) and ``history.jsonl`` (typed prompts) sit in
    ``$CODEX_HOME``; pointing ``import`` there must not report them as unrecognised."""
    home = tmp_path / ".codex"
    live = _write(home / "sessions/2026/04/01/rollout-2026-04-01T04-26-00-t-1.jsonl",
                  _rollout("t-1"))  # fmt: skip
    archived = _write(home / "archived_sessions/rollout-2026-03-20T10-00-00-t-0.jsonl",
                      _rollout("t-0"))  # fmt: skip
    _write(
        home / "session_index.jsonl",
        [{"id": "t-1", "thread_name": "Look it up", "updated_at": "2026-04-01T04:27:00Z"}],
    )
    _write(home / "history.jsonl", [{"session_id": "t-1", "ts": 1775017560, "text": "look"}])
    assert CodexImporter().files(home) == [archived, live]


def test_archived_threads_are_a_default_location(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:  # fmt: skip
    """Codex moves an archived thread's rollout to ``$CODEX_HOME/archived_sessions``."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    assert tmp_path / "archived_sessions" in CodexImporter().default_locations()


def test_a_thread_is_titled_by_its_last_name_in_the_session_index(tmp_path: Path) -> None:
    """Codex names threads in ``$CODEX_HOME/session_index.jsonl`` (a rename appends a line):
    a live or archived rollout of a named thread is titled by its last name there."""
    home = tmp_path / ".codex"
    live = _write(home / "sessions/2026/04/01/rollout-2026-04-01T04-26-00-t-1.jsonl",
                  _rollout("t-1"))  # fmt: skip
    archived = _write(home / "archived_sessions/rollout-2026-03-20T10-00-00-t-0.jsonl",
                      _rollout("t-0"))  # fmt: skip
    unnamed = _write(home / "sessions/2026/04/02/rollout-2026-04-02T04-26-00-t-2.jsonl",
                     _rollout("t-2"))  # fmt: skip
    _write(home / "session_index.jsonl", [
        {"id": "t-1", "thread_name": "Look it up", "updated_at": "2026-04-01T04:27:00Z"},
        {"id": "t-0", "thread_name": "Old thread", "updated_at": "2026-03-20T10:05:00Z"},
        {"id": "t-1", "thread_name": "Look the format up", "updated_at": "2026-04-01T05:00:00Z"},
    ])  # fmt: skip

    def titles(path: Path) -> list[str]:
        events = bodies(convert_file("codex", path)[0])
        return [e["payload"]["title"] for e in events if e["type"] == "session/title"]

    assert titles(live) == ["Look the format up"]
    assert titles(archived) == ["Old thread"]
    assert titles(unnamed) == []
