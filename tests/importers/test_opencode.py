"""OpenCode (and Kilo CLI): converter checks, an import read back with the five tools, and
``watch`` following a database that gains rows; all over generated histories."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests._harness import until
from tests.importers import gen_opencode as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask
from tests.importers.test_watch import has, start, stop, watch_command
from worker.importers import opencode, registry
from worker.importers.source_reading import ReadingConverter, SessionCache, SourceReading

# Main: start, user text, synthetic context, thinking, 2 x (call, result), text = 9, plus
# title and end; child: start, text, 2 x (call, result), text = 7, plus title and end;
# compacted: start, 4 texts, compaction, text = 7, plus end (its title is a placeholder).
EVENTS = 11 + 9 + 8


def events_of(reading: SourceReading) -> list[dict[str, Any]]:
    return reading_events("opencode", reading)


def test_database_and_older_tree_give_the_same_events(tmp_path: Path) -> None:
    history = gen.corpus()
    gen.write_database(tmp_path / "opencode.db", history)
    gen.write_tree(tmp_path / "storage", history)
    from_db = opencode.read_database(tmp_path / "opencode.db")
    from_tree = opencode.read_tree(tmp_path / "storage")
    assert events_of(from_db) == events_of(from_tree)
    assert from_db.skipped == from_tree.skipped
    # Bookkeeping and marker parts are counted, and so is the part type nobody knows yet.
    assert from_db.skipped["part:unknown:hologram"] == 1
    assert from_db.skipped["part:step-start"] == 1 and from_db.skipped["part:file"] == 1
    assert not from_db.problems


def test_sub_agent_cites_its_task_call_and_the_summary_compacts(tmp_path: Path) -> None:
    gen.write_database(tmp_path / "opencode.db", gen.corpus())
    events = events_of(opencode.read_database(tmp_path / "opencode.db"))
    child_start = next(e for e in events if e["session_id"] == gen.CHILD)
    assert child_start["payload"]["parent_session_id"] == gen.MAIN
    task_call = next(e for e in events if e["type"] == "tool/call"
                     and e["payload"]["tool"] == "task")  # fmt: skip
    assert child_start["cites"] == [{"session_id": gen.MAIN, "seq": task_call["seq"]}]
    compaction = next(e for e in events if e["type"] == "compaction")
    assert compaction["session_id"] == gen.COMPACTED and compaction["replaces"] == [2, 3, 4, 5]
    kinds = [e["type"] for e in events if e["session_id"] == gen.MAIN]
    assert kinds[:4] == ["session/start", "message/user", "message/context", "message/assistant"]
    # Titles wait for the session's end; OpenCode's placeholder title is no title.
    assert "session/title" not in kinds


def test_a_running_tool_and_a_streaming_answer_wait(tmp_path: Path) -> None:
    history = gen.History()
    history.session(gen.MAIN, "Streaming")
    user = history.message(gen.MAIN, "user", agent="build")
    history.text(gen.MAIN, user, "Run the slow test suite")
    answer = history.message(gen.MAIN, "assistant", done=False)
    history.tool(gen.MAIN, answer, "bash", {"command": "make test"}, "", status="running")
    history.text(gen.MAIN, answer, "While it runs", ended=False)
    db = tmp_path / "opencode.db"
    gen.write_database(db, history)
    converter = ReadingConverter("opencode", lambda: opencode.read_database(db))
    first = [orjson.loads(o.body)["type"] for o in converter.feed(1, b"")]
    # The call's input is final once it runs; its result and the text after it wait.
    assert first == ["session/start", "message/user", "tool/call"]
    history.parts[answer][0]["state"] = {
        "status": "completed", "input": {"command": "make test"}, "output": "412 passed",
        "title": "make test", "metadata": {}, "time": {"start": 1, "end": 2},
    }  # fmt: skip
    gen.write_database(db, history)
    assert [orjson.loads(o.body)["type"] for o in converter.feed(2, b"")] == ["tool/result"]
    history.messages[gen.MAIN][1]["time"]["completed"] = gen.T0 + 99_000
    gen.write_database(db, history)
    later = [orjson.loads(o.body) for o in converter.feed(3, b"")]
    assert [(e["seq"], e["type"]) for e in later] == [(5, "message/assistant")]


def test_a_cached_reading_reads_again_only_what_changed(tmp_path: Path) -> None:
    history = gen.corpus()
    db = tmp_path / "opencode.db"
    gen.write_database(db, history)
    cache = SessionCache()
    first = {s.session_id: s for s in opencode.read_database(db, cache).sessions}
    # A tool's state changes in place (same rows, same times): its length tells.
    answer = history.messages[gen.CHILD][1]["id"]
    history.parts[answer][0]["state"]["output"] += " and one more line"
    gen.write_database(db, history)
    again = {s.session_id: s for s in opencode.read_database(db, cache).sessions}
    assert again[gen.MAIN] is first[gen.MAIN] and again[gen.COMPACTED] is first[gen.COMPACTED]
    assert again[gen.CHILD] is not first[gen.CHILD]
    output = again[gen.CHILD].items[2].payload["output"]
    assert output == "41 total += round(x) and one more line"
    assert opencode.read_database(db, cache).skipped == opencode.read_database(db).skipped


def test_the_database_is_read_only_and_never_locked(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    gen.write_database(db, gen.corpus())
    writer = sqlite3.connect(db)
    try:
        writer.execute("BEGIN IMMEDIATE")  # the agent holds the write lock mid-turn
        assert len(opencode.read_database(db).sessions) == 3  # WAL: readers still read
        writer.execute("UPDATE session SET title = 'renamed' WHERE id = ?", (gen.MAIN,))
        writer.commit()
    finally:
        writer.close()
    assert not db.with_name("opencode.db-journal").exists()


def test_not_an_opencode_database_is_a_precise_problem(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    sqlite3.connect(db).close()
    problems = opencode.read_database(db).problems
    assert [p.message for p in problems] == [
        "not an OpenCode database: no message, part, session table"
    ]


@pytest.mark.parametrize("agent", ["opencode", "kilo"])  # Kilo CLI: OpenCode's schema
async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path, agent: str
) -> None:
    db = tmp_path / agent / f"{agent}.db"
    db.parent.mkdir()
    gen.write_database(db, gen.corpus())
    async with imported(nc, nats_url, subjects, tmp_path, db.parent, agent,
                        expected=EVENTS, idle="0") as (worker, _):  # fmt: skip
        for session, count in ((gen.MAIN, 11), (gen.CHILD, 9), (gen.COMPACTED, 8)):
            await assert_events(nc, worker, gen.MAIN, session, count)
        lineage = await ask(nc, worker, "session_trace", gen.MAIN, session_id=gen.MAIN)
        assert "⟦Fix the checkout rounding⟧" in lineage  # the title, published at the end
        assert f"{gen.CHILD} ⟦Find every rounding call (@general subagent)⟧" in lineage
        child = await ask(nc, worker, "session_trace", gen.MAIN, session_id=gen.CHILD)
        assert gen.MAIN in child.split("Ancestors")[1].split("Descendants")[0]
        result = await ask(nc, worker, "session_event_trace", gen.MAIN, session_id=gen.MAIN, seq=6)
        assert f"{gen.MAIN} seq 5 · tool/call" in cites_of(result)
        spawned = await ask(nc, worker, "session_event_trace", gen.MAIN,
                            session_id=gen.CHILD, seq=1)  # fmt: skip
        assert f"{gen.MAIN} seq 7 · tool/call" in cites_of(spawned)
        found = await ask(nc, worker, "session_event_search", gen.MAIN, query="cent",
                          session_id=gen.MAIN)  # fmt: skip
        assert "Found 2 events" in found  # the question and the answer
        summary = await ask(nc, worker, "session_event_trace", gen.MAIN,
                            session_id=gen.COMPACTED, seq=6)  # fmt: skip
        assert "seq 2 ·" in summary.split("Replaces (")[1].split("Replaced by")[0]
        read = await ask(nc, worker, "session_event_read", gen.MAIN, session_id=gen.MAIN, seq=1)
        assert '"cwd":"/home/dev/shop"' in read


async def test_watch_follows_a_database_that_gains_rows(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    db = tmp_path / "opencode.db"
    history = gen.corpus()
    gen.write_database(db, history)

    def next_turn() -> None:
        user = history.message(gen.MAIN, "user", agent="build")
        history.text(gen.MAIN, user, "Also round the tax line")
        answer = history.message(gen.MAIN, "assistant")
        history.text(gen.MAIN, answer, "The tax line is rounded once now.")
        gen.write_database(db, history)

    # Without titles and ends (the sessions are not idle): 9 + 7 + 7, then 2 more.
    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "opencode", db,
                       before=23, grow=next_turn, after=25)  # fmt: skip


async def test_watch_ends_each_quiet_session_of_a_busy_database(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    """The database changes all the time (one session is live), yet the session whose
    last event is older than --idle-seconds gets its title and end."""
    history = gen.History()
    history.session(gen.MAIN, "Yesterday's work")
    old = history.message(gen.MAIN, "user", agent="build")
    history.text(gen.MAIN, old, "Rename the cart module")
    history.clock = int(time.time() * 1000)  # a session of a minute ago
    history.session(gen.COMPACTED, "Live work")
    live = history.message(gen.COMPACTED, "user", agent="build")
    history.text(gen.COMPACTED, live, "Now the invoice module")
    db = tmp_path / "opencode.db"
    gen.write_database(db, history)
    process = start(watch_command(nats_url, subjects, f"watch-{unique}", db, fmt="opencode",
                                  idle=600))  # fmt: skip
    try:
        await until(lambda: has(nc, subjects, 6), within=30)  # 2 + title + end, 2
        await asyncio.sleep(0.3)
        assert await has(nc, subjects, 6)  # the live session stays open
    finally:
        code, err = stop(process)
    assert code == 0, err
    js = nc.jetstream()
    ended = await js.get_last_msg(subjects.events_stream, subjects.stored_session("*", gen.MAIN))
    assert ended.data is not None and orjson.loads(ended.data)["type"] == "session/end"
    live_last = await js.get_last_msg(
        subjects.events_stream, subjects.stored_session("*", gen.COMPACTED)
    )
    assert live_last.data is not None and orjson.loads(live_last.data)["type"] == "message/user"
    await js.delete_stream(subjects.events_stream)


def test_the_resume_token_carries_on_where_the_converter_stopped(tmp_path: Path) -> None:
    history = gen.corpus()
    db = tmp_path / "opencode.db"
    gen.write_database(db, history)
    before = ReadingConverter("opencode", lambda: opencode.read_database(db))
    published = before.feed(1, b"") + before.end_quiet(datetime(2025, 11, 24, 16, 0, 5, tzinfo=UTC))
    token = orjson.loads(orjson.dumps(before.token()))  # as the KV stores it
    assert token["sessions"][gen.COMPACTED][2]["replaceable"] == [
        [7, 7]
    ]  # runs, after the compaction
    user = history.message(gen.COMPACTED, "user", agent="build")
    history.text(gen.COMPACTED, user, "And the page numbers")
    gen.write_database(db, history)
    after = ReadingConverter("opencode", lambda: opencode.read_database(db))
    after.restore(token)
    resumed = [orjson.loads(o.body) for o in after.feed(2, b"")]
    # Only the new prompt, numbered after what was published; the ended main session
    # (quiet since before the cut-off) publishes nothing again.
    assert [(e["session_id"], e["seq"], e["type"]) for e in resumed] == [
        (gen.COMPACTED, 8, "message/user")
    ]
    assert {o.session_id for o in published if o.kind == "session/end"} == {gen.MAIN}


async def test_watch_follows_the_older_tree_as_files_appear(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    storage = tmp_path / "opencode" / "storage"
    history = gen.corpus()
    gen.write_tree(storage, history)

    def next_prompt() -> None:  # a message file and its part file appear
        user = history.message(gen.COMPACTED, "user", agent="build")
        history.text(gen.COMPACTED, user, "And the page numbers")
        gen.write_tree(storage, history)

    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "opencode", storage,
                       before=23, grow=next_prompt, after=24)  # fmt: skip


RECORDED = Path(__file__).parent / "recorded" / "opencode" / "sessions" / "opencode.db"


def test_a_recorded_interrupted_tool_call_does_not_hold_back_the_rest_of_its_session() -> None:
    """OpenCode 1.18 leaves a tool interrupted by Ctrl-C ``running`` for good (its message
    never completes), and the session goes on in later messages. Once a later answer
    exists the call is over: it is published with a result marked ``interrupted`` (no
    output), and the later turns follow it."""
    reading = opencode.read_database(RECORDED)
    (main,) = [s for s in reading.sessions if s.parent is None]
    assert all(item.complete for item in main.items)
    texts = [item.payload.get("text", "") for item in main.items]
    slow = next(i for i, t in enumerate(texts) if "Run the slow checks" in t)
    call, result = main.items[slow + 2], main.items[slow + 3]
    assert (call.type, call.payload["tool"]) == ("tool/call", "bash")
    assert (result.type, result.result_of) == ("tool/result", call.call)
    assert result.payload["is_error"] is True and result.payload["interrupted"] is True
    assert any("What did we change" in t for t in texts[slow + 4 :])


def test_kilos_transient_progress_text_is_not_published(tmp_path: Path) -> None:
    """Kilo CLI writes a spinner line ("⠋ Initializing snapshot…") as a synthetic text part
    marked ``metadata["kilocode.lifecycle"] = "transient"`` while it snapshots the files,
    and deletes the part once done (the recording's event log shows them; its model never
    sees them). Read mid-turn, such a part is counted as skipped, never published."""
    history = gen.History()
    history.session(gen.MAIN, "Snapshots")
    user = history.message(gen.MAIN, "user", agent="code")
    history.text(gen.MAIN, user, "Fix the ledger")
    answer = history.message(gen.MAIN, "assistant")
    history.text(gen.MAIN, answer, "⠋ Initializing snapshot…", synthetic=True,
                 metadata={"kilocode.lifecycle": "transient"})  # fmt: skip
    history.text(gen.MAIN, answer, "Fixed it.")
    db = tmp_path / "kilo.db"
    gen.write_database(db, history)
    reading = opencode.read_database(db)
    texts = [e["payload"].get("text") for e in events_of(reading)]
    assert "⠋ Initializing snapshot…" not in texts and "Fixed it." in texts
    assert reading.skipped["part:text:transient"] == 1


KILO_RECORDED = Path(__file__).parent / "recorded" / "kilo" / "sessions" / "kilo.db"


def _published(session: Any) -> list[tuple[str, str, Any]]:
    """What ``watch`` publishes of a reading: its items up to the first one still written."""
    done: list[tuple[str, str, Any]] = []
    for item in session.items:
        if not item.complete:
            break
        done.append((item.ref, item.type, item.payload))
    return done


def test_every_moment_of_the_recorded_kilo_sessions_publishes_what_the_end_keeps() -> None:
    """Kilo's ``event`` table logs each message and part as it was written (and removed), so
    the database can be replayed to any moment of the recording. Read at any of them, what
    is complete must be what the finished session holds: ``watch`` cannot take back what
    it published. Kilo compacts in chunks: the kept summary message is created first and
    filled last, after the chunks' own summary messages (complete, then deleted) followed
    it; those later summaries made it look over, so it was published empty."""
    db = sqlite3.connect(f"file:{KILO_RECORDED}?mode=ro", uri=True)
    try:
        logs = {
            sid: db.execute(
                "SELECT type, data FROM event WHERE aggregate_id = ? ORDER BY seq", (sid,)
            ).fetchall()
            for (sid,) in db.execute("SELECT id FROM session")
        }
    finally:
        db.close()
    read = {s.session_id: s for s in opencode.read_database(KILO_RECORDED).sessions}
    assert len(logs) == len(read) == 2
    compactions = 0
    for sid, log in logs.items():
        moments, final = _replayed(log)
        assert final == _published(read[sid])
        compactions += sum(1 for _, kind, _ in final if kind == "compaction")
        for at, published in enumerate(moments):
            assert published == final[: len(published)], f"{sid} after event {at}"
    assert compactions == 1


def _replayed(log: list[tuple[str, bytes]]) -> tuple[list[Any], Any]:
    """What each moment of a session's event log publishes, and what its end does."""
    info: dict[str, Any] = {}
    messages: dict[str, dict[str, Any]] = {}
    parts: dict[str, dict[str, dict[str, Any]]] = {}

    def reading() -> Any:
        listed = sorted(messages.values(), key=lambda m: (m["time"]["created"], m["id"]))
        return _published(opencode.build(
            info, [(m, sorted(parts.get(m["id"], {}).values(), key=lambda p: p["id"]))
                   for m in listed]
        ))  # fmt: skip

    moments = []
    for kind, raw in log:
        data = orjson.loads(raw)
        if kind in ("session.created.1", "session.updated.1"):
            info = data["info"]
        elif kind == "message.updated.1":
            messages[data["info"]["id"]] = data["info"]
        elif kind == "message.part.updated.1":
            parts.setdefault(data["part"]["messageID"], {})[data["part"]["id"]] = data["part"]
        elif kind == "message.removed.1":
            messages.pop(data["messageID"], None)
            parts.pop(data["messageID"], None)
        if info:
            moments.append(reading())
    return moments, reading()


