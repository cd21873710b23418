"""Every record kind an agent's writer can write (``skips.WRITER_KINDS``, read in its
package at the version named there) is imported or skipped by design: none of what a real
home holds is reported as unknown, and none is silenced without a reason."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.importers import (
    gen_claude_code,
    gen_codex,
    gen_continue,
    gen_copilot_cli,
    gen_droid,
    gen_gemini_cli,
    gen_kimi,
    gen_openhands,
    gen_pi,
    gen_qwen_code,
    gen_swe_agent,
)
from worker.importers import cline_cli, opencode, openhands, registry
from worker.importers.base import SpawnLinks
from worker.importers.pipeline import convert_file
from worker.importers.skips import BUILT_IN, WRITER_KINDS, reason_for


@pytest.mark.parametrize("fmt", sorted(WRITER_KINDS))
def test_each_kind_the_writer_writes_is_imported_or_skipped_with_a_reason(fmt: str) -> None:
    kinds = WRITER_KINDS[fmt]
    assert kinds.imported, "the importer reads some of the writer's kinds"
    assert not kinds.imported & kinds.skipped
    reason = registry.get(fmt).skip_reason  # the built-in table, or the importer's own
    unexplained = sorted(k for k in kinds.skipped if reason(k) is None)
    assert unexplained == []


def test_claude_code_converts_every_kind_its_writer_writes(tmp_path: Path) -> None:
    path = gen_claude_code.write_every_writer_kind(tmp_path)
    written = {r["type"] for r in gen_claude_code.every_writer_kind()}
    kinds = WRITER_KINDS["claude-code"]
    assert written == kinds.imported | {k.removeprefix("record:") for k in kinds.skipped}

    events, tally = convert_file("claude-code", path, links=SpawnLinks())
    tally.explain(registry.get("claude-code").skip_reason)
    assert tally.unknown == Counter()
    for kind in kinds.skipped:  # each counted under the key its reason is for
        assert tally.skipped[kind] == 1, kind
    bodies = [orjson.loads(e.body) for e in events]
    by_type = Counter(b["type"] for b in bodies)
    assert by_type["tool/call"] == 2 and by_type["tool/result"] == 2
    assert by_type["session/title"] >= 1


def test_claude_code_imports_a_scripts_call_and_its_result_once(tmp_path: Path) -> None:
    path = gen_claude_code.write_every_writer_kind(tmp_path)
    events, tally = convert_file("claude-code", path, links=SpawnLinks())
    bodies = [orjson.loads(e.body) for e in events]
    inner = [b for b in bodies if b["payload"].get("tool_use_id") == gen_claude_code.INNER_CALL]
    call, result = inner
    assert call["type"] == "tool/call" and call["payload"]["tool"] == "Read"
    assert call["payload"]["ran_by_tool_use_id"] == gen_claude_code.SCRIPT_CALL
    assert result["type"] == "tool/result" and result["payload"]["output"] == "def total():"
    assert result["cites"] == [{"session_id": call["session_id"], "seq": call["seq"]}]
    assert tally.skipped["record:host-row:tool_use:repeated"] == 1
    assert tally.skipped["record:host-row:withheld"] == 1


def _kind_of(line: dict[str, Any]) -> str:
    """The skip key a Codex line would be counted by, were it skipped."""
    kind, payload = line["type"], line["payload"]
    if kind in ("response_item", "realtime_item"):
        return f"{kind}:{payload['type']}"
    return f"record:{kind}"


def test_codex_converts_every_kind_its_writer_writes(tmp_path: Path) -> None:
    path = gen_codex.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["codex"]
    written = {_kind_of(line) for line in gen_codex.every_writer_kind()}
    assert written == kinds.imported | kinds.skipped

    events, tally = convert_file("codex", path, links=SpawnLinks())
    tally.explain(registry.get("codex").skip_reason)
    assert tally.unknown == Counter()
    for kind in kinds.skipped - {"response_item:message", "response_item:reasoning"}:
        assert tally.skipped[kind] >= 1, kind
    bodies = [orjson.loads(e.body) for e in events]
    calls = {b["payload"].get("tool"): b for b in bodies if b["type"] == "tool/call"}
    assert {"tool_search", "web_search", "shell", "exec_command", "apply_patch"} <= set(calls)
    found = next(b for b in bodies if b["payload"].get("call_id") == gen_codex.SEARCH_CALL
                 and b["type"] == "tool/result")  # fmt: skip
    assert "exec_command" in found["payload"]["output"]
    assert found["cites"] == [{"session_id": calls["tool_search"]["session_id"],
                               "seq": calls["tool_search"]["seq"]}]  # fmt: skip
    spoken = [b for b in bodies if b["payload"].get("realtime")]
    assert [(b["type"], b["payload"]["text"]) for b in spoken] == [
        ("message/user", "Run the tests."), ("message/assistant", "Running.")]  # fmt: skip
    task = [b for b in bodies if "Run the tests." in str(b["payload"].get("text"))
            and b["payload"].get("author") == "/root"]  # fmt: skip
    assert [b["type"] for b in task] == ["message/user"]


def test_gemini_cli_converts_every_kind_its_writer_writes(tmp_path: Path) -> None:
    path = gen_gemini_cli.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["gemini-cli"]
    events, tally = convert_file("gemini-cli", path, links=SpawnLinks())
    tally.explain(registry.get("gemini-cli").skip_reason)
    assert tally.unknown == Counter()
    assert set(tally.skipped) == kinds.skipped
    bodies = [orjson.loads(e.body) for e in events]
    by_type = Counter(b["type"] for b in bodies)
    assert by_type["tool/call"] == 1 and by_type["tool/result"] == 1
    assert [b["payload"]["title"] for b in bodies if b["type"] == "session/title"] == [
        gen_gemini_cli.SUMMARY
    ]
    texts = [b["payload"].get("text") for b in bodies if b["type"].startswith("message/")]
    assert "Why is the pump loud? See the photo." in texts
    assert "Lower the pressure to 9 bar." in texts


def test_qwen_code_converts_every_kind_its_writer_writes(tmp_path: Path) -> None:
    path = gen_qwen_code.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["qwen-code"]
    records = gen_qwen_code.every_writer_kind().records
    written = {r["type"] if r["type"] != "system" else f"system:{r['subtype']}" for r in records}
    assert written == kinds.imported - {"system:parent_session"} | {
        k.removeprefix("record:") for k in kinds.skipped
    }
    events, tally = convert_file("qwen-code", path, links=SpawnLinks())
    tally.explain(registry.get("qwen-code").skip_reason)
    assert tally.unknown == Counter()
    assert set(tally.skipped) == kinds.skipped
    bodies = [orjson.loads(e.body) for e in events]
    texts = [b["payload"].get("text") for b in bodies]
    for said in ("also check the docs", "Keep going with the goal.", "Only the lint config.",
                 gen_qwen_code.BACKGROUND_DONE):  # fmt: skip
        assert said in texts, said
    assert Counter(b["type"] for b in bodies)["compaction"] == 1


@pytest.mark.parametrize("fmt", ["opencode", "kilo"])
def test_opencode_builds_every_part_its_writer_writes(fmt: str) -> None:
    kinds = WRITER_KINDS[fmt]
    stamp = {"created": 1796600000000, "completed": 1796600001000}
    base = {"sessionID": "ses_1", "messageID": "msg_2", "time": {"start": 1, "end": 2}}
    fields: dict[str, dict[str, Any]] = {
        "text": {"text": "The fix is in ledger.py."},
        "reasoning": {"text": "The total skips refunds."},
        "tool": {"callID": "call_1", "tool": "read",
                 "state": {"status": "completed", "input": {"filePath": "ledger.py"},
                           "output": "def total():", "title": "ledger.py"}},
        "step-start": {"snapshot": "4b825dc"}, "step-finish": {"reason": "stop", "cost": 0,
                                                             "tokens": {"input": 1, "output": 1}},
        "snapshot": {"snapshot": "4b825dc"}, "patch": {"hash": "4b825dc", "files": ["ledger.py"]},
        "file": {"mime": "text/plain", "url": "file:///ledger.py", "filename": "ledger.py"},
        "agent": {"name": "build"}, "subtask": {"prompt": "look", "description": "look",
                                                "agent": "general"},
        "retry": {"attempt": 1, "error": {"name": "APIError"}},
        "compaction": {"auto": True},
    }  # fmt: skip
    written = {f"part:{kind}" for kind in fields}
    part_kinds = {k for k in kinds.imported | kinds.skipped if k.startswith("part:")}
    assert written == part_kinds
    parts = [{"id": f"prt_{n}", "type": kind, **base, **extra}
             for n, (kind, extra) in enumerate(fields.items())]  # fmt: skip
    messages = [({"id": "msg_2", "role": "assistant", "time": stamp}, parts)]
    session = opencode.build({"id": "ses_1", "directory": "/home/dev/kiln"}, messages)
    skipped_parts = {k for k in kinds.skipped if k.startswith("part:")}
    assert Counter(session.skipped) == Counter(dict.fromkeys(skipped_parts, 1))
    assert all(reason_for(k, BUILT_IN[fmt]) for k in session.skipped)
    types = Counter(item.type for item in session.items)
    assert types == Counter({"message/assistant": 2, "tool/call": 1, "tool/result": 1})


@pytest.mark.parametrize("fmt", ["opencode", "kilo"])
def test_opencode_builds_every_v2_message_type_its_writer_writes(fmt: str) -> None:
    """The ``Session.Message`` union (``session_message`` rows) of the same binaries."""
    kinds = WRITER_KINDS[fmt]
    v2 = {k for k in kinds.imported | kinds.skipped if k.startswith("session_message:")}
    stamp = {"created": 1796600000000, "completed": 1796600001000}
    fields: dict[str, dict[str, Any]] = {
        "user": {"text": "Split invoice.py"},
        "synthetic": {"sessionID": "ses_1", "text": "invoice.py was attached"},
        "system": {"text": "Use ruff"},
        "shell": {"callID": "call_sh", "command": "ls", "output": "invoice.py"},
        "assistant": {"agent": "build", "model": {"id": "m", "providerID": "p"},
                      "content": [{"type": "text", "id": "t1", "text": "Done."}]},
        "compaction": {"reason": "auto", "summary": "Split so far", "recent": ""},
        "agent-switched": {"agent": "plan"},
        "model-switched": {"model": {"id": "m", "providerID": "p"}},
    }  # fmt: skip
    assert {f"session_message:{kind}" for kind in fields} == v2
    entries = [{"id": f"msg_{n}", "type": kind, "time": stamp, **extra}
               for n, (kind, extra) in enumerate(fields.items())]  # fmt: skip
    info = {"id": "ses_1", "directory": "/home/dev/kiln"}
    session = opencode.build(info, [], entries=entries)
    skipped = {k for k in kinds.skipped if k.startswith("session_message:")}
    assert Counter(session.skipped) == Counter(dict.fromkeys(skipped, 1))
    assert all(reason_for(k, BUILT_IN[fmt]) for k in session.skipped)
    types = Counter(item.type for item in session.items)
    assert types == Counter({"message/user": 1, "message/context": 2, "tool/call": 1,
                             "tool/result": 1, "message/assistant": 1,
                             "compaction": 1})  # fmt: skip


def test_copilot_cli_converts_every_event_its_writer_persists(tmp_path: Path) -> None:
    path = gen_copilot_cli.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["copilot-cli"]
    written = {f"record:{e['type']}" for e in gen_copilot_cli.every_writer_kind().events}
    assert written == kinds.imported | kinds.skipped
    events, tally = convert_file("copilot-cli", path, links=SpawnLinks())
    tally.explain(registry.get("copilot-cli").skip_reason)
    assert tally.unknown == Counter()
    assert kinds.skipped - {"record:subagent.started"} <= set(tally.skipped)
    bodies = [orjson.loads(e.body) for e in events]
    texts = [str(b["payload"].get("text")) for b in bodies]
    assert f"task complete: {gen_copilot_cli.TASK_SUMMARY}" in texts
    assert any(gen_copilot_cli.HANDOFF_CONTEXT in text for text in texts)
    children = {b["session_id"] for b in bodies if b["payload"].get("parent_session_id")}
    assert len(children) == 2


def test_pi_converts_every_entry_its_writer_writes(tmp_path: Path) -> None:
    path = gen_pi.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["pi"]
    entries = gen_pi.every_writer_kind()
    written = {f"record:{e['type']}" for e in entries} | {
        f"message:{e['message']['role']}" for e in entries if e["type"] == "message"
    }
    assert written | {"record:session_info:cleared"} == kinds.imported | kinds.skipped
    events, tally = convert_file("pi", path, links=SpawnLinks())
    tally.explain(registry.get("pi").skip_reason)
    assert tally.unknown == Counter()
    assert set(tally.skipped) == kinds.skipped
    bodies = [orjson.loads(e.body) for e in events]
    assert [b["payload"]["title"] for b in bodies if b["type"] == "session/title"] == [gen_pi.TITLE]


def test_kimi_converts_every_wire_message_its_writer_writes(tmp_path: Path) -> None:
    path = gen_kimi.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["kimi"]
    assert {f"record:{kind}" for kind, _ in gen_kimi.every_writer_kind()} == (
        kinds.imported | kinds.skipped
    )
    events, tally = convert_file("kimi", path, links=SpawnLinks())
    tally.explain(registry.get("kimi").skip_reason)
    assert tally.unknown == Counter()
    # A sub-agent's events copied into its parent's log are counted by their own type.
    assert kinds.skipped - {"record:SubagentEvent"} <= set(tally.skipped)
    assert any(k.startswith("record:SubagentEvent") for k in tally.skipped)
    bodies = [orjson.loads(e.body) for e in events]
    by_type = Counter(b["type"] for b in bodies)
    assert by_type["tool/call"] == 1 and by_type["tool/result"] == 1
    assert by_type["message/user"] == 2 and by_type["compaction"] == 1


def test_droid_converts_every_record_and_block_its_writer_writes(tmp_path: Path) -> None:
    path = gen_droid.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["droid"]
    events, tally = convert_file("droid", path, links=SpawnLinks())
    tally.explain(registry.get("droid").skip_reason)
    assert tally.unknown == Counter()
    assert set(tally.skipped) == kinds.skipped
    bodies = [orjson.loads(e.body) for e in events]
    texts = [str(b["payload"].get("text")) for b in bodies]
    assert f"[baskets.txt]\n{gen_droid.DOCUMENT}" in texts
    by_type = Counter(b["type"] for b in bodies)
    assert by_type["tool/call"] == 1 and by_type["tool/result"] == 1
    assert by_type["compaction"] == 1


def test_continue_converts_every_role_and_part_its_writer_saves(tmp_path: Path) -> None:
    path = gen_continue.write_every_writer_kind(tmp_path)
    kinds = WRITER_KINDS["continue"]
    events, tally = convert_file("continue", path, links=SpawnLinks())
    tally.explain(registry.get("continue").skip_reason)
    assert tally.unknown == Counter()
    assert set(tally.skipped) == kinds.skipped
    bodies = [orjson.loads(e.body) for e in events]
    results = [b for b in bodies if b["type"] == "tool/result"]
    assert len(results) == 2  # the state's, and the tool message of a call without one
    assert any(b["type"] == "message/context" for b in bodies)


def test_openhands_reads_every_event_its_sdk_persists(tmp_path: Path) -> None:
    folder = gen_openhands.write_sdk(tmp_path, gen_openhands.every_writer_kind())
    kinds = WRITER_KINDS["openhands"]
    snapshot = openhands.read_conversation(folder)
    (session,) = snapshot.sessions
    assert set(session.skipped) == kinds.skipped
    reason = registry.get("openhands").skip_reason
    assert all(reason(k) for k in session.skipped)
    types = Counter(item.type for item in session.items)
    assert types["tool/call"] == 4 and types["tool/result"] == 4
    result = next(i for i in session.items if i.result_of == gen_openhands.ACP_CALL)
    assert result.payload["output"] == gen_openhands.ACP_OUTPUT
    assert any("rate limited" in str(i.payload.get("text")) for i in session.items)


def test_cline_cli_reads_every_block_its_writer_writes(tmp_path: Path) -> None:
    kinds = WRITER_KINDS["cline-cli"]
    session = "sess_every_kind"
    folder = tmp_path / session
    folder.mkdir()
    manifest = {
        "session_id": session,
        "cwd": "/home/dev/kiln",
        "status": "completed",
        "started_at": "2026-12-07T10:00:00.000Z",
        "metadata": {"title": "Kiln"},
    }
    blocks: dict[str, dict[str, Any]] = {
        "text": {"text": '<user_input mode="act">Why is the kiln cold?</user_input>'},
        "file": {"path": "kiln.toml", "content": "target = 1200"},
        "image": {"data": "iVBORw0KGgo=", "mediaType": "image/png"},
        "thinking": {"thinking": "The target looks right.", "signature": "s"},
        "reasoning": {"text": "Check the relay."},
        "redacted_thinking": {"data": "EncRypTed"},
        "tool_use": {"id": "tu_1", "name": "read_files", "input": {"paths": ["relay.py"]}},
        "tool_result": {"tool_use_id": "tu_1", "content": "relay = None"},
        "media": {"media": {"kind": "image", "url": "file:///chart.png"}},
    }  # fmt: skip
    assert {f"block:{k}" for k in blocks} == kinds.imported | kinds.skipped
    user = {
        "id": "m1",
        "role": "user",
        "ts": 1,
        "content": [{"type": k, **blocks[k]} for k in ("text", "file", "image", "tool_result")],
    }
    agent = {"id": "m2", "role": "assistant", "ts": 2, "content": [
        {"type": k, **blocks[k]} for k in ("thinking", "reasoning", "redacted_thinking",
                                           "tool_use", "media")]}  # fmt: skip
    lead = {"agent": "lead", "sessionId": session, "origin": {"version": "3.0.65"},
            "messages": [user, agent]}  # fmt: skip
    (folder / f"{session}.json").write_bytes(orjson.dumps(manifest))
    (folder / f"{session}.messages.json").write_bytes(orjson.dumps(lead))
    (read,) = cline_cli.read_session(folder).sessions
    reason = registry.get("cline-cli").skip_reason
    assert set(read.skipped) == kinds.skipped and all(reason(k) for k in read.skipped)
    texts = [str(item.payload.get("text")) for item in read.items]
    assert "[kiln.toml]\ntarget = 1200" in texts
    assert Counter(item.type for item in read.items)["message/assistant"] == 2


def test_swe_agent_converts_every_kind_its_writer_writes(tmp_path: Path) -> None:
    """The generated runs hold every kind sweagent 1.1.0 writes: each skipped one counted
    under its own key, nothing unknown."""
    root = gen_swe_agent.write(tmp_path)
    kinds = WRITER_KINDS["swe-agent"]
    skipped: Counter[str] = Counter()
    for path in sorted(registry.get("swe-agent").files(root)):
        _, tally = convert_file("swe-agent", path, links=SpawnLinks())
        tally.explain(registry.get("swe-agent").skip_reason)
        assert tally.unknown == Counter(), path
        skipped.update(tally.skipped)
    assert set(skipped) == kinds.skipped
