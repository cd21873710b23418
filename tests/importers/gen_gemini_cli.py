"""A generated Gemini CLI history (``~/.gemini/tmp``), made-up content in the format's shapes.

The shapes follow Gemini CLI's own chat recording (``chatRecordingService.ts`` and
``chatRecordingTypes.ts`` of google-gemini/gemini-cli, 2025–2026): the newer JSON Lines
layout (a header record; messages appended again whole when they change; ``$set`` and
``$rewindTo`` records; sub-agent chats in a folder named by the parent session; the
project folder's ``.project_root`` marker) and the older one-JSON-document-per-session
layout in a folder named by a digest of the project path, with no marker; and, as the
CLI wrote them in March–April 2026 (before JSON Lines), a whole-document session whose
sub-agents are ``chats/<parent session id>/<agent id>.json`` documents (``kind``
``subagent``, ``sessionId`` the executor's six-character agent id, ``directories``, and a
``summary`` that is the sub-agent's result cut to 200 characters), the parent's calls
not naming them (no ``agentId`` yet: ``local-executor.ts``, ``local-invocation.ts``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/espresso-app"
MAIN: Final = "6e1f0000-0000-4000-8000-00000000a001"
SUB: Final = "6e1f0000-0000-4000-8000-00000000b002"
LEGACY: Final = "6e1f0000-0000-4000-8000-00000000c003"
SUMMARY: Final = "Quieter espresso pump"
SUB_TASK: Final = "investigate the pump configuration"
PROJECT_HASH: Final = "9c1d" * 16  # older versions' folder: a digest of the project path
SUB_RESULT: Final = "the quiet profile is defined in profiles.yaml at 9 bar"
# The March 2026 layout: a project folder with its marker, a whole-document session, and
# its two sub-agents' documents named by their agent ids.
OLD_CWD: Final = "/home/dev/grinder"
OLD_MAIN: Final = "6e1f0000-0000-4000-8000-00000000d004"
AGENT_FOUND: Final = "k3x9qa"  # finished: its summary is in the call's result
AGENT_FAILED: Final = "b7w2zc"  # timed out: no summary, told by when it last wrote
FOUND_TASK: Final = "Running subagent 'codebase_investigator' with inputs: { objective: presets }"
FAILED_TASK: Final = "Running subagent 'codebase_investigator' with inputs: { objective: burrs }"
# What the found sub-agent returned (its complete_task output) and the summary saved from it.
FOUND_RESULT: Final = (
    '{"SummaryOfFindings": "Grinder presets load from presets.toml through load_presets() '
    "in grinder/config.py; the fine presets set burr_gap below 0.2 mm, which is where the "
    'squeak starts.", "RelevantLocations": [{"FilePath": "grinder/config.py"}]}'
)
FOUND_SUMMARY: Final = FOUND_RESULT[:197] + "..."
# Events per session as the converter makes them (the sub-agent's title included).
MAIN_EVENTS: Final = 13
SUB_EVENTS: Final = 7
LEGACY_EVENTS: Final = 6
OLD_MAIN_EVENTS: Final = 7
FOUND_EVENTS: Final = 8  # start, title, prompt, 2 x (call, result), its summary
FAILED_EVENTS: Final = 5  # start, title, prompt, call, result
# Records the converter skips, counted by kind.
MAIN_SKIPPED: Final = {"record:$rewindTo": 1, "record:unknown": 1}


def _time(minute: int) -> str:
    return f"2025-06-01T09:{minute:02d}:00.000Z"


def _lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def _read_call(status: str, result: bool) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": "read_file-1", "name": "read_file", "args": {"absolute_path": f"{CWD}/pump.yaml"},
        "status": status, "timestamp": _time(3), "displayName": "ReadFile",
        "description": "Reads a file", "renderOutputAsMarkdown": True,
    }  # fmt: skip
    if result:
        call["result"] = [{"functionResponse": {
            "id": "read_file-1", "name": "read_file",
            "response": {"output": "pump:\n  pressure_bar: 15\n  profile: standard"}}}]  # fmt: skip
        call["resultDisplay"] = "pump.yaml (3 lines)"
    return call


def main_session() -> list[dict[str, Any]]:
    """A JSONL session: its messages in the order the CLI appends them."""
    thinking = [{"subject": "Checking pump", "description": "The pressure may be too high.",
                 "timestamp": _time(2)}]  # fmt: skip
    first_reply = {
        "id": "g-1", "timestamp": _time(2), "type": "gemini", "model": "gemini-2.5-pro",
        "content": "Let me look at the pump settings.", "thoughts": thinking,
    }  # fmt: skip
    return [
        {"sessionId": MAIN, "projectHash": PROJECT_HASH, "startTime": _time(0),
         "lastUpdated": _time(0), "kind": "main"},
        {"id": "u-1", "timestamp": _time(1), "type": "user",
         "content": [{"text": "the espresso machine pump is loud, can we make it quieter?"}]},
        first_reply,
        {"$set": {"lastUpdated": _time(2)}},
        # The same message again: its tool call scheduled, then again with the result.
        {**first_reply, "toolCalls": [_read_call("executing", result=False)]},
        {**first_reply, "toolCalls": [_read_call("success", result=True)],
         "tokens": {"input": 900, "output": 40, "cached": 0, "total": 940}},
        {"id": "g-2", "timestamp": _time(4), "type": "gemini", "content": "",
         "toolCalls": [{"id": "agent-1", "name": "codebase_investigator", "agentId": SUB,
                        "args": {"objective": SUB_TASK}, "status": "success",
                        "timestamp": _time(4), "description": SUB_TASK,
                        "result": [{"text": "profile 'quiet' lowers pressure to 9 bar"}]}]},
        {"id": "i-1", "timestamp": _time(5), "type": "info", "content": "Request cancelled."},
        {"$set": {"summary": SUMMARY}},
        {"$checkpoint": {"tag": "before-profile"}},  # a record type this importer does not know
        {"id": "u-2", "timestamp": _time(6), "type": "user", "content": "switch to the quiet one"},
        {"$rewindTo": "u-2"},
        {"id": "u-3", "timestamp": _time(7), "type": "user",
         "content": "use the quiet pump profile from now on"},
        {"id": "g-3", "timestamp": _time(8), "type": "gemini",
         "content": [{"text": "Done: profile set to quiet (9 bar)."}]},
    ]  # fmt: skip


def sub_session() -> list[dict[str, Any]]:
    return [
        {"sessionId": SUB, "projectHash": PROJECT_HASH, "startTime": _time(4),
         "lastUpdated": _time(4), "kind": "subagent", "directories": [CWD]},
        {"id": "s-1", "timestamp": _time(4), "type": "user", "content": SUB_TASK},
        {"id": "s-2", "timestamp": _time(4), "type": "gemini", "content": "",
         "toolCalls": [{"id": "grep-1", "name": "search_file_content",
                        "args": {"pattern": "profile"}, "status": "error", "timestamp": _time(4),
                        "result": [{"functionResponse": {"id": "grep-1", "name": "grep",
                                    "response": {"error": "pattern matched 0 files"}}}]}]},
        {"id": "s-3", "timestamp": _time(5), "type": "gemini",
         "content": "profile 'quiet' lowers pressure to 9 bar"},
        # Saved when the sub-agent finished: its result, not a title.
        {"$set": {"summary": SUB_RESULT}},
    ]  # fmt: skip


def legacy_session() -> dict[str, Any]:
    """An older CLI's whole-document session: string contents, no kind, no marker."""
    return {
        "sessionId": LEGACY, "projectHash": PROJECT_HASH, "startTime": "2025-05-02T10:00:00.000Z",
        "lastUpdated": "2025-05-02T10:03:00.000Z",
        "messages": [
            {"id": "l-1", "timestamp": "2025-05-02T10:00:00.000Z", "type": "user",
             "content": "grinder burrs squeak at fine settings"},
            {"id": "l-2", "timestamp": "2025-05-02T10:01:00.000Z", "type": "gemini",
             "content": "Checking the grinder calibration.",
             "toolCalls": [{"id": "shell-1", "name": "run_shell_command",
                            "args": {"command": "grinder --calibrate"}, "status": "success",
                            "timestamp": "2025-05-02T10:01:00.000Z",
                            "resultDisplay": "calibrated: burr gap 0.2 mm"}]},
            {"id": "l-3", "timestamp": "2025-05-02T10:03:00.000Z", "type": "error",
             "content": "API quota exceeded"},
        ],
    }  # fmt: skip


