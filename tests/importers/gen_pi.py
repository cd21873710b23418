"""A generated Pi coding agent history (``~/.pi/agent/sessions``), made-up content.

The shapes follow Pi's own session manager (``packages/coding-agent/src/core/
session-manager.ts`` of badlogic/pi-mono, session versions 1–3): a ``session`` header,
entries in a tree by ``id``/``parentId`` with a branch going back to an earlier entry,
compaction with ``firstKeptEntryId``, ``branch_summary``, ``session_info``, user ``!``
commands (``bashExecution``), a version 1 file without ids, and a session forked into a
new file that names its ``parentSession``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

CWD: Final = "/home/dev/tamper"
MAIN: Final = "9e000000-0000-4000-8000-00000000a001"
FORK: Final = f"{MAIN}-fork-e07"  # the branch from entry e02
OLD: Final = "9e000000-0000-4000-8000-00000000b002"
SPLIT: Final = "9e000000-0000-4000-8000-00000000c003"  # forked into its own file
TITLE: Final = "Tamper sensor fix"
EVENTS: Final = {MAIN: 8, FORK: 8, OLD: 3, SPLIT: 2}
SKIPPED: Final = {
    "record:model_change": 1, "record:label": 1, "record:future_entry:new": 1,
}  # fmt: skip
FOLDER: Final = "--home-dev-tamper--"


def _time(minute: int) -> str:
    return f"2025-08-01T07:{minute:02d}:00.000Z"


def _entry(n: int, parent: int | None, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": f"e{n:02d}", "parentId": f"e{parent:02d}" if parent else None,
            "timestamp": _time(n), **fields}  # fmt: skip


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "provider": "anthropic",
            "model": "claude-sonnet-4", "stopReason": "stop", "timestamp": 2}  # fmt: skip


def main_session() -> list[dict[str, Any]]:
    """A tree: e01..e06 in a line, then a branch from e02 (e07..e14)."""
    return [
        {"type": "session", "version": 3, "id": MAIN, "timestamp": _time(0), "cwd": CWD},
        _entry(1, None, "model_change", provider="anthropic", modelId="claude-sonnet-4"),
        _entry(2, 1, "message", message=_user("the tamper sensor reads zero")),
        _entry(3, 2, "message", message=_assistant(
            {"type": "thinking", "thinking": "Could be wiring or calibration."},
            {"type": "text", "text": "Reading the sensor driver."},
            {"type": "toolCall", "id": "tc-1", "name": "read", "arguments": {"path": "sensor.c"}},
        )),
        _entry(4, 3, "message", message={
            "role": "toolResult", "toolCallId": "tc-1", "toolName": "read", "isError": False,
            "content": [{"type": "text", "text": "int read_tamper(void) { return 0; }"}],
            "timestamp": 3}),
        _entry(5, 4, "message", message=_assistant(
            {"type": "text", "text": "read_tamper always returns 0: the wire is never read."})),
        _entry(6, 5, "session_info", name=TITLE),
        # Back at e02, the user goes another way: the abandoned branch's summary first.
        _entry(7, 2, "branch_summary", fromId="e06",
               summary="Found read_tamper stubbed to return 0."),
        _entry(8, 7, "message", message=_user("check the calibration instead")),
        _entry(9, 8, "message", message={
            "role": "bashExecution", "command": "tamper --calibrate",
            "output": "offset 0.0 g, gain 1.0", "exitCode": 0, "timestamp": 4}),
        _entry(10, 9, "message", message=_assistant(
            {"type": "text", "text": "Calibration is at factory defaults."})),
        _entry(11, 10, "compaction", summary="Tamper reads zero; calibration default.",
               firstKeptEntryId="e10", tokensBefore=42_000),
        _entry(12, 11, "label", targetId="e10", label="calibration"),
        _entry(13, 12, "custom_message", customType="note", display=True,
               content="extension note: sensor model TS-2"),
        _entry(14, 13, "future_entry", detail="an entry type this importer does not know"),
    ]  # fmt: skip


def old_session() -> list[dict[str, Any]]:
    """Version 1: no ids, no version, an empty cwd."""
    return [
        {"type": "session", "id": OLD, "timestamp": _time(30), "cwd": ""},
        {"type": "message", "timestamp": _time(31), "message": _user("grind size for ristretto")},
        {"type": "message", "timestamp": _time(32),
         "message": _assistant({"type": "text", "text": "Go two steps finer than espresso."})},
    ]  # fmt: skip


def split_session(folder: Path) -> list[dict[str, Any]]:
    parent = folder / f"2025-08-01T07-00-00-000Z_{MAIN}.jsonl"
    return [
        {"type": "session", "version": 3, "id": SPLIT, "timestamp": _time(40), "cwd": CWD,
         "parentSession": str(parent)},
        _entry(41, None, "message", message=_user("carry on from the calibration")),
    ]  # fmt: skip


def lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def write(home: Path) -> Path:
    """The history under ``home/.pi/agent/sessions``; returns that folder."""
    sessions = home / ".pi" / "agent" / "sessions"
    folder = sessions / FOLDER
    folder.mkdir(parents=True)
    (folder / f"2025-08-01T07-00-00-000Z_{MAIN}.jsonl").write_bytes(lines(main_session()))
    (folder / f"2025-08-01T07-40-00-000Z_{SPLIT}.jsonl").write_bytes(lines(split_session(folder)))
    old = sessions / "--home-dev-grinder--"
    old.mkdir()
    (old / f"2025-08-01T07-30-00-000Z_{OLD}.jsonl").write_bytes(lines(old_session()))
    return sessions


# Seen in a real home (the openai-codex provider, gpt-5.x): reasoning the API returned
# only encrypted is kept as a thinking block with empty text and the reasoning item in
# its signature.
ENCRYPTED: Final = "9e000000-0000-4000-8000-00000000d004"


def encrypted_thinking_session() -> list[dict[str, Any]]:
    sealed = {"type": "thinking", "thinking": "",
              "thinkingSignature": '{"id":"rs_0d8a","type":"reasoning","summary":[],'
                                   '"encrypted_content":"gAAAAB"}'}  # fmt: skip
    return [
        {"type": "session", "version": 3, "id": ENCRYPTED, "timestamp": _time(0), "cwd": CWD},
        _entry(1, None, "message", message=_user("is the tamper sensor calibrated?")),
        _entry(2, 1, "message", message=_assistant(
            sealed, {"type": "text", "text": "Yes, against the 20 kg weight."})),
    ]  # fmt: skip


# One entry of each type, and one message of each role, Pi 0.73.1's session manager
# writes (skips.WRITER_KINDS), in its shapes, made-up content.
EVERY_KIND: Final = "9e000000-0000-4000-8000-00000000c0de"


def every_writer_kind() -> list[dict[str, Any]]:
    return [
        {"type": "session", "version": 3, "id": EVERY_KIND, "timestamp": _time(0), "cwd": CWD},
        _entry(1, None, "model_change", provider="anthropic", modelId="claude-x"),
        _entry(2, 1, "thinking_level_change", thinkingLevel="high"),
        _entry(3, 2, "message", message=_user("the tamper sensor reads zero")),
        _entry(4, 3, "message", message=_assistant(
            {"type": "toolCall", "id": "tc-1", "name": "read", "arguments": {"path": "s.c"}})),
        _entry(5, 4, "message", message={
            "role": "toolResult", "toolCallId": "tc-1", "toolName": "read", "isError": False,
            "content": [{"type": "text", "text": "return 0;"}], "timestamp": 3}),
        _entry(6, 5, "message", message={
            "role": "bashExecution", "command": "make test", "output": "ok", "exitCode": 0,
            "cancelled": False, "truncated": False, "timestamp": 4}),
        _entry(7, 6, "message", message={
            "role": "custom", "customType": "note", "content": "sensor model TS-2",
            "display": True, "timestamp": 5}),
        _entry(8, 7, "custom", customType="state", data={"open": 1}),
        _entry(9, 8, "custom_message", customType="note", display=True, content="a note"),
        _entry(10, 9, "label", targetId="e05", label="found"),
        _entry(11, 10, "session_info", name=TITLE),
        _entry(12, 11, "branch_summary", fromId="e10", summary="Tried the wiring first."),
        _entry(13, 12, "compaction", summary="Sensor stubbed.", firstKeptEntryId="e12",
               tokensBefore=1000),
        _entry(14, 13, "session_info", name=""),
    ]  # fmt: skip


def write_every_writer_kind(home: Path) -> Path:
    folder = home / ".pi" / "agent" / "sessions" / FOLDER
    folder.mkdir(parents=True)
    path = folder / f"2026-12-07T10-00-00-000Z_{EVERY_KIND}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in every_writer_kind()))
    return path
