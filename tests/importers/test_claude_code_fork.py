"""A forked sub-agent (Claude Code 2.1.20x, ``Agent`` with ``subagent_type: fork``), in the
shape its transcript has in real homes: ``fork-context-ref`` first (the parent's history it
inherits), then copies of the parent's spawning call and of its "Fork started" result, then
the fork's own directive and work. Generated here; no real transcript is kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.importers._corpus import bodies
from worker.importers import registry
from worker.importers.base import SpawnLinks
from worker.importers.pipeline import convert_file

SESSION = "11111111-2222-3333-4444-555555555555"
AGENT = "a0123456789abcdef"
CALL = "toolu_fork_1"
BASE = {"userType": "external", "entrypoint": "cli", "cwd": "/w", "sessionId": SESSION,
        "version": "2.1.204", "gitBranch": "HEAD"}  # fmt: skip
SPAWN = {"model": "m", "id": "msg_1", "type": "message", "role": "assistant", "content": [
    {"type": "tool_use", "id": CALL, "name": "Agent", "input": {
        "subagent_type": "fork", "description": "Check the parts",
        "prompt": "check the pairs"}}]}  # fmt: skip
STARTED = {"type": "tool_result", "tool_use_id": CALL, "content": [
    {"type": "text", "text": "Fork started — processing in background"}]}  # fmt: skip


def _lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _home(tmp_path: Path, result: dict[str, Any] | None) -> tuple[Path, Path]:
    main: list[dict[str, Any]] = [
        {"parentUuid": None, "isSidechain": False, "type": "user", "uuid": "u1",
         "message": {"role": "user", "content": "check the parts"},
         "timestamp": "2026-07-08T06:58:00.000Z", **BASE},
        {"parentUuid": "u1", "isSidechain": False, "type": "assistant", "uuid": "a1",
         "message": SPAWN, "timestamp": "2026-07-08T06:58:45.167Z", **BASE},
    ]  # fmt: skip
    if result is not None:
        main.append({"parentUuid": "a1", "isSidechain": False, "type": "user", "uuid": "u2",
                     "message": {"role": "user", "content": [STARTED]}, **result,
                     "timestamp": "2026-07-08T06:58:45.170Z", **BASE})  # fmt: skip
    fork: list[dict[str, Any]] = [
        {"type": "fork-context-ref", "agentId": AGENT, "parentSessionId": SESSION,
         "parentLastUuid": "a1", "contextLength": 2},
        {"parentUuid": None, "isSidechain": True, "agentId": AGENT, "type": "assistant",
         "uuid": "f1", "message": SPAWN, "timestamp": "2026-07-08T06:58:45.167Z", **BASE},
        {"parentUuid": "f1", "isSidechain": True, "agentId": AGENT, "type": "user", "uuid": "f2",
         "message": {"role": "user", "content": [STARTED, {"type": "text", "text":
             "<fork-boilerplate>\nYou are a worker fork.\n</fork-boilerplate>\n\n"
             "Your directive: check the pairs"}]},
         "timestamp": "2026-07-08T06:58:45.171Z", **BASE},
        {"parentUuid": "f2", "isSidechain": True, "agentId": AGENT, "type": "assistant",
         "uuid": "f3", "attributionAgent": "fork", "timestamp": "2026-07-08T06:59:00.000Z",
         "message": {"model": "m", "id": "msg_2", "type": "message", "role": "assistant",
                     "content": [{"type": "text", "text": "All parts are present."}]}, **BASE},
    ]  # fmt: skip
    project = tmp_path / "projects" / "-w"
    sub = project / SESSION / "subagents"
    (sub).mkdir(parents=True)
    (sub / f"agent-{AGENT}.meta.json").write_bytes(orjson.dumps(
        {"agentType": "fork", "isFork": True, "description": "Check the parts",
         "toolUseId": CALL, "spawnDepth": 1}))  # fmt: skip
    return _lines(project / f"{SESSION}.jsonl", main), _lines(sub / f"agent-{AGENT}.jsonl", fork)


@pytest.mark.parametrize(
    "result",
    [None, {"toolUseResult": {"status": "fork_started", "agentId": AGENT}}],
    ids=["parent-result-not-written", "parent-result-names-the-fork"],
)
def test_a_fork_cites_its_call_once_and_its_inherited_head_is_not_its_own(
    tmp_path: Path, result: dict[str, Any] | None
) -> None:
    main, fork = _home(tmp_path, result)
    links: SpawnLinks = {}
    parent = bodies(convert_file("claude-code", main, links=links)[0])
    events, tally = convert_file("claude-code", fork, links=links)
    child = bodies(events)
    call = next(e for e in parent if e["type"] == "tool/call")
    assert child[0]["type"] == "session/start"
    assert child[0]["cites"] == [{"session_id": SESSION, "seq": call["seq"]}]
    # The parent's call and its "Fork started" answer, copied in as the fork's context, are
    # the parent's: the fork holds its directive and its own work.
    assert [e["type"] for e in child[1:]] == ["session/title", "message/user", "message/assistant"]
    importer = registry.get("claude-code")
    unknown = [key for key in tally.skipped if importer.skip_reason(key) is None]
    assert unknown == []
