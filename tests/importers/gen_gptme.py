"""A generated gptme history (``~/.local/share/gptme/logs``), made-up content.

The shapes follow gptme 0.35.1's own writer: ``Message.to_dict`` (``gptme/message.py``) one
line a message in ``<logdir>/conversation.jsonl`` (``gptme/logmanager/manager.py``),
``ChatConfig.to_dict`` in ``config.toml`` (``[chat]``: ``name``, ``model``, ``tool_format``,
``workspace`` with ``~`` for the home folder), tool-format calls (``@tool(id): {json}``)
answered by ``system`` messages with their ``call_id`` and ``metadata.tool``, a tool error
as ``tools/base.py`` words it, a sub-agent's ``subagent-<id>`` folder with its
``subagent-meta.json``, the auto-compaction notice (``tools/autocompact/hook.py``) with
the view it wrote, a branch; and an older conversation in the markdown tool format with a
``workspace`` symlink and no config.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

import orjson

MAIN_DIR: Final = "2025-08-02-dancing-otter"
OLD_DIR: Final = "2025-07-30-quiet-fox"
SUB_DIR: Final = "subagent-checker-k3v9"  # subagent-<agent id>-<random suffix>
MAIN: Final = f"gptme-{MAIN_DIR}"
OLD: Final = f"gptme-{OLD_DIR}"
SUB: Final = f"gptme-{SUB_DIR}"
TITLE: Final = "Weather cache fix"
WORKSPACE: Final = "proj/weather"  # under the home folder: written as ``~/proj/weather``
OLD_CWD: Final = "/home/dev/fox"
SUB_PROMPT: Final = "Check whether cache.py expires entries."
EVENTS: Final = {MAIN: 21, OLD: 6, SUB: 3}
SKIPPED: Final = {"message:developer": 1}


def _time(minute: int) -> str:
    # ``datetime.now().isoformat()``: local time, no zone.
    return f"2025-08-02T09:{minute:02d}:00.000000"


def _msg(role: str, content: str, minute: int, **fields: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "timestamp": _time(minute), **fields}


def _result(call_id: str, tool: str, content: str, minute: int) -> dict[str, Any]:
    return _msg("system", content, minute, call_id=call_id, metadata={"tool": tool})


SYSTEM_PROMPT: Final = "You are gptme v0.35.1, a general-purpose AI assistant."
NUDGE: Final = (
    "<system>No tool call detected in last message. Did you mean to finish? If so, make sure"
    " you are completely done and then use the `complete` tool to end the session.</system>"
)
# The subagent tool's functions are called from Python.
SUB_CALL: Final = (
    '@ipython(call_sub): {"code": "subagent(\\"checker\\", \\"' + SUB_PROMPT + '\\")"}'
)


def main_conversation() -> list[dict[str, Any]]:
    usage = {"model": "openai/gpt-5", "usage": {"input_tokens": 900, "output_tokens": 40}}
    return [
        _msg("system", SYSTEM_PROMPT, 0, pinned=True, hide=True),
        _msg("user", "the weather cache never refreshes", 1),
        _msg("assistant", 'Let me look at the cache.\n\n@shell(call_ls): {"command": "ls"}',
             2, metadata=usage),
        _result("call_ls", "shell", "Ran command: `ls`\n```stdout\ncache.py\n```", 3),
        _msg("assistant", '@read(call_notes): {"path": "NOTES.md"}', 4),
        _result("call_notes", "read",
                "Error executing tool 'read': [Errno 2] No such file: 'NOTES.md'", 5),
        _msg("assistant", f"I'll ask a helper.\n{SUB_CALL}", 6),
        _result("call_sub", "ipython", "Started subagent checker.", 7),
        _msg("system", "🔄 Auto-compacted conversation to view branch:\n• Messages: 9 → 5\n"
             "• View: compacted-001 (master branch preserved with full history)", 8,
             hide=True, ui_only=True),
        _msg("user", "fix it please", 9, files=["/home/dev/proj/weather/cache.py"]),
        _msg("assistant", "Setting a TTL.\n"
             '@patch(call_fix): {"path": "cache.py", "patch": "<<<<<<< ORIGINAL\\nttl = None\\n'
             '=======\\nttl = 600\\n>>>>>>> UPDATED"}', 10),
        _result("call_fix", "patch", "Patch applied", 11),
        _msg("assistant", "Entries now expire after ten minutes.", 12),
        _msg("user", NUDGE, 13),
        _msg("assistant", "@complete(call_done): {}", 14),
        _result("call_done", "complete", "Task complete.", 14),
        _msg("developer", "a role this importer does not know", 13),
    ]  # fmt: skip


def old_conversation() -> list[dict[str, Any]]:
    """The markdown tool format: a fenced ``shell`` block, its result after it."""
    return [
        _msg("user", "why is the fox test slow?", 30),
        _msg("assistant", "Timing it:\n```shell\npytest -q --durations=3\n```\n"
             "and a sample config:\n```toml\nslow = true\n```", 31),
        _msg("system", "Ran command: `pytest -q --durations=3`\n```stdout\n3.2s test_fox\n```", 32),
        _msg("assistant", "test_fox sleeps three seconds.", 33),
    ]  # fmt: skip


def sub_conversation() -> list[dict[str, Any]]:
    return [
        _msg("user", SUB_PROMPT, 20),
        _msg("assistant", "Entries never expire: ttl is None.", 21),
    ]


def lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def write_main(logs: Path, *, side_files: bool = True) -> Path:
    folder = logs / MAIN_DIR
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(
        f'[chat]\nname = "{TITLE}"\nmodel = "openai/gpt-5"\ntools = ["shell", "read", "patch"]\n'
        f'tool_format = "tool"\nstream = true\ninteractive = true\n'
        f'workspace = "~/{WORKSPACE}"\n\n[env]\n'
    )
    messages = main_conversation()
    (folder / "conversation.jsonl").write_bytes(lines(messages))
    if not side_files:
        return folder
    # What gptme writes beside it and the importer leaves: a branch, the compacted view.
    (folder / "branches").mkdir()
    (folder / "branches" / "try-ttl.jsonl").write_bytes(lines(messages[:3]))
    (folder / "views").mkdir()
    (folder / "views" / "compacted-001.jsonl").write_bytes(lines(messages[:2]))
    return folder


def write(home: Path, *, side_files: bool = True) -> Path:
    """The history under ``home/.local/share/gptme/logs``; returns that folder.
    ``side_files``: with the branch and the view gptme writes beside a conversation."""
    logs = home / ".local" / "share" / "gptme" / "logs"
    main = write_main(logs, side_files=side_files)
    old = logs / OLD_DIR
    old.mkdir()
    (old / "conversation.jsonl").write_bytes(lines(old_conversation()))
    os.symlink(OLD_CWD, old / "workspace")  # an old conversation: no config.toml
    sub = logs / SUB_DIR
    sub.mkdir()
    # A sub-agent's config names a workspace of its own that it does not use; its meta
    # names the folder it works in.
    own = f"~/.local/share/gptme/logs/{SUB_DIR}/workspace"
    (sub / "config.toml").write_text(f'[chat]\nstream = true\nworkspace = "{own}"\n')
    meta = {"agent_id": "checker", "prompt": SUB_PROMPT, "logdir": str(sub),
            "model": "openai/gpt-5", "execution_mode": "thread",
            "workdir": str(Path.home() / WORKSPACE), "parent_logdir": str(main),
            "parent_branch": "main"}  # fmt: skip
    (sub / "subagent-meta.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    (sub / "conversation.jsonl").write_bytes(lines(sub_conversation()))
    return logs
