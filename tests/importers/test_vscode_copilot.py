"""VS Code Copilot Chat: converter checks over the JSON document and the operation log,
versions refused whole, an import read back with the five tools, and ``watch`` following
an operation log that grows."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client as NATS

from contracts.subjects import Subjects
from tests.importers import gen_vscode_copilot as gen
from tests.importers._agent_e2e import assert_events, imported
from tests.importers._sources import cites_of, reading_events, watch_growth
from tests.importers.test_import_tools import ask, import_args, sessionquery
from worker.importers import vscode_copilot

DOCUMENT = f"vscode-{gen.DOCUMENT}"
LOG = f"vscode-{gen.LOG}"
EMPTY = f"vscode-{gen.EMPTY_WINDOW}"
WRITER = f"vscode-{gen.WRITER_LOG}"


def events(path: Path) -> list[dict[str, Any]]:
    return reading_events("vscode-copilot", vscode_copilot.read_chat(path))


def test_document_requests_and_tool_calls(tmp_path: Path) -> None:
    path = gen.write_document(tmp_path)
    got = events(path)
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "message/assistant", "message/user", "message/assistant", "tool/call", "tool/result",
        "message/assistant",
    ]  # fmt: skip
    assert got[0]["payload"]["cwd"] == gen.CWD  # workspace.json's folder
    assert got[2]["payload"]["text"] == "Let me look at the image markup."  # pieces joined
    assert got[4]["cites"] == [{"session_id": DOCUMENT, "seq": 4}]
    assert got[8]["payload"]["input"]["command"] == "ls assets/hero*"
    # An inline reference is part of the answer's text, as VS Code shows it.
    assert got[5]["payload"]["text"] == "The markup in `index.html` has no srcset for 2x screens."
    assert vscode_copilot.read_chat(path).skipped == {}


def test_the_writers_operation_log_keeps_the_assistant_and_every_request(
    tmp_path: Path,
) -> None:
    """VS Code's own log: bare markdown parts, thinking chunks, parts rewritten from an
    index and cut without new items, a deleted property, requests ended by their
    ``modelState`` with no ``result``."""
    got = events(gen.write_writer_log(tmp_path))
    assert [(e["type"], e["payload"].get("text") or e["payload"].get("thinking"))
            for e in got[1:]] == [
        ("message/user", "Is the CSS minified?"),
        ("message/assistant", "Checking the build script."),
        ("message/assistant", "The build uses esbuild."),
        ("tool/call", None),
        ("tool/result", None),
        ("message/assistant", "It is minified already."),
        ("message/user", "Rename the bundle"),
        ("message/assistant", "Renamed it to app.min.css."),
    ]  # fmt: skip
    assert got[4]["payload"]["tool"] == "copilot_readFile"
    assert got[5]["payload"]["output"] == "Read build.mjs"
    assert got[5]["cites"] == [{"session_id": f"vscode-{gen.WRITER_LOG}", "seq": 5}]


def test_a_request_without_result_waits_only_while_last_and_fresh(tmp_path: Path) -> None:
    path = gen.write_writer_document(tmp_path)
    # Made just now (its own timestamp): VS Code may still be answering it.
    body = gen.writer_document()
    body["requests"][-1]["timestamp"] = int(time.time() * 1000)
    path.write_bytes(orjson.dumps(body))
    got = events(path)
    assert [e["type"] for e in got] == [
        "session/start", "message/user", "message/assistant", "tool/call", "tool/result",
        "message/user", "tool/call", "tool/result", "message/assistant", "message/user",
    ]  # fmt: skip
    assert got[6]["payload"]["input"] == {"command": "npm test"}
    assert got[7]["payload"]["output"] == "Ran `npm test`\n1 failing: footer overlaps"
    assert got[7]["payload"]["is_error"] is True  # its exit code
    assert got[3]["payload"]["input"] == {"path": "/home/dev/site/header.css"}
    assert got[3]["payload"]["tool"] == "textEditGroup"
    assert got[8]["payload"]["text"] == "The footer is sticky too."
    assert vscode_copilot.read_chat(path).skipped == {"response:codeblockUri": 1}
    # Made longer ago than the window: the last answer is what there is, even in a file
    # copied just now (its modification time is the copy's).
    path.write_bytes(orjson.dumps(gen.writer_document()))
    assert events(path)[-1]["payload"]["text"] == "Looking at the breakpoints"
    # Older versions mark a cancelled request, with no result, as such.
    body = gen.writer_document()
    del body["requests"][2]["modelState"]
    body["requests"][2]["isCanceled"] = True
    path.write_bytes(orjson.dumps(body))
    assert events(path)[-1]["payload"]["text"] == "Looking at the breakpoints"


def test_operation_log_is_replayed_and_an_unanswered_request_waits(tmp_path: Path) -> None:
    lines = gen.log_lines()
    lines[1]["v"][0]["timestamp"] = int(time.time() * 1000)  # made just now
    path = gen.write_log(tmp_path, lines[:3])  # answered in part, no result yet
    assert [e["type"] for e in events(path)] == ["session/start", "message/user"]
    gen.write_log(tmp_path, lines)
    reading = vscode_copilot.read_chat(path)
    assert reading.sessions[0].title == "CSS minify"
    assert [e["type"] for e in events(path)][-1] == "message/assistant"
    # A line still being written (no newline yet) is not applied.
    path.write_bytes(path.read_bytes() + b'{"kind": 1, "k": ["customTi')
    assert vscode_copilot.read_chat(path).sessions[0].title == "CSS minify"


def test_what_cannot_be_read_whole_is_refused_whole(tmp_path: Path) -> None:
    future = vscode_copilot.read_chat(gen.write_future_version(tmp_path))
    assert not future.sessions
    assert future.problems[0].message == (
        "chat session format version 9 is not one this importer reads (1, 2, 3); not imported"
    )
    broken = [*gen.log_lines(), {"kind": 2, "k": ["requests", 5, "response"], "v": []}]
    refused = vscode_copilot.read_chat(gen.write_log(tmp_path, broken))
    assert not refused.sessions
    assert refused.problems[0].message == "line 6: cannot apply (IndexError); not imported"
    unknown = [*gen.log_lines(), {"kind": 7, "k": ["x"]}]
    message = vscode_copilot.read_chat(gen.write_log(tmp_path, unknown)).problems[0].message
    assert message == "line 6: unknown operation kind 7; not imported"


async def test_import_answers_the_tools(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    user = tmp_path / "Code" / "User"
    gen.write_document(user)
    gen.write_log(user)
    gen.write_empty_window(user)
    gen.write_writer_log(user)
    # Document: 11, title, end; log: 3, title, end; empty window: 3 and end; the writer's
    # log: 9 and end.
    async with imported(nc, nats_url, subjects, tmp_path, user, "vscode-copilot",
                        expected=13 + 5 + 4 + 10, idle="0") as (worker, _):  # fmt: skip
        for session, count in ((DOCUMENT, 13), (LOG, 5), (EMPTY, 4), (WRITER, 10)):
            await assert_events(nc, worker, session, session, count)
        answer = await ask(nc, worker, "session_search", DOCUMENT, query="minified already")
        assert WRITER in answer
        lineage = await ask(nc, worker, "session_trace", DOCUMENT, session_id=DOCUMENT)
        assert "⟦Retina hero image⟧" in lineage
        result = await ask(nc, worker, "session_event_trace", DOCUMENT, session_id=DOCUMENT,
                           seq=10)  # fmt: skip
        assert f"{DOCUMENT} seq 9 · tool/call" in cites_of(result)
        found = await ask(nc, worker, "session_search", DOCUMENT, query="cssnano postcss")
        assert LOG in found
        # The empty window's chat has no folder: the no-cwd workspace, apart from the site's.
        assert EMPTY not in await ask(nc, worker, "session_search", DOCUMENT, query="cascade layer")


async def test_an_unknown_version_is_reported_and_nothing_of_it_published(
    nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    path = gen.write_future_version(tmp_path)
    args = import_args(nats_url, subjects, path, fmt="vscode-copilot", idle="0")
    done = await asyncio.to_thread(sessionquery, *args)
    assert done.returncode == 1, done.stderr
    assert f"{path}:0: chat session format version 9 is not one" in done.stderr
    assert "published 0 events" in done.stderr


async def test_watch_follows_a_growing_operation_log(
    nc: NATS, nats_url: str, subjects: Subjects, unique: str, tmp_path: Path
) -> None:
    lines = gen.log_lines()
    path = gen.write_log(tmp_path, lines[:3])

    def answered() -> None:
        gen.write_log(tmp_path, lines)

    await watch_growth(nc, nats_url, subjects, f"watch-{unique}", "vscode-copilot", path,
                       before=2, grow=answered, after=3)  # fmt: skip
