"""Claude Code transcripts of shapes seen in real homes (generated: gen_claude_code)."""

from __future__ import annotations

from pathlib import Path

from tests.importers import gen_claude_code as gen
from tests.importers._agent_e2e import by_session

FMT = "claude-code"


def test_a_result_opening_the_next_session_cites_the_call_the_planning_one_left_open(
    tmp_path: Path,
) -> None:
    sessions, _, tally = by_session(FMT, gen.write_plan_then_implement(tmp_path))
    call = next(e for e in sessions[gen.PLANNING] if e["type"] == "tool/call")
    result = next(e for e in sessions[gen.IMPLEMENTING] if e["type"] == "tool/result")
    assert result["cites"] == [{"session_id": gen.PLANNING, "seq": call["seq"]}]
    assert result["payload"]["tool"] == "ExitPlanMode"
    assert result["payload"]["is_error"] is True
    assert not tally.unknown