def _old(minute: int) -> str:
    return f"2026-03-20T10:{minute:02d}:00.000Z"


def _agent_call(n: int, task: str, output: str, state: str, minute: int) -> dict[str, Any]:
    """A sub-agent call as the parent recorded it when it completed: no ``agentId``."""
    call_id = f"codebase_investigator-{n}"
    return {
        "id": call_id, "name": "codebase_investigator", "args": {"objective": task[-14:]},
        "status": "success", "timestamp": _old(minute),
        "result": [{"functionResponse": {"id": call_id, "name": "codebase_investigator",
                                         "response": {"output": output}}}],
        "resultDisplay": {"isSubagentProgress": True, "agentName": "codebase_investigator",
                          "recentActivity": [], "state": state},
        "displayName": "Codebase Investigator Agent", "description": task,
        "renderOutputAsMarkdown": True,
    }  # fmt: skip


def old_session() -> dict[str, Any]:
    """The parent: a prompt, two sub-agent calls in two replies, an answer."""
    found = (f"Subagent 'codebase_investigator' finished.\nTermination Reason: GOAL\n"
             f"Result:\n{FOUND_RESULT}")  # fmt: skip
    failed = ("Subagent 'codebase_investigator' finished.\nTermination Reason: TIMEOUT\n"
              "Result:\nAgent timed out after 5 minutes.")  # fmt: skip
    return {
        "sessionId": OLD_MAIN, "projectHash": "5e" * 32, "startTime": _old(0),
        "lastUpdated": _old(30), "kind": "main",
        "messages": [
            {"id": "o-1", "timestamp": _old(0), "type": "user",
             "content": [{"text": "why do the burrs squeak on fine presets?"}]},
            {"id": "o-2", "timestamp": _old(4), "type": "gemini", "content": "",
             "toolCalls": [_agent_call(1, FOUND_TASK, found, "completed", 4)]},
            {"id": "o-3", "timestamp": _old(20), "type": "gemini", "content": "",
             "toolCalls": [_agent_call(2, FAILED_TASK, failed, "completed", 20)]},
            {"id": "o-4", "timestamp": _old(30), "type": "gemini",
             "content": "The fine presets close the burr gap below 0.2 mm."},
        ],
    }  # fmt: skip


