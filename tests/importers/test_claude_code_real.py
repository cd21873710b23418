"""Claude Code transcripts of shapes seen in real homes (generated: gen_claude_code)."""

from __future__ import annotations

from pathlib import Path

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_claude_code as gen
from tests.importers._agent_e2e import by_session, imported
from tests.importers.test_import_tools import ask, sessionquery
from worker.importers import registry
from worker.importers.base import Outgoing, SpawnLinks
from worker.importers.plugin import ConvertOptions

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


def test_thinking_kept_without_text_and_blank_text_are_counted_not_published(
    tmp_path: Path,
) -> None:
    sessions, _, tally = by_session(FMT, gen.write_hidden_thinking(tmp_path))
    said = [e["payload"] for e in sessions[gen.HIDDEN] if e["type"] == "message/assistant"]
    assert said == [{"text": "The thermocouple is failing.", "source_type": "assistant"}]
    assert tally.skipped["assistant-block:thinking:encrypted"] == 1
    assert tally.skipped["assistant-block:text:empty"] == 1
    tally.explain(registry.get(FMT).skip_reason)
    assert not tally.unknown, tally.unknown


def test_a_result_written_before_its_call_follows_the_call_and_cites_it(
    tmp_path: Path,
) -> None:
    sessions, _, tally = by_session(FMT, gen.write_early_result(tmp_path))
    events = sessions[gen.EARLY]
    assert [e["type"] for e in events] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "message/assistant",
    ]  # fmt: skip
    call, result = events[3], events[4]
    assert result["cites"] == [{"session_id": gen.EARLY, "seq": call["seq"]}]
    assert result["payload"]["tool"] == "Edit"
    assert not tally.unknown


def test_a_sub_agent_s_warmup_is_the_harness_not_the_user(tmp_path: Path) -> None:
    sessions, _, _ = by_session(FMT, gen.write_warmed(tmp_path))
    (warm,) = [s for s in sessions if s != gen.WARMED]
    first = next(e for e in sessions[warm] if e["type"].startswith("message/"))
    assert (first["type"], first["payload"]["text"]) == ("message/context", "Warmup")
    assert first["payload"]["meta"] is True
    prompt = next(e for e in sessions[gen.WARMED] if e["type"].startswith("message/"))
    assert (prompt["type"], prompt["payload"]["text"]) == ("message/user", "config")


def test_a_workflow_s_agents_are_children_citing_its_call_and_its_journal_no_source(
    tmp_path: Path,
) -> None:
    projects = gen.write_flowing(tmp_path)
    sessions, _, tally = by_session(FMT, projects)
    call = next(e for e in sessions[gen.FLOWING] if e["type"] == "tool/call")
    child = sessions[f"{gen.FLOWING}-agent-{gen.FLOW_AGENT}"]
    assert child[0]["payload"]["parent_session_id"] == gen.FLOWING
    assert child[0]["cites"] == [{"session_id": gen.FLOWING, "seq": call["seq"]}]
    assert not tally.unknown and not tally.problems
    importer = registry.get(FMT)
    assert not [p for p in importer.files(projects) if p.name == "journal.jsonl"]


def test_while_the_planning_session_is_still_open_its_plan_call_is_cited(
    tmp_path: Path,
) -> None:
    """As ``watch`` reads them: the planning transcript's converter has not finished when
    the next session's file appears."""
    project = gen.write_plan_then_implement(tmp_path) / "-home-dev-kiln"
    links: SpawnLinks = {}
    importer = registry.get(FMT)

    def fed(session: str) -> list[Outgoing]:
        path = project / f"{session}.jsonl"
        converter = importer.converter(path, ConvertOptions(links=links))
        lines = path.read_bytes().splitlines()
        return [o for n, line in enumerate(lines, start=1) for o in converter.feed(n, line)]

    calls = [o for o in fed(gen.PLANNING) if o.kind == "tool/call"]
    outs = fed(gen.IMPLEMENTING)
    result = next(orjson.loads(o.body) for o in outs if o.kind == "tool/result")
    assert result["cites"] == [{"session_id": gen.PLANNING, "seq": calls[0].seq}]


def test_a_result_whose_call_is_in_no_file_read_is_kept_and_counted(tmp_path: Path) -> None:
    """The planning session's file left out (a partial copy): the result opening the next
    session is published citing nothing, never refused, and the summary counts it."""
    projects = gen.write_plan_then_implement(tmp_path / "projects")
    (projects / "-home-dev-kiln" / f"{gen.PLANNING}.jsonl").unlink()
    out = tmp_path / "events.jsonl"
    done = sessionquery("import", "--format", FMT, str(projects), "--dry-run", "--quiet",
                        "--output", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = [e for e in map(orjson.loads, out.read_bytes().splitlines())
               if e["type"] == "tool/result"]  # fmt: skip
    assert len(results) == 1 and "cites" not in results[0]
    assert "tool results citing no call: 1 (their call is in no source read" in done.stderr
    assert "dead-letter" not in done.stderr


async def test_the_tools_show_the_plan_result_citing_the_planning_session(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write_plan_then_implement(tmp_path / "projects")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "dead-letter" not in said and "citing no call" not in said
        traced = await ask(nc, worker, "session_event_trace", gen.IMPLEMENTING,
                           session_id=gen.IMPLEMENTING, seq=2)  # fmt: skip
        assert f"{gen.PLANNING} seq 4 · tool/call" in traced.split("Cites (")[1]
