"""The importers on what the agents themselves wrote: every ``recorded/<agent>/RECORDED.json``
(made by ``python -m tests.recording.record``) names the session files an agent wrote on the
synthetic task, its importer format and what they must give: sessions, children, events by
type (minimums), tool errors, titles, cwd. Each recording is converted, imported with the real
``sessionquery import`` into a real worker (twice: the second publishes nothing) and read back
through the tools; a line-appended format is also followed by ``watch`` while it grows."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers._agent_e2e import by_session, converted, imported, watch_grows
from tests.importers.test_import_tools import ask
from tests.recording.agents import recipes
from tests.recording.scrub import scrub_tree
from worker.importers import make_converter, registry
from worker.importers.base import SpawnLinks
from worker.importers.detect import expand
from worker.importers.source_reading import SessionCache
from worker.importers.whole_sources import ReadingImporter

RECORDED = Path(__file__).parent / "recorded"
RECORDINGS = sorted(RECORDED.glob("*/RECORDED.json"))


def _load(path: Path) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads(path.read_text())
    recorded["root"] = path.parent / "sessions"
    return recorded


@pytest.fixture(params=RECORDINGS, ids=[p.parent.name for p in RECORDINGS])
def recorded(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


def test_every_recording_names_its_agent_and_version() -> None:
    assert RECORDINGS, "no recorded fixtures"
    for path in RECORDINGS:
        recorded = _load(path)
        assert recorded["agent"] == path.parent.name
        assert recorded["version"] and recorded["package"] and recorded["recorded"]
        assert recorded["root"].is_dir()
        assert not recorded["key_in_files"], f"the fake key is in {recorded['key_in_files']}"
        assert all(code == 0 for code in recorded["exits"].values()), recorded["exits"]


def test_every_recording_is_what_its_recipe_expects() -> None:
    """A recipe changed without re-recording (or a recording edited by hand) shows here."""
    known = recipes()
    for path in RECORDINGS:
        recorded = _load(path)
        recipe = known.get(recorded["agent"])
        assert recipe is not None, f"no recipe for {recorded['agent']}"
        assert (recipe.package, recipe.version, recipe.format) == (
            recorded["package"],
            recorded["version"],
            recorded["format"],
        )
        assert [s.name for s in recipe.steps] == [s["name"] for s in recorded["steps"]]
        assert dict(recipe.expect) == recorded["expect"]


def test_no_recording_keeps_its_agents_own_prompt_text(tmp_path: Path) -> None:
    """The agents' system prompts, tool descriptions and reminders are theirs, not ours:
    each recording holds none its recipe's rule finds (record.py --scrub)."""
    known = recipes()
    for path in RECORDINGS:
        recorded = _load(path)
        copy = tmp_path / recorded["agent"]
        shutil.copytree(path.parent / "sessions", copy)
        assert scrub_tree(copy, recorded["agent"], known[recorded["agent"]].own_text) == 0


def test_converted_as_the_agent_ran(recorded: dict[str, Any]) -> None:
    expect = recorded["expect"]
    sessions, _, tally = by_session(recorded["format"], recorded["root"])
    assert not tally.problems, tally.problems
    assert len(sessions) == expect["sessions"], list(sessions)
    events = {(s, e["seq"]): e for s, evs in sessions.items() for e in evs}
    counts: Counter[str] = Counter(e["type"] for e in events.values())
    for type_, least in expect["events"].items():
        assert counts[type_] >= least, (type_, counts)
    cited_calls: Counter[tuple[str, int]] = Counter()
    for session, evs in sessions.items():
        # The contract: seq from 1, contiguous, the start first.
        assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1)), session
        assert evs[0]["type"] == "session/start", session
        for e in evs:
            if e["type"] == "tool/result":
                cites = [(c["session_id"], c["seq"]) for c in e.get("cites", [])]
                assert len(cites) == 1 and events[cites[0]]["type"] == "tool/call", e
                cited_calls[cites[0]] += 1
            if e["type"] == "compaction":
                # Nothing to replace only where the source kept nothing before the summary
                # (Nanocoder rewrites its file as the summary and the kept messages).
                assert e.get("replaces") or e["seq"] == 2, e
                assert max(e.get("replaces", []), default=0) < e["seq"], e
    calls = [k for k, e in events.items() if e["type"] == "tool/call"]
    assert all(cited_calls[k] == 1 for k in calls), "a tool call without exactly one result"
    errors = [
        e for e in events.values() if e["type"] == "tool/result" and e["payload"].get("is_error")
    ]
    assert len(errors) >= expect.get("tool_errors", 0)
    # Notifications that report a tool call's outcome later (a background sub-agent's) cite it.
    late = [e for e in events.values() if e["type"] == "message/context" and e.get("cites")]
    assert all(events[(c["session_id"], c["seq"])]["type"] == "tool/call" for e in late
               for c in e["cites"])  # fmt: skip
    assert len(late) >= expect.get("notifications_citing_calls", 0), late
    # Text the agent itself wrote into the conversation (not the model): never the assistant's.
    for text in expect.get("harness_texts", []):
        holders = [e for e in events.values() if e["payload"].get("text") == text]
        assert holders and all(e["type"] == "message/context" for e in holders), (text, holders)
    # What the agent's own version writes is known: skipped with a reason, or imported.
    tally.explain(registry.get(recorded["format"]).skip_reason)
    assert set(tally.unknown) <= set(expect.get("drift", [])), tally.unknown
    for kind, least in expect.get("skipped", {}).items():
        assert tally.skipped[kind] >= least, (kind, tally.skipped)
    children = {
        s: evs[0] for s, evs in sessions.items() if evs[0]["payload"].get("parent_session_id")
    }
    assert len(children) == expect.get("children", 0)
    for child, start in children.items():
        parent = start["payload"]["parent_session_id"]
        assert parent in sessions, child
        cites = [(c["session_id"], c["seq"]) for c in start.get("cites", [])]
        assert len(cites) == 1 and cites[0][0] == parent, start
        assert events[cites[0]]["type"] == "tool/call", start
    titles = {e["payload"]["title"] for e in events.values() if e["type"] == "session/title"}
    if not expect.get("whole"):  # a whole source's titles come with its sessions' ends
        assert set(expect.get("titles", [])) <= titles, titles
    if "cwd" in expect:
        assert {evs[0]["payload"].get("cwd") for evs in sessions.values()} == {expect["cwd"]}