def old_agent(agent: str) -> dict[str, Any]:
    """A sub-agent's document: the query, its tool calls, and (finished) its summary."""
    finished = agent == AGENT_FOUND
    first, last = (1, 4) if finished else (6, 19)
    prompt = "Find where the grinder " + ("presets load" if finished else "burrs squeak")
    call = {"id": f"{agent}#0-0", "name": "read_file", "args": {"file_path": "config.py"},
            "status": "success", "timestamp": _old(first),
            "result": [{"functionResponse": {
                "id": f"{agent}#0-0", "name": "read_file",
                "response": {"output": "def load_presets():"}}}]}  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"id": f"{agent}-1", "timestamp": _old(first), "type": "user",
         "content": [{"text": prompt}]},
        {"id": f"{agent}-2", "timestamp": _old(first), "type": "gemini", "content": "",
         "toolCalls": [call]},
    ]  # fmt: skip
    if finished:
        done = {"id": f"{agent}#1-0", "name": "complete_task", "status": "success",
                "args": {"report": FOUND_RESULT}, "timestamp": _old(last),
                "result": [{"functionResponse": {
                    "id": f"{agent}#1-0", "name": "complete_task",
                    "response": {"output": "Submitted."}}}]}  # fmt: skip
        messages.append({"id": f"{agent}-3", "timestamp": _old(last), "type": "gemini",
                         "content": "", "toolCalls": [done]})  # fmt: skip
    document: dict[str, Any] = {
        "sessionId": agent, "projectHash": "5e" * 32, "startTime": _old(first),
        "lastUpdated": _old(last), "kind": "subagent", "directories": [OLD_CWD],
        "messages": messages,
    }  # fmt: skip
    if finished:
        document["summary"] = FOUND_SUMMARY
    return document


def write_old(tmp: Path) -> Path:
    """The March 2026 project under ``tmp``; returns its chats folder. The failed agent's
    file comes first by name, so finding the calls does not depend on the order read."""
    project = tmp / "grinder"
    chats = project / "chats"
    (chats / OLD_MAIN).mkdir(parents=True)
    (project / ".project_root").write_text(OLD_CWD)
    indented = orjson.OPT_INDENT_2
    (chats / f"session-2026-03-20T10-00-{OLD_MAIN[:8]}.json").write_bytes(
        orjson.dumps(old_session(), option=indented)
    )
    for agent in (AGENT_FOUND, AGENT_FAILED):
        (chats / OLD_MAIN / f"{agent}.json").write_bytes(
            orjson.dumps(old_agent(agent), option=indented)
        )
    return chats


def write(home: Path) -> Path:
    """The history under ``home/.gemini/tmp``; returns that folder."""
    tmp = home / ".gemini" / "tmp"
    project = tmp / "espresso-app"
    chats = project / "chats"
    (chats / MAIN).mkdir(parents=True)
    (project / ".project_root").write_text(CWD)
    (chats / f"session-2025-06-01T09-00-{MAIN[:8]}.jsonl").write_bytes(_lines(main_session()))
    (chats / MAIN / f"{SUB}.jsonl").write_bytes(_lines(sub_session()))
    old = tmp / PROJECT_HASH / "chats"
    old.mkdir(parents=True)
    document = orjson.dumps(legacy_session(), option=orjson.OPT_INDENT_2)
    (old / f"session-2025-05-02T10-00-{LEGACY[:8]}.json").write_bytes(document)
    write_old(tmp)
    return tmp


# Seen in real homes: a project first recorded in a folder named by the path's digest, then
# (newer CLI) in a folder named by a slug with its marker; the CLI copied the older
# folder's chats there under the same names and went on in the copies, leaving the old
# files behind. And one process's session id reused for the next chat file it starts
# (``/clear``): two files, two conversations, one ``sessionId``.
MIGRATED_CWD: Final = "c:\\users\\dev\\roaster"
MIGRATED_HASH: Final = "5a7e" * 16
MOVED: Final = "6e1f0000-0000-4000-8000-00000000e005"  # in both folders, continued in the new
LEFT: Final = "6e1f0000-0000-4000-8000-00000000f006"  # only in the old folder
REUSED: Final = "6e1f0000-0000-4000-8000-00000000a007"  # two chat files, one id
REUSED_LATER: Final = f"{REUSED}-2026-01-26T05-29"  # the later file's session