def test_an_empty_text_part_is_counted_not_published(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    gen.write_database(db, gen.empty_text_history())
    reading = opencode.read_database(db)
    kinds = [e["type"] for e in reading_events("opencode", reading)]
    assert kinds == ["session/start", "message/user", "tool/call", "tool/result",
                     "message/assistant"]  # fmt: skip
    assert reading.skipped == {"part:text:empty": 1}
    assert registry.get("opencode").skip_reason("part:text:empty")


def test_a_session_prompted_through_the_v2_api_is_read_from_session_message(
    tmp_path: Path,
) -> None:
    """OpenCode 1.18.33's v2 runner writes a session's conversation only to
    ``session_message``: every message type it has is read (or counted), in its order."""
    db = tmp_path / "opencode.db"
    gen.write_database(db, gen.v2_history())
    reading = opencode.read_database(db)
    events = events_of(reading)
    v2 = [e for e in events if e["session_id"] == gen.V2]
    kinds = [e["type"] for e in v2]
    assert kinds == [
        "session/start", "message/user", "message/context", "message/context",
        "message/assistant", "tool/call", "tool/result", "tool/call", "tool/result",
        "message/assistant", "tool/call", "tool/result", "compaction", "message/assistant",
        "message/context",
    ]  # fmt: skip
    user = v2[1]["payload"]["text"]
    assert user == "Split invoice.py into a renderer and a calculator"
    assert v2[4]["payload"]["thinking"] == "Rendering and totals are mixed."
    read_call, read_result = v2[5], v2[6]
    assert read_call["payload"]["tool"] == "read"
    assert read_call["payload"]["input"] == {"path": "invoice.py"}
    assert read_result["payload"]["output"] == "def render(invoice):"
    assert read_result["cites"] == [{"session_id": gen.V2, "seq": read_call["seq"]}]
    failed = v2[8]
    assert failed["payload"]["is_error"] is True
    assert failed["payload"]["output"] == "exit status 1"
    shell_call, shell_result = v2[10], v2[11]
    assert shell_call["payload"]["input"] == {"command": "git status --short"}
    assert shell_result["payload"]["output"] == " M invoice.py"
    assert v2[12]["payload"]["summary"] == "Summary: invoice.py is being split."
    assert v2[12]["replaces"] == list(range(2, 13))
    assert "provider closed the stream" in v2[14]["payload"]["text"]
    assert v2[14]["payload"]["is_error"] is True
    assert reading.skipped == {
        "session_message:agent-switched": 1,
        "session_message:model-switched": 1,
        "session_message:user:file": 1,
        "session_message:unknown:hologram": 1,
    }
    reason = registry.get("opencode").skip_reason
    assert reason("session_message:unknown:hologram") is None  # a new type stays loud
    assert all(reason(k) for k in reading.skipped if "unknown" not in k)


def test_a_v1_session_a_v2_prompt_went_on_keeps_both_in_time_order(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    gen.write_database(db, gen.v2_history())
    events = events_of(opencode.read_database(db))
    texts = [e["payload"].get("text") for e in events if e["session_id"] == gen.MAIN]
    assert texts[1:5] == [
        "Why is the checkout total off by one cent?", "Rounding per line loses a cent.",
        "Now round the total once", "Done: the total is rounded once.",
    ]  # fmt: skip


def test_a_v2_message_appended_later_is_read_again(tmp_path: Path) -> None:
    """The cache's stamp counts ``session_message`` rows: a session whose only change is
    a new v2 message is read again."""
    db = tmp_path / "opencode.db"
    history = gen.v2_history()
    gen.write_database(db, history)
    cache = SessionCache()
    before = events_of(opencode.read_database(db, cache))
    history.entry(gen.V2, "user", text="Also add a docstring")
    gen.write_database(db, history)
    after = events_of(opencode.read_database(db, cache))
    said = [e["payload"].get("text") for e in after if e["session_id"] == gen.V2]
    assert "Also add a docstring" in said
    assert len(after) == len(before) + 1


def test_a_v2_tool_left_running_waits_until_a_later_answer_ends_it(tmp_path: Path) -> None:
    """A v2 tool block still ``running`` waits (the session's later items with it); once
    a later answer exists the turn was cut off: its result is published ``interrupted``."""
    db = tmp_path / "opencode.db"
    history = gen.History()
    history.session(gen.V2, "Tidy the invoice module")
    model = {"id": "model-x", "providerID": "prov"}
    history.entry(gen.V2, "user", text="Run the tests")
    history.entry(gen.V2, "assistant", done=False, agent="build", model=model, content=[
        {"type": "tool", "id": "call_v2_run", "name": "bash",
         "state": {"status": "running", "input": {"command": "pytest"}, "content": [],
                   "structured": {}}, "time": {"created": history.clock}},
    ])  # fmt: skip
    gen.write_database(db, history)
    kinds = [e["type"] for e in events_of(opencode.read_database(db))]
    assert kinds == ["session/start", "message/user", "tool/call"]  # the result waits
    history.entry(gen.V2, "user", text="Stop, just lint")
    history.entry(gen.V2, "assistant", agent="build", model=model,
                  content=[{"type": "text", "id": "tx_9", "text": "Lint is clean."}])  # fmt: skip
    gen.write_database(db, history)
    events = events_of(opencode.read_database(db))
    result = next(e for e in events if e["type"] == "tool/result")
    assert result["payload"]["interrupted"] is True and result["payload"]["status"] == "running"
    assert [e["type"] for e in events][-2:] == ["message/user", "message/assistant"]


def test_a_kilo_channel_database_reads_its_v2_messages_too(tmp_path: Path) -> None:
    """Kilo CLI 7.7.9 (the same v2 runner in its binary) keeps a channel other than
    latest, beta and prod in ``kilo-<channel>.db``: found, and its ``session_message``
    rows read as OpenCode's."""
    db = tmp_path / "kilo" / "kilo-nightly.db"
    db.parent.mkdir()
    gen.write_database(db, gen.v2_history())
    importer = registry.get("kilo")
    assert importer.files(tmp_path / "kilo") == [db]
    reading = importer.read(db, SessionCache())  # type: ignore[attr-defined]
    texts = [e["payload"].get("text") for e in reading_events("kilo", reading)
             if e["session_id"] == gen.V2]  # fmt: skip
    assert "Split invoice.py into a renderer and a calculator" in texts


RECORDED_V2 = Path(__file__).parent / "recorded" / "opencode-v2" / "sessions" / "opencode.db"


def test_the_recorded_v2_session_keeps_what_its_read_read_and_its_interrupted_call() -> None:
    """Recorded from 1.18.33's v2 runner (opencode serve): its ``read`` tool leaves the
    tool's ``content`` empty and keeps the file in ``structured.content``; a call cut off
    by ``/interrupt`` is failed with "Tool execution interrupted"."""
    (session,) = opencode.read_database(RECORDED_V2).sessions
    items = session.items
    calls = {i.call: i for i in items if i.type == "tool/call"}
    results = [i for i in items if i.type == "tool/result"]
    read = next(r for r in results if calls[r.result_of].payload["tool"] == "read"
                and not r.payload.get("is_error"))  # fmt: skip
    assert "return sum(self.entries[1:])" in read.payload["output"]
    assert all(r.payload["output"] for r in results)
    last = results[-1]
    assert calls[last.result_of].payload["input"]["command"].startswith("python3 -c")
    assert last.payload["is_error"] is True and last.payload["interrupted"] is True
