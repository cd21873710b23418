"""OpenCode (``opencode-ai``): ``opencode run`` against the OpenAI Chat Completions dialect,
a provider in ``~/.config/opencode/opencode.json`` (``@ai-sdk/openai-compatible`` with the
scripted server's ``baseURL``); update checks, the model catalogue fetch, sharing and LSP
downloads off with OpenCode's own settings.

Tools: ``bash``, ``read``, ``edit``, ``write`` and the ``task`` sub-agent (a child session,
``parent_id``, in ``opencode.db``). Steps: the fix, ``--continue`` with the refund prompt,
during which OpenCode compacts (a small context limit: ``run`` has no compaction command),
a turn interrupted (SIGINT) while its command runs, and a question after it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    IMAGE_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import (
    FINAL_REFUND,
    IMAGE_FILE,
    SLOW_PROMPT,
    TITLE,
    WRITE_IMAGE,
    PlanScript,
)
from tests.recording.script import Conversation, Reply, ToolCall, call

TASK = RECORD_ROOT / "opencode" / "shop"
PROVIDER, MODEL = "scripted", "scripted-coder"
DB = ".local/share/opencode/opencode.db"
CHECKPOINT = (
    "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
    "db.execute('PRAGMA wal_checkpoint(TRUNCATE)'); db.execute('VACUUM'); "
    "db.execute('PRAGMA journal_mode=DELETE'); db.close()"
)


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


@dataclass(frozen=True)
class OpenCodeTools:
    """OpenCode's tools (and its forks'), on files of the task folder ``task``."""

    task: Path

    def shell(self, step: str, command: str, description: str) -> ToolCall:
        return _call("bash", step, command=command, description=description)

    def read(self, step: str, name: str) -> ToolCall:
        return _call("read", step, filePath=str(self.task / name))

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        return _call("edit", step, filePath=str(self.task / name), oldString=old, newString=new)

    def write(self, step: str, name: str, content: str) -> ToolCall:
        return _call("write", step, filePath=str(self.task / name), content=content)

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (
            _call("task", step, description=description, prompt=prompt, subagent_type="general"),
        )


def _is_summary(conversation: Conversation) -> bool:
    return "summar" in conversation.last_user_text.lower()


class OpenCodeScript(PlanScript):
    def reply(self, conversation: Conversation) -> Reply:
        # The title agent wants the title alone, as text.
        if "title generator" in conversation.system:
            return Reply(text=TITLE)
        # After compacting inside a turn OpenCode asks the model to go on (a synthetic
        # user message): the turn it cut was the refund test's, whose write is done.
        if conversation.last_user_text.startswith("Continue if you have next steps"):
            return Reply(text=FINAL_REFUND)
        return super().reply(conversation)


def script_for(task: Path, harness: tuple[str, ...] = ()) -> Callable[[], OpenCodeScript]:
    """The plan on OpenCode's tools, for a recipe whose task folder is ``task`` (``harness``:
    the starts of user texts a fork adds to a prompt)."""
    return lambda: OpenCodeScript(OpenCodeTools(task), _is_summary, harness)


def write_config(ctx: RunContext, config_file: Path) -> None:
    """The scripted provider as the model (and the small model, for titles), auto-update and
    sharing off: ``opencode.json``, or a fork's file of the same schema."""
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": f"{ctx.base_url}/v1", "apiKey": "{env:SCRIPTED_API_KEY}"},
                # Auto-compaction once a reply's tokens pass context - output (2055, as the
                # dialect counts them): above the fix's last reply (2046), below the refund
                # turn's first (2066), so OpenCode compacts inside the refund turn.
                "models": {
                    MODEL: {
                        "name": "Scripted coder",
                        "tool_call": True,
                        "attachment": True,
                        "modalities": {"input": ["text", "image"], "output": ["text"]},
                        "limit": {"context": 3055, "output": 1000},
                    }
                },
            }
        },
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
    }
    config_file.write_text(json.dumps(config, indent=2))


def _env(ctx: RunContext) -> dict[str, str]:
    """The environment, after writing ``opencode.json``."""
    write_config(ctx, ctx.home / ".config" / "opencode" / "opencode.json")
    return {
        "SCRIPTED_API_KEY": ctx.key,
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    }


_R = ("{bin}", "run", "--format", "json", "--auto")


def steps(interrupt_after: float = 20.0, title: str | None = None) -> tuple[Step, ...]:
    """The steps, shared with OpenCode's forks (Kilo CLI); ``interrupt_after``: seconds
    until the slow command runs, the agent's start included; ``title``: the session's title
    given to ``run --title`` (a fork that titles sessions only after ``run`` exits)."""
    titled = ("--title", title) if title else ()
    return (
        Step("fix", (*_R, *titled, FIX_PROMPT)),
        Step("resume", (*_R, "--continue", REFUND_PROMPT)),
        Step("interrupt", (*_R, "--continue", SLOW_PROMPT), interrupt_after=interrupt_after),
        Step("after-compact", (*_R, "--continue", AFTER_COMPACT_PROMPT)),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_R, "--continue", IMAGE_PROMPT, "--file", IMAGE_FILE)),
    )


def checkpoint(db: str) -> Step:
    """The database as one file: its WAL (4 MB of page images) checkpointed, then vacuumed.
    What the agent wrote is unchanged; only where SQLite keeps it."""
    return Step("checkpoint", ("python3", "-c", CHECKPOINT, "{home}/" + db))


RECIPE = Recipe(
    agent="opencode",
    package="opencode-ai",
    version="1.18.33",
    ecosystem="npm",
    bin="node_modules/.bin/opencode",
    format="opencode",
    session_dir=".local/share/opencode",
    steps=(*steps(), checkpoint(DB)),
    script=script_for(TASK),
    env=_env,
    # Logs and the repository snapshots beside the database are not sessions.
    exclude=("log", "repos", "snapshot", "*.db-shm", "*.db-wal"),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 6,
            "message/assistant": 15,
            "tool/call": 9,
            "tool/result": 9,
            "compaction": 1,
        },
        "tool_errors": 2,
        "titles": [TITLE, "Check refund handling (@general subagent)"],
        # Skipped and counted (minimums): the image attached to a prompt.
        "skipped": {"part:file": 1},
        "cwd": str(TASK),
        # A database read whole: titles come with the sessions' ends.
        "whole": True,
    },
)