def _chat(session: str, start: str, prompts: list[str]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for n, prompt in enumerate(prompts):
        messages += [
            {"id": f"{session[-4:]}-u{n}", "timestamp": start, "type": "user", "content": prompt},
            {"id": f"{session[-4:]}-g{n}", "timestamp": start, "type": "gemini",
             "content": f"answer to {prompt}"},
        ]  # fmt: skip
    return {"sessionId": session, "projectHash": MIGRATED_HASH, "startTime": start,
            "lastUpdated": start, "messages": messages}  # fmt: skip


def write_migrated(tmp: Path) -> None:
    """The two folders of one project under ``tmp`` (``~/.gemini/tmp``)."""
    old, new = tmp / MIGRATED_HASH / "chats", tmp / "roaster" / "chats"
    old.mkdir(parents=True)
    new.mkdir(parents=True)
    (tmp / "roaster" / ".project_root").write_text(MIGRATED_CWD)
    moved = f"session-2026-02-19T16-11-{MOVED[:8]}.json"
    start = "2026-02-19T16:11:00.000Z"
    (old / moved).write_bytes(orjson.dumps(_chat(MOVED, start, ["roast curve"])))
    (new / moved).write_bytes(orjson.dumps(_chat(MOVED, start, ["roast curve", "first crack"])))
    (old / f"session-2026-01-10T08-00-{LEFT[:8]}.json").write_bytes(
        orjson.dumps(_chat(LEFT, "2026-01-10T08:00:00.000Z", ["bean density"]))
    )
    (new / f"session-2026-01-25T21-01-{REUSED[:8]}.json").write_bytes(
        orjson.dumps(_chat(REUSED, "2026-01-25T21:01:00.000Z", ["drum speed", "airflow"]))
    )
    (new / f"session-2026-01-26T05-29-{REUSED[:8]}.json").write_bytes(
        orjson.dumps(_chat(REUSED, "2026-01-26T05:29:00.000Z", ["cooling tray"]))
    )


# Newer versions register each project in ``~/.gemini/projects.json`` (its path -> the
# slug naming its folders) and mark ``history/<slug>`` as well as ``tmp/<slug>``; a real
# home had chats in a ``tmp/<slug>`` folder without its marker.
REGISTERED_CWD: Final = "/home/dev/tamper"
REGISTERED: Final = "6e1f0000-0000-4000-8000-00000000b008"
DIGESTED_CWD: Final = "/home/dev/scale"
DIGESTED: Final = "6e1f0000-0000-4000-8000-00000000c009"


def write_registered(gemini: Path) -> None:
    """Under ``gemini`` (``~/.gemini``): a slug folder marked only in ``history``, and a
    digest-named folder whose path the registry lists."""
    tmp = gemini / "tmp"
    (gemini / "history" / "tamper").mkdir(parents=True)
    (gemini / "history" / "tamper" / ".project_root").write_text(REGISTERED_CWD)
    digest = hashlib.sha256(DIGESTED_CWD.encode()).hexdigest()
    registry = {"projects": {REGISTERED_CWD: "tamper", DIGESTED_CWD: "scale"}}
    (gemini / "projects.json").write_bytes(orjson.dumps(registry))
    for folder, session in (("tamper", REGISTERED), (digest, DIGESTED)):
        (tmp / folder / "chats").mkdir(parents=True)
        chat = _chat(session, "2026-04-28T15:09:00.000Z", ["level the tamper"])
        (tmp / folder / "chats" / f"session-2026-04-28T15-09-{session[:8]}.json").write_bytes(
            orjson.dumps(chat)
        )


# Seen in a real Windows home: the CLI once run in the home folder (an older version: a
# folder named by the digest of the path as the shell gave it, no marker, never copied to
# a newer folder), and a project under it marked by a newer version (which lowers the path).
HOME_PROJECT_CWD: Final = "c:\\users\\potter\\dev\\glaze"
HOME_CWD: Final = "C:\\Users\\potter"
AT_HOME: Final = "7a2c0000-0000-4000-8000-00000000d010"
IN_PROJECT: Final = "8b3d0000-0000-4000-8000-00000000d011"


def write_home_digest(tmp: Path) -> None:
    """Under ``tmp`` (``~/.gemini/tmp``): the marked project and the home's digest folder."""
    digest = hashlib.sha256(HOME_CWD.encode()).hexdigest()
    (tmp / "glaze").mkdir(parents=True)
    (tmp / "glaze" / ".project_root").write_text(HOME_PROJECT_CWD)
    for folder, session in (("glaze", IN_PROJECT), (digest, AT_HOME)):
        (tmp / folder / "chats").mkdir(parents=True, exist_ok=True)
        chat = _chat(session, "2025-10-30T23:47:38.483Z", ["say hello"])
        (tmp / folder / "chats" / f"session-2025-10-30T23-33-{session[:8]}.json").write_bytes(
            orjson.dumps(chat)
        )


# An older folder named by the digest of the project's path as an editor gave it on
# Windows (the drive letter lowered, a folder name in capitals: seen in a real home), beside
# the newer folder whose marker the CLI lowered whole; no chat of one is in the other.
CAPITALS_CWD: Final = "c:\\Users\\potter\\Documents\\KILN-LOG"
CAPITALS_MARKER: Final = "c:\\users\\potter\\documents\\kiln-log"
IN_CAPITALS: Final = "9c4e0000-0000-4000-8000-00000000d012"
IN_LOWERED: Final = "9c4e0000-0000-4000-8000-00000000d013"


def write_capitals_digest(tmp: Path) -> None:
    """Under ``tmp`` (``~/.gemini/tmp``): the marked project and its older digest folder."""
    digest = hashlib.sha256(CAPITALS_CWD.encode()).hexdigest()
    (tmp / "kiln-log").mkdir(parents=True)
    (tmp / "kiln-log" / ".project_root").write_text(CAPITALS_MARKER)
    for folder, session, minute in (("kiln-log", IN_LOWERED, 40), (digest, IN_CAPITALS, 33)):
        (tmp / folder / "chats").mkdir(parents=True, exist_ok=True)
        chat = _chat(session, f"2025-10-30T23:{minute}:38.483Z", ["say hello"])
        name = f"session-2025-10-30T23-{minute}-{session[:8]}.json"
        (tmp / folder / "chats" / name).write_bytes(orjson.dumps(chat))


# An older digest-named folder of another machine's home (seen in a real Cloud Shell home):
# no marker, no registry, no newer folder; its chats' tool calls show paths in the
# project, one chat none. The digest is of the folder the CLI ran in.
SHOWN_CWD: Final = "/home/potter/glaze"
SHOWING: Final = "7a2c0000-0000-4000-8000-00000000d020"
SHOWING_NONE: Final = "7a2c0000-0000-4000-8000-00000000d021"


def write_shown_digest(tmp: Path) -> None:
    """Under ``tmp`` (``~/.gemini/tmp``): the digest folder of ``SHOWN_CWD``."""
    chats = tmp / hashlib.sha256(SHOWN_CWD.encode()).hexdigest() / "chats"
    chats.mkdir(parents=True)
    start = "2025-11-04T02:35:00.000Z"
    showing = _chat(SHOWING, start, ["read the glaze recipe"])
    showing["messages"][1]["toolCalls"] = [
        {"id": "read_file-1", "name": "read_file", "status": "success", "timestamp": start,
         "args": {"absolute_path": f"{SHOWN_CWD}/recipes/celadon.md"},
         "result": [{"functionResponse": {"id": "read_file-1", "name": "read_file",
                                          "response": {"output": "feldspar 40"}}}]},
        {"id": "run_shell_command-1", "name": "run_shell_command", "status": "success",
         "timestamp": start, "args": {"command": "ls", "directory": f"{SHOWN_CWD}/recipes"},
         "result": [{"functionResponse": {"id": "run_shell_command-1",
                                          "name": "run_shell_command",
                                          "response": {"output": "celadon.md"}}}]},
    ]  # fmt: skip
    (chats / "session-2025-11-04T02-35-7a2cd020.json").write_bytes(orjson.dumps(showing))
    alone = _chat(SHOWING_NONE, "2025-11-04T03:00:00.000Z", ["hi"])
    (chats / "session-2025-11-04T03-00-7a2cd021.json").write_bytes(orjson.dumps(alone))


# Since May 2026 a new session's file opens with the CLI syncing its bootstrap history to
# the recording (``GeminiChat.initialize`` -> ``updateMessagesFromHistory``): a ``$set`` of
# ``messages`` holding the session context as a user turn never appended (seen in a real
# Cloud Shell home's June 2026 files), then the conversation appended as usual.
BOOTSTRAPPED: Final = "b0075000-0000-4000-8000-00000000e010"
BOOT_CONTEXT: Final = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat."
    "\nMy operating system is: linux\n- **Workspace Directories:**\n  - /home/dev/kiln\n"
    "</session_context>"
)


