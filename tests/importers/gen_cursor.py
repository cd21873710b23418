"""A generated Cursor agent-transcript history (``~/.cursor/projects``), made-up content.

The shapes follow what public readers of Cursor's transcripts parse (2025–2026): lines
of ``{"role", "message": {"content": [blocks]}}`` with Anthropic-style blocks, the user's
words inside ``<user_query>`` among other tags, ``turn_ended`` marker lines, tool calls
with and without ids, the session folder layout with a ``subagents`` folder, and the
older flat ``agent-transcripts/<id>.jsonl`` (in a project folder naming no folder here).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

import orjson

from worker.importers.cursor import slug

MAIN: Final = "c5000000-0000-4000-8000-00000000a001"
CHILD: Final = "c5000000-0000-4000-8000-00000000b002"
OLD: Final = "c5000000-0000-4000-8000-00000000c003"
# A project folder whose name matches no folder on this machine: its sessions have no cwd.
GONE_SLUG: Final = "home-nobody-gone-project-7f3a"
EVENTS: Final = {MAIN: 9, CHILD: 3, OLD: 3}
SKIPPED: Final = {"record:turn_ended": 1, "block:message:assistant:image": 1}
# The files' modification time: every event's time, as the format writes none.
WRITTEN: Final = 1_748_000_000  # 2025-05-23T11:33:20Z
WRITTEN_ISO: Final = "2025-05-23T11:33:20.000Z"


def _line(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "message": {"content": list(blocks)}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def main_session() -> list[dict[str, Any]]:
    return [
        _line("user", _text("<user_info>OS: linux</user_info>\n<user_query>\n"
                            "the grinder app crashes on start\n</user_query>")),
        _line("assistant", _text("Let me check the logs."),
              {"type": "tool_use", "id": "t-1", "name": "Read", "input": {"path": "app.log"}}),
        _line("user", {"type": "tool_result", "tool_use_id": "t-1",
                       "content": "Traceback: KeyError 'burr_size'"}),
        _line("assistant", {"type": "tool_use", "name": "Shell",
                            "input": {"command": "grep -n burr_size config.py"}}),
        _line("user", {"type": "tool_result", "content": [_text("12: burr_size = None")]}),
        _line("assistant", _text("Fixed the missing burr_size default.")),
        {"type": "turn_ended"},
        _line("assistant", {"type": "image", "source": {"type": "base64", "data": "AAAA"}}),
    ]  # fmt: skip


def child_session() -> list[dict[str, Any]]:
    return [
        _line("user", _text("find where burr_size is configured")),
        _line("assistant", _text("config.py line 12 sets burr_size to None.")),
    ]


def old_session() -> list[dict[str, Any]]:
    return [
        _line("user", _text("<user_query>add a dark mode</user_query>")),
        _line("assistant", _text("Dark mode added to the settings page.")),
    ]


def lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def project_dir(home: Path) -> Path:
    """The workspace the generated sessions ran in (it exists: Cursor's name for it is
    read back by finding it)."""
    return home / "src" / "grinder-app"


def write(home: Path) -> Path:
    """The history under ``home/.cursor/projects``; returns that folder."""
    projects = home / ".cursor" / "projects"
    project_dir(home).mkdir(parents=True)
    transcripts = projects / slug(str(project_dir(home))) / "agent-transcripts"
    folder = transcripts / MAIN
    (folder / "subagents").mkdir(parents=True)
    gone = projects / GONE_SLUG / "agent-transcripts"
    gone.mkdir(parents=True)
    files = {
        folder / f"{MAIN}.jsonl": main_session(),
        folder / "subagents" / f"{CHILD}.jsonl": child_session(),
        gone / f"{OLD}.jsonl": old_session(),
    }
    for path, records in files.items():
        path.write_bytes(lines(records))
        os.utime(path, (WRITTEN, WRITTEN))
    return projects


# Another machine's transcripts (seen in real homes): the workspace is not here, but the
# transcript names files inside it, e.g. the images the user attached.
ELSEWHERE: Final = "c5000000-0000-4000-8000-00000000d004"
ELSEWHERE_CWD: Final = "/home/nobody/kiln-app"
AMBIGUOUS: Final = "c5000000-0000-4000-8000-00000000e005"


def write_elsewhere(home: Path) -> Path:
    """Two transcripts of a project folder naming no folder here: one showing a file of
    its workspace, one showing paths of two folders Cursor would name alike."""
    transcripts = home / ".cursor" / "projects" / slug(ELSEWHERE_CWD) / "agent-transcripts"
    transcripts.mkdir(parents=True)
    shown = _text(
        "[Image]\n<image_files>\n1. /home/nobody/kiln-app/cone-06.jpg\n</image_files>"
        "\n<user_query>\nwhy does the glaze crawl?\n</user_query>"
    )
    (transcripts / f"{ELSEWHERE}.jsonl").write_bytes(lines([
        _line("user", shown), _line("assistant", _text("The bisque was dusty.")),
    ]))  # fmt: skip
    both = _text(
        "<user_query>compare /home/nobody/kiln/app/a.py with"
        " /home/nobody/kiln-app/a.py</user_query>"
    )
    (transcripts / f"{AMBIGUOUS}.jsonl").write_bytes(lines([_line("user", both)]))
    return transcripts


# Older flat transcripts (seen in a real home, 2026): most sessions show no path of the
# workspace in their JSONL, which keeps no tool calls; the plain-text ``.txt`` beside each
# keeps them (``[Tool call] Read`` with its ``path:``), and another session of the same
# project folder shows a file of the workspace.
WIDE_CWD: Final = "/home/nobody/pottery/wheel-app"
WIDE_SHOWS: Final = "c5000000-0000-4000-8000-00000000f006"
WIDE_SILENT: Final = "c5000000-0000-4000-8000-00000000f007"
WIDE_TEXT: Final = "c5000000-0000-4000-8000-00000000f008"


def write_project_wide(home: Path) -> Path:
    """Three flat transcripts of a project folder naming no folder here: one showing a
    file of its workspace, one showing none, one whose ``.txt`` shows its tool calls."""
    transcripts = home / ".cursor" / "projects" / slug(WIDE_CWD) / "agent-transcripts"
    transcripts.mkdir(parents=True)
    selection = _text(
        '<attached_files>\n<code_selection path="/home/nobody/pottery/wheel-app/kiln.cfg"'
        ' lines="1-2">\nL1:cone = 6\n</code_selection>\n</attached_files>\n'
        "<user_query>\nis cone 6 right?\n</user_query>"
    )
    skill = _text(
        "<manually_attached_skills>\nPath: /home/nobody/.cursor/skills/glaze/SKILL.md\n"
        "</manually_attached_skills>\n<user_query>\nreview the glaze notes\n</user_query>"
    )
    plain = _text("<user_query>\ntidy the rules\n</user_query>")
    files = {
        WIDE_SHOWS: [_line("user", selection), _line("assistant", _text("Yes."))],
        WIDE_SILENT: [_line("user", skill), _line("assistant", _text("They read well."))],
        WIDE_TEXT: [_line("user", plain), _line("assistant", _text("Tidied."))],
    }
    for session, records in files.items():
        (transcripts / f"{session}.jsonl").write_bytes(lines(records))
    (transcripts / f"{WIDE_TEXT}.txt").write_text(
        "user:\n<user_query>\ntidy the rules\n</user_query>\n\nassistant:\n"
        "[Tool call] Read\n  path: /home/nobody/pottery/wheel-app/.cursorrules\n\n"
        "[Tool result] Read\n\nassistant:\nTidied.\n"
    )
    return transcripts
