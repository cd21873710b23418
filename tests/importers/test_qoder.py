"""Qoder CLI transcripts (Claude Code's format in ~/.qoder): the converter over a generated
history (a failing tool, an Agent sub-agent, a compaction, a model-given title written
twice, Qoder's bookkeeping records), detection by folder, then the real ``import`` and
``watch`` into a real nats-server and worker, read back through the tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import fixture_gen
from tests.importers import gen_qoder as gen
from tests.importers._agent_e2e import assert_events, by_session, imported, watch_grows
from tests.importers.test_import_tools import ask
from worker.importers import registry
from worker.importers.detect import detect, expand

FMT = "qoder"


def test_claude_code_records_under_qoder_ids(tmp_path: Path) -> None:
    sessions, _, tally = by_session(FMT, gen.write(tmp_path))
    assert {k: len(v) for k, v in sessions.items()} == gen.EVENTS
    main, child = sessions[gen.MAIN], sessions[gen.CHILD]
    assert [e["type"] for e in main] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "tool/call", "tool/result", "session/title", "compaction", "message/user",
        "message/assistant",
    ]  # fmt: skip
    assert main[0]["payload"]["source"] == FMT and main[0]["payload"]["cwd"] == gen.CWD
    assert main[0]["payload"]["version"] == "1.1.52"
    assert main[4]["payload"]["is_error"] is True
    # The model-given title, once though written twice.
    assert main[7]["payload"] == {"title": gen.TITLE, "source_type": "ai-title"}
    assert main[8]["replaces"] == [2, 3, 4, 5, 6, 7]
    assert child[0]["payload"]["parent_session_id"] == gen.MAIN
    assert child[0]["cites"] == [{"session_id": gen.MAIN, "seq": 6}]
    assert tally.skipped == gen.SKIPPED
    importer = registry.get(FMT)
    # Qoder's bookkeeping has its reasons; a kind no version writes is drift.
    unknown = {k for k in gen.SKIPPED if importer.skip_reason(k) is None}
    assert unknown == {"record:hologram"}


def test_a_custom_title_wins_over_the_model_given_one(tmp_path: Path) -> None:
    root = gen.write(tmp_path)
    file = root / gen.SLUG / f"{gen.RAW}.jsonl"
    named = {"type": "custom-title", "sessionId": gen.RAW, "customTitle": "kiln"}
    file.write_bytes(fixture_gen.render([named]) + file.read_bytes())
    sessions, _, tally = by_session(FMT, root)
    titles = [e["payload"]["title"] for e in sessions[gen.MAIN] if e["type"] == "session/title"]
    assert titles == ["kiln"]
    assert tally.skipped["record:ai-title:custom-title-wins"] == 2


def test_detected_by_folder_not_by_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = list(expand([gen.write(tmp_path / "home")], FMT))
    assert len(files) == 2 and {detect(f) for f in files} == {FMT}
    # The same records elsewhere are Claude Code's; under $QODER_CONFIG_DIR, Qoder's.
    moved = tmp_path / "cfg" / "projects" / gen.SLUG
    moved.mkdir(parents=True)
    (moved / f"{gen.RAW}.jsonl").write_bytes(files[0].read_bytes())
    assert detect(moved / f"{gen.RAW}.jsonl") == "claude-code"
    monkeypatch.setenv("QODER_CONFIG_DIR", str(tmp_path / "cfg"))
    assert detect(moved / f"{gen.RAW}.jsonl") == FMT
    assert registry.get(FMT).default_locations() == [tmp_path / "cfg" / "projects"]


async def test_import_then_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    root = gen.write(tmp_path / "home")
    async with imported(nc, nats_url, subjects, tmp_path, root, FMT) as (worker, said):
        assert "unknown record kinds: record:hologram 1" in said
        for session in (gen.MAIN, gen.CHILD):  # each with the end of an old session
            await assert_events(nc, worker, gen.MAIN, session, gen.EVENTS[session] + 1)
        trace = await ask(nc, worker, "session_trace", gen.MAIN, session_id=gen.MAIN)
        assert f"⟦{gen.TITLE}⟧" in trace and gen.CHILD in trace.split("Descendants")[1]
        found = await ask(nc, worker, "session_search", gen.CHILD, query="overshoot")
        assert gen.MAIN in found


async def test_watch_follows_a_transcript_being_written(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    folder = tmp_path / ".qoder" / "projects" / gen.SLUG
    folder.mkdir(parents=True)
    records = [fixture_gen.render([r]) for r in gen.main_session()]
    file = folder / f"{gen.RAW}.jsonl"
    file.write_bytes(b"".join(records[:3]) + records[3][:30])  # mode, prompt, reply; half
    rest = records[3][30:] + b"".join(records[4:])
    said = await watch_grows(nc, nats_url, subjects, f"watch-{unique}", folder.parent, FMT,
                             file, rest, before=4, after=gen.EVENTS[gen.MAIN])  # fmt: skip
    assert f"published {gen.EVENTS[gen.MAIN]} events" in said