def bootstrapped_session() -> list[dict[str, Any]]:
    start = "2026-06-04T10:04:00.000Z"
    header = {"sessionId": BOOTSTRAPPED, "projectHash": "ab" * 32, "startTime": start,
              "lastUpdated": start, "kind": "main"}  # fmt: skip
    context = {"id": "0b0075e0000000000000000000000001", "timestamp": start, "type": "user",
               "content": [{"text": BOOT_CONTEXT}]}  # fmt: skip
    prompt = {"id": "b0075-u1", "timestamp": "2026-06-04T10:04:05.000Z", "type": "user",
              "content": [{"text": "what fires at cone 6?"}]}  # fmt: skip
    answer = {"id": "b0075-g1", "timestamp": "2026-06-04T10:04:09.000Z", "type": "gemini",
              "content": "Stoneware and porcelain.", "model": "gemini-3-flash-preview"}  # fmt: skip
    return [
        header,
        {"$set": {"messages": [context], "lastUpdated": start}},
        prompt,
        {"$set": {"lastUpdated": prompt["timestamp"]}},
        answer,
    ]


def write_bootstrapped(tmp: Path) -> None:
    chats = tmp / "kiln" / "chats"
    chats.mkdir(parents=True)
    (tmp / "kiln" / ".project_root").write_text("/home/dev/kiln")
    (chats / f"session-2026-06-04T10-04-{BOOTSTRAPPED[:8]}.jsonl").write_bytes(
        _lines(bootstrapped_session())
    )


