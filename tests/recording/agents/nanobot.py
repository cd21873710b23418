"""nanobot (PyPI ``nanobot-ai``, HKUDS): ``nanobot agent -m MESSAGE`` (one message, then
exit) with the ``custom`` provider (any OpenAI-compatible endpoint: ``apiBase`` is the
scripted server, the OpenAI chat dialect) in ``~/.nanobot/config.json``, the task folder
its workspace.

nanobot keeps one session per chat key (``cli:direct`` for the CLI, ``-s`` names another)
as ``~/.nanobot/sessions/<workspace id>/<base64url key>.jsonl``: a metadata line, then the
messages (OpenAI chat shapes with a local ``timestamp``), rewritten whole after each turn;
``.workspace`` beside them names the workspace folder.

Steps: the fix (``exec``: a failing test run; ``read_file`` of ledger.py and of a missing
file, ``edit_file``, a long output), the refund test in the same session, a turn
interrupted (SIGINT) while its command runs, and a question in a session of its own.
"""

from __future__ import annotations

import json

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import SLOW_PROMPT, NamedTools, PlanScript, summary_asked
from tests.recording.script import ToolCall
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "nanobot" / "shop"
SESSIONS = ".nanobot/sessions"


class NanobotTools(NamedTools):
    """``spawn`` starts a sub-agent in the background; its report comes back later as a
    message of its own."""

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (self.tool_call("spawn", step, task=prompt, label=description),)


def _script() -> PlanScript:
    tools = NanobotTools(TASK, "call_", ("exec", "command"), ("read_file", "path"),
                         ("write_file", "path", "content"),
                         ("edit_file", "path", "old_text", "new_text"))  # fmt: skip
    return PlanScript(tools, summary_asked)


def _prepare(ctx: RunContext) -> None:
    config = {
        "agents": {
            "defaults": {
                "workspace": str(ctx.task),
                "model": "scripted-model",
                "provider": "custom",
                "timezoneMode": "manual",
            }
        },
        "providers": {"custom": {"apiKey": ctx.key, "apiBase": f"{ctx.base_url}/v1"}},
    }
    folder = ctx.home / ".nanobot"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def _env(ctx: RunContext) -> dict[str, str]:
    return {}


def _say(text: str, *session: str) -> tuple[str, ...]:
    return ("{bin}", "agent", "-m", text, *session)


RECIPE = Recipe(
    agent="nanobot",
    package="nanobot-ai",
    version="0.3.5",
    ecosystem="pypi",
    bin="bin/nanobot",
    format="nanobot",
    session_dir=SESSIONS,
    python="3.12",
    steps=(
        Step("fix", _say(FIX_PROMPT)),
        Step("refunds", _say(REFUND_PROMPT)),
        Step("interrupt", _say(SLOW_PROMPT), interrupt_after=20.0),
        # The same session again: nanobot restores the interrupted turn first.
        Step("resume", _say(AFTER_COMPACT_PROMPT)),
        Step("question", _say(AFTER_COMPACT_PROMPT, "-s", "cli:question")),
    ),
    script=_script,
    env=_env,
    prepare=_prepare,
    # nanobot's lock files beside the sessions.
    exclude=("*.lock",),
    expect={
        "sessions": 2,
        "events": {
            "message/user": 5,
            "message/assistant": 13,
            "tool/call": 8,
            "tool/result": 8,
        },
        # The failing test run, the missing file, the command the interrupt stopped.
        "tool_errors": 3,
        "cwd": str(TASK),
        "whole": True,
    },
    note="nanobot agent -m exits when its turn ends: the spawned sub-agent is cancelled"
    " before it reports, so the recording holds the spawn call and its result only. The"
    " interrupted turn's checkpoint is restored into the file by the next run.",
    # nanobot writes no system prompt into its sessions.
    own_text=OwnText(),
)