def _said_when_quiet(fmt: str, root: Path) -> int:
    """How many events a line format's converters publish, past what ``convert`` gives,
    once their sessions are quiet (``import --idle-seconds``): ends, and titles read then."""
    importer, links, said = registry.get(fmt), SpawnLinks(), 0
    for path in expand([root], fmt):
        converter = make_converter(fmt, path, links=links)
        for record in importer.records(path, complete=True):
            converter.feed(record.number, record.data)
        converter.finish()
        said += len(converter.end_quiet(datetime.now(UTC) + timedelta(days=1)))
    return said


async def test_imported_and_read_through_the_tools(
    recorded: dict[str, Any], nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    sessions, _, _ = by_session(recorded["format"], recorded["root"])
    children = {s for s, evs in sessions.items() if evs[0]["payload"].get("parent_session_id")}
    fmt, root = recorded["format"], recorded["root"]
    events, open_sessions = converted(fmt, root)
    # Each session ends (idle 1 s: every recorded session is over, whenever it was recorded);
    # a whole source's session gets its title with its end, and so does a line format's
    # that reads its title then (Kimi's state.json): what its converter says once quiet.
    importer = registry.get(fmt)
    if isinstance(importer, ReadingImporter):
        readings = [importer.read(path, SessionCache()) for path in expand([root], fmt)]
        titled = sum(1 for reading in readings for session in reading.sessions if session.title)
        expected = events + len(open_sessions) + titled
    else:
        expected = events + _said_when_quiet(fmt, root)
    async with imported(
        nc, nats_url, subjects, tmp_path, root, fmt, idle="1", expected=expected
    ) as (worker, said):
        assert "dead-letter" not in said

        # The tools answer a session of the index about its own workspace: ask as one (a
        # session without a cwd is in the no-cwd workspace, where it sees only itself).
        def asker(session: str) -> str:
            if sessions[session][0]["payload"].get("cwd") is None:
                return session
            return min(s for s in set(sessions) - children
                       if sessions[s][0]["payload"].get("cwd") is not None)  # fmt: skip

        for session in sorted(set(sessions) - children):
            trace = await ask(nc, worker, "session_trace", asker(session), session_id=session)
            mine = {
                s for s in children if sessions[s][0]["payload"]["parent_session_id"] == session
            }
            if mine:
                descendants = trace.split("Descendants")[1]
                assert all(child in descendants for child in mine), trace
        traces = [
            await ask(nc, worker, "session_trace", asker(session), session_id=session)
            for session in sorted(sessions)
        ]
        for title in recorded["expect"].get("titles", []):
            assert any(f"⟦{title}⟧" in trace for trace in traces), (title, traces)


async def test_watch_picks_up_an_appended_turn(
    recorded: dict[str, Any], nc: NATS, nats_url: str, subjects: Subjects, unique: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    pattern = recorded["expect"].get("watch")
    if pattern is None:
        why = recorded["expect"].get("no_watch", "its sessions are whole documents, not lines")
        pytest.skip(f"{recorded['agent']}: {why}")
    fmt, root = recorded["format"], tmp_path / "sessions"
    # copyfile: fresh modification times, so watch does not end the sessions as idle.
    shutil.copytree(recorded["root"], root, copy_function=shutil.copyfile)
    file = max(root.glob(pattern), key=lambda p: p.stat().st_size)
    lines = file.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    file.write_bytes(b"".join(lines[:half]))
    before, _ = converted(fmt, root)
    file.write_bytes(b"".join(lines))
    after, _ = converted(fmt, root)
    assert after > before
    # The first half, then half a line: watch must wait for the rest of it.
    file.write_bytes(b"".join(lines[:half]) + lines[half][:40])
    rest = lines[half][40:] + b"".join(lines[half + 1 :])
    said = await watch_grows(
        nc, nats_url, subjects, f"watch-{unique}", root, fmt, file, rest, before=before, after=after
    )
    assert f"published {after} events (0 already in the stream)" in said