# The a2a server (Cloud Shell's editor agent) records its own chats under the fixed id
# ``a2a-server`` (``packages/a2a-server``: ``loadConfig(..., 'a2a-server', ...)``), one file
# per start, ``session-<time>-a2a-serv.jsonl``, in each project folder it ran for (seen in
# real Cloud Shell homes): the header, and the bootstrap history or nothing, then a prompt.
A2A_FILES: Final = {
    ("admin", "2026-06-04T10-51"): None,
    ("admin", "2026-06-26T04-18"): "admin",
    ("code-oss-for-cloud-shell", "2026-06-04T11-22"): "editor",
}


def write_a2a_server(tmp: Path) -> None:
    for (folder, time), context in A2A_FILES.items():
        chats = tmp / folder / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        (tmp / folder / ".project_root").write_text(f"/home/dev/{folder}")
        start = f"{time[:13]}:{time[14:]}:00.000Z"
        records: list[dict[str, Any]] = [
            {"sessionId": "a2a-server", "projectHash": "ab" * 32, "startTime": start,
             "lastUpdated": start, "kind": "main"}]  # fmt: skip
        if context is not None:
            text = f"<session_context>\n{context}\n</session_context>"
            turn = {"id": f"{context:0>32}", "timestamp": start, "type": "user",
                    "content": [{"text": text}]}  # fmt: skip
            records.append({"$set": {"messages": [turn], "lastUpdated": start}})
        # A prompt: a file holding only the header (and context) is an empty chat, skipped.
        records.append({"id": f"a2a-{folder}-{time}", "timestamp": start, "type": "user",
                        "content": [{"text": f"open the {folder} workspace"}]})  # fmt: skip
        (chats / f"session-{time}-a2a-serv.jsonl").write_bytes(_lines(records))


# A chat file whose first lines, the header with them, are gone (seen in a real June 2026
# home, a session of an hour whose file starts 40 minutes in): messages only.
HEADLESS_FILE: Final = "session-2026-06-11T03-50-4ead1e55.jsonl"


def write_headless(tmp: Path) -> None:
    chats = tmp / "kiln" / "chats"
    chats.mkdir(parents=True)
    (tmp / "kiln" / ".project_root").write_text("/home/dev/kiln")
    call = {"id": "run_shell_command-1", "name": "run_shell_command", "status": "success",
            "timestamp": "2026-06-11T04:31:43.685Z", "args": {"command": "git mv a b"},
            "result": [{"functionResponse": {"id": "run_shell_command-1",
                                             "name": "run_shell_command",
                                             "response": {"output": "moved"}}}]}  # fmt: skip
    records: list[dict[str, Any]] = [
        {"id": "4ead-g1", "timestamp": "2026-06-11T04:31:43.685Z", "type": "gemini",
         "content": "", "toolCalls": [call], "model": "gemini-3-flash-preview"},
        {"$set": {"lastUpdated": "2026-06-11T04:31:44.909Z"}},
        {"id": "4ead-u1", "timestamp": "2026-06-11T04:32:10.000Z", "type": "user",
         "content": [{"text": "now commit it"}]},
        {"id": "4ead-g2", "timestamp": "2026-06-11T04:32:15.000Z", "type": "gemini",
         "content": "Committed.", "model": "gemini-3-flash-preview"},
    ]  # fmt: skip
    (chats / HEADLESS_FILE).write_bytes(_lines(records))


# Older chats without tool calls (seen in a real Sept 2025 home): only the messages' text
# names paths, here a file in the project folder whose digest names the chats' folder.
MENTIONING: Final = "7a2c0000-0000-4000-8000-00000000d022"


def write_mentioned_digest(tmp: Path) -> None:
    chats = tmp / hashlib.sha256(SHOWN_CWD.encode()).hexdigest() / "chats"
    chats.mkdir(parents=True)
    chat = _chat(MENTIONING, "2025-09-19T09:27:00.000Z", ["where are the recipes?"])
    chat["messages"][1]["content"] = f"They are in `{SHOWN_CWD}/recipes/celadon.md`."
    (chats / "session-2025-09-19T09-27-7a2cd022.json").write_bytes(orjson.dumps(chat))


