"""A generated Codex rollout holding one line of each kind Codex 0.171.0's writer can
write (its RolloutItem, ResponseItem and RealtimeItemContent variants: skips.WRITER_KINDS),
in the shapes it writes them, made-up content."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

SESSION: Final = "01a25101-0000-7000-8000-00000000c0de"
SEARCH_CALL: Final = "call_tool_search_1"


def every_writer_kind() -> list[dict[str, Any]]:
    def line(n: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": f"2026-12-07T10:00:{n:02d}.000Z", "ordinal": n, "type": kind,
                "payload": payload}  # fmt: skip

    def item(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, **fields}

    def spoken(kind: str, **fields: Any) -> dict[str, Any]:
        return {"id": f"rt_{kind}", "realtime_session_id": "rts_1", "type": kind, **fields}

    text = [{"type": "input_text", "text": "Find the failing test."}]
    payloads: list[tuple[str, dict[str, Any]]] = [
        ("session_meta", {"id": SESSION, "timestamp": "2026-12-07T10:00:00.000Z",
                          "cwd": "/home/dev/kiln", "originator": "codex_exec",
                          "cli_version": "0.171.0", "source": "exec"}),
        ("turn_context", {"turn_id": "t1", "cwd": "/home/dev/kiln", "model": "gpt-x"}),
        ("world_state", {"full": True, "state": {}}),
        ("dynamic_tools_updated", {"tools": []}),
        ("response_item", item("message", role="developer", content=text)),
        ("response_item", item("message", role="user", content=text)),
        ("response_item", item("reasoning", summary=[{"type": "summary_text",
                                                      "text": "Look at the tests."}],
                               encrypted_content="gAAAA")),
        ("response_item", item("reasoning", summary=[], encrypted_content="gAAAA")),
        ("response_item", item("additional_tools", id="at_1", tools=[], namespace=None)),
        ("response_item", item("tool_search_call", id="tsc_1", call_id=SEARCH_CALL,
                               status="completed", execution="client",
                               arguments={"query": "pytest"})),
        ("response_item", item("tool_search_output", id="tso_1", call_id=SEARCH_CALL,
                               status="completed", execution="client",
                               tools=[{"name": "exec_command"}])),
        ("response_item", item("web_search_call", id="ws_1", status="completed",
                               action={"type": "search", "query": "pytest fixtures"})),
        ("response_item", item("local_shell_call", call_id="call_sh", status="completed",
                               action={"type": "exec", "command": ["pytest"]})),
        ("response_item", item("function_call", name="exec_command", call_id="call_fc",
                               arguments='{"cmd": "pytest"}')),
        ("response_item", item("function_call_output", call_id="call_fc",
                               output="Process exited with code 1\\n1 failed")),
        ("response_item", item("custom_tool_call", call_id="call_ct", name="apply_patch",
                               input="*** Begin Patch")),
        ("response_item", item("custom_tool_call_output", call_id="call_ct", output="Done")),
        ("response_item", item("image_generation_call", id="ig_1", status="completed",
                               revised_prompt="a chart", result="iVBORw0KGgo=")),
        ("response_item", item("agent_message", author="/root/worker", recipient="/root",
                               content=[{"type": "input_text", "text": "Tests pass now."}])),
        ("response_item", item("message", role="assistant",
                               content=[{"type": "output_text", "text": "Fixed."}])),
        ("response_item", item("ghost_snapshot", ghost_commit={"id": "abc"})),
        ("response_item", item("compaction", id="cmp_1", encrypted_content="gAAAA")),
        ("response_item", item("context_compaction", id="cmp_2", encrypted_content="gAAAA")),
        ("response_item", item("compaction_trigger")),
        ("response_item", item("configuration_update", reasoning={"effort": "high"})),
        ("response_item", item("other")),
        ("inter_agent_communication", {"author": "/root", "recipient": "/root/worker",
                                       "other_recipients": [], "trigger_turn": True,
                                       "content": "Message Type: NEW_TASK\nRun the tests."}),
        ("inter_agent_communication_metadata", {"trigger_turn": True}),
        ("realtime_item", spoken("realtime_session_started")),
        ("realtime_item", spoken("transcript_segment", role="user", text="Run the tests.")),
        ("realtime_item", spoken("transcript_segment", role="assistant", text="Running.")),
        ("realtime_item", spoken("frame", frame={"mime": "image/png"})),
        ("realtime_item", spoken("bem_item_promoted", turn_id="t1", item_id="msg_1",
                                 presentation={"type": "whole_item"})),
        ("realtime_item", spoken("turn_input_accepted", turn_id="t1", input_item_id="msg_1",
                                 observed_at_ms=1, text="Run the tests.", started=True,
                                 ended=True)),
        ("realtime_item", spoken("session_end_input_saved", turn_id="t1",
                                 input_item_id="msg_1", observed_at_ms=2)),
        ("realtime_item", spoken("realtime_session_closed", outcome="ended")),
        ("token_usage_record", {"thread_id": SESSION, "turn_id": "t1", "usage": {}}),
        ("security_risk_score", {"score": 0.1, "turn_id": "t1"}),
        ("id_allocation", {"next": 7}),
        ("compacted", {"message": "The test was fixed.", "replacement_history": []}),
        ("event_msg", {"type": "task_complete", "turn_id": "t1"}),
    ]  # fmt: skip
    return [line(n, kind, payload) for n, (kind, payload) in enumerate(payloads)]


def write_every_writer_kind(home: Path) -> Path:
    path = home / "sessions" / "2026" / "12" / "07" / f"rollout-2026-12-07T10-00-00-{SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in every_writer_kind()))
    return path