# Two older digest folders of one home: the second's chat names no path, the first's
# names the second's project folder (seen in a real home: a digest named only elsewhere).
NAMED_ELSEWHERE: Final = "7a2c0000-0000-4000-8000-00000000d023"
ELSEWHERE_CWD: Final = "/home/potter/kiln-log"


def write_named_elsewhere(tmp: Path) -> None:
    write_mentioned_digest(tmp)
    naming = tmp / hashlib.sha256(SHOWN_CWD.encode()).hexdigest() / "chats"
    other = _chat("7a2c0000-0000-4000-8000-00000000d024", "2025-09-19T10:00:00.000Z", ["hi"])
    other["messages"][1]["content"] = f"The log is kept in {ELSEWHERE_CWD}, not here."
    (naming / "session-2025-09-19T10-00-7a2cd024.json").write_bytes(orjson.dumps(other))
    chats = tmp / hashlib.sha256(ELSEWHERE_CWD.encode()).hexdigest() / "chats"
    chats.mkdir(parents=True)
    alone = _chat(NAMED_ELSEWHERE, "2025-09-20T08:00:00.000Z", ["fire it"])
    (chats / "session-2025-09-20T08-00-7a2cd023.json").write_bytes(orjson.dumps(alone))


# A newer project folder (named by the slug of the project's folder name) without its
# marker and without a registry (seen in a real home): its chats' tool calls show paths in
# the project; in the second home two folders of that name are shown.
SLUG_CWD: Final = "/home/potter/Glaze Lab"


def write_shown_slug(tmp: Path, *, twice: bool = False) -> str:
    """A chat under ``tmp/glaze-lab``; returns its session id."""
    chats = tmp / "glaze-lab" / "chats"
    chats.mkdir(parents=True)
    session = "9d1e0000-0000-4000-8000-00000000d030"
    chat = _chat(session, "2026-06-11T03:50:00.000Z", ["list the recipes"])
    shown = [f"{SLUG_CWD}/recipes"] + (["/srv/old/glaze_lab/recipes"] if twice else [])
    chat["messages"][1]["toolCalls"] = [
        {"id": f"list_directory-{n}", "name": "list_directory", "status": "success",
         "timestamp": "2026-06-11T03:50:00.000Z", "args": {"dir_path": path},
         "result": [{"functionResponse": {"id": f"list_directory-{n}",
                                          "name": "list_directory",
                                          "response": {"output": "celadon.md"}}}]}
        for n, path in enumerate(shown)
    ]  # fmt: skip
    (chats / "session-2026-06-11T03-50-9d1e0000.json").write_bytes(orjson.dumps(chat))
    return session


# One record of each kind Gemini CLI 0.61.0's chat recording writes (skips.WRITER_KINDS),
# in its shapes, made-up content: the header; messages of each type, with the parts its
# callers record (a tool's response sent back as a user message, a history rewritten
# whole with its calls, images and files, the "info" message a binary injection writes);
# ``$set`` of each field it updates; a rewind.
EVERY_KIND: Final = "6e1f0000-0000-4000-8000-00000000c0de"


def every_writer_kind() -> list[dict[str, Any]]:
    png = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    pdf = {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}}
    response = {
        "functionResponse": {
            "id": "read_file-1",
            "name": "read_file",
            "response": {"output": "pump:\n  pressure_bar: 15"},
        }
    }
    reply = {
        "id": "g-1",
        "timestamp": _time(2),
        "type": "gemini",
        "model": "gemini-x",
        "content": [{"text": "Let me read it."}],
        "thoughts": [{"subject": "Reading", "description": "The config.", "timestamp": _time(2)}],
        "toolCalls": [_read_call("success", result=True)],
    }
    return [
        {"sessionId": EVERY_KIND, "projectHash": PROJECT_HASH, "startTime": _time(0),
         "lastUpdated": _time(0), "kind": "main", "directories": [CWD]},
        {"$set": {"sessionId": EVERY_KIND}},
        {"id": "u-1", "timestamp": _time(1), "type": "user",
         "content": [{"text": "Why is the pump loud? See the photo."}, png,
                     {"fileData": {"mimeType": "application/pdf",
                                   "fileUri": "file:///manual.pdf"}}],
         "displayContent": [{"text": "Why is the pump loud? @photo.png"}]},
        {"$set": {"lastUpdated": _time(1)}},
        reply,
        {"id": "u-2", "timestamp": _time(3), "type": "user", "content": [response]},
        {"id": "i-1", "timestamp": _time(3), "type": "info", "content": [pdf]},
        {"id": "g-2", "timestamp": _time(4), "type": "gemini",
         "content": [{"functionCall": {"id": "read_file-2", "name": "read_file",
                                       "args": {"absolute_path": f"{CWD}/pump.yaml"}}}]},
        {"id": "g-3", "timestamp": _time(5), "type": "gemini",
         "content": [{"text": "Lower the pressure to 9 bar."}]},
        {"$set": {"summary": SUMMARY}},
        {"$set": {"directories": [CWD, f"{CWD}/firmware"]}},
        {"$set": {"memoryScratchpad": {"workflowSummary": "Read pump.yaml; lowered it."}}},
        {"$set": {"messages": [reply], "lastUpdated": _time(6)}},
        {"$rewindTo": "g-3"},
    ]  # fmt: skip


def write_every_writer_kind(home: Path) -> Path:
    project = home / ".gemini" / "tmp" / "espresso-app"
    chats = project / "chats"
    chats.mkdir(parents=True)
    (project / ".project_root").write_text(CWD)
    path = chats / f"session-2026-12-07T10-00-{EVERY_KIND[:8]}.jsonl"
    path.write_bytes(_lines(every_writer_kind()))
    return path


# Gemini CLI 0.61.0's memory service runs a skill-extraction agent of its own: a
# ``LocalAgentExecutor`` whose context's promptId is ``skill-extraction-<8 hex>``, so its
# chat is ``chats/skill-extraction-<8 hex>/<agent id>.jsonl`` (``kind: subagent``) and its
# user message is the service's prompt: the session index it built, then instructions.
EXTRACTION_RUN: Final = "skill-extraction-3f9a1c2e"
EXTRACTOR: Final = "6e1f0000-0000-4000-8000-0000000e1001"
EXTRACTION_PROMPT: Final = (
    "# Session Index\n\n[NEW] Quieter espresso pump (12 messages) "
    f"{CWD}/chats/session-2025-06-01T09-00-{MAIN[:8]}.jsonl\n\n"
    "Analyze the session index above. Only write a skill if the evidence shows a durable,"
    " recurring workflow."
)


def skill_extraction_run() -> list[dict[str, Any]]:
    return [
        {"sessionId": EXTRACTOR, "projectHash": PROJECT_HASH, "startTime": _time(30),
         "lastUpdated": _time(30), "kind": "subagent", "directories": [CWD]},
        {"id": "x-1", "timestamp": _time(30), "type": "user",
         "content": [{"text": EXTRACTION_PROMPT}]},
        {"id": "x-2", "timestamp": _time(31), "type": "gemini", "content": "",
         "toolCalls": [{"id": "read_file-9", "name": "read_file",
                        "args": {"absolute_path": f"chats/session-{MAIN[:8]}.jsonl"},
                        "status": "success", "timestamp": _time(31),
                        "result": [{"functionResponse": {"id": "read_file-9",
                                    "name": "read_file",
                                    "response": {"output": "use the quiet pump profile"}}}]}]},
        {"id": "x-3", "timestamp": _time(32), "type": "gemini",
         "content": "No recurring workflow: no skill written."},
    ]  # fmt: skip


def write_skill_extraction(tmp: Path) -> Path:
    """The run's chat in the project folder of ``write``; returns its path."""
    folder = tmp / "espresso-app" / "chats" / EXTRACTION_RUN
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{EXTRACTOR}.jsonl"
    path.write_bytes(_lines(skill_extraction_run()))
    return path


# A chat the CLI created and nothing was said in yet (it writes the header, and since May
# 2026 the bootstrap context, before the first prompt; a user who quits leaves it so).
EMPTY: Final = "e3c70000-0000-4000-8000-00000000e011"
EMPTY_FILE: Final = f"session-2026-06-05T08-00-{EMPTY[:8]}.jsonl"


def empty_session(*, context: bool = True) -> list[dict[str, Any]]:
    start = "2026-06-05T08:00:00.000Z"
    records: list[dict[str, Any]] = [
        {"sessionId": EMPTY, "projectHash": "ab" * 32, "startTime": start,
         "lastUpdated": start, "kind": "main"}]  # fmt: skip
    if context:
        turn = {"id": "0e3c70000000000000000000000000001", "timestamp": start, "type": "user",
                "content": [{"text": BOOT_CONTEXT}]}  # fmt: skip
        records.append({"$set": {"messages": [turn], "lastUpdated": start}})
    return records


def first_prompt() -> list[dict[str, Any]]:
    """What the CLI appends to the empty chat when the user says something."""
    return [
        {"id": "e3c7-u1", "timestamp": "2026-06-05T08:03:00.000Z", "type": "user",
         "content": [{"text": "how long does bisque take?"}]},
        {"$set": {"lastUpdated": "2026-06-05T08:03:00.000Z"}},
    ]  # fmt: skip


def write_empty(tmp: Path, *, context: bool = True) -> Path:
    chats = tmp / "kiln" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (tmp / "kiln" / ".project_root").write_text("/home/dev/kiln")
    path = chats / EMPTY_FILE
    path.write_bytes(_lines(empty_session(context=context)))
    return path
