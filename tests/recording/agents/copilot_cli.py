"""GitHub Copilot CLI (``@github/copilot`` with its ``-linux-x64`` binary): ``copilot -p``
with a custom provider (BYOK: ``COPILOT_PROVIDER_BASE_URL``, ``COPILOT_PROVIDER_TYPE=openai``,
the Chat Completions dialect) and ``COPILOT_OFFLINE`` (no GitHub login, telemetry, update
checks or web tools).

Tools: ``bash``, ``view``, ``edit``, ``create`` and the ``task`` sub-agent (run ``sync``).
Steps: the fix, ``--continue`` with the refund prompt, a turn interrupted (SIGINT) while
its command runs, ``/compact``, a question after it, a prompt with an image
(``--attachment``), and a rename.
"""

from __future__ import annotations

import re

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
from tests.recording.agents._plan import IMAGE_FILE, SLOW_PROMPT, WRITE_IMAGE, PlanScript, prompt
from tests.recording.script import Conversation, ToolCall, Turn, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "copilot-cli" / "shop"
MODEL = "claude-sonnet-4.5"  # a model id Copilot knows (its tools and token limits)
RENAMED = "Ledger fixes"
# Copilot puts the time before each prompt it sends (the session file keeps the prompt bare).
_DATETIME = re.compile(r"^\s*<current_datetime>.*?</current_datetime>\s*", re.S)


def _call(tool: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", tool, step, dict(arguments))


class CopilotTools:
    def shell(self, step: str, command: str, description: str) -> ToolCall:
        return _call("bash", step, command=command, description=description)

    def read(self, step: str, name: str) -> ToolCall:
        return _call("view", step, path=str(TASK / name))

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        return _call("edit", step, path=str(TASK / name), old_str=old, new_str=new)

    def write(self, step: str, name: str, content: str) -> ToolCall:
        return _call("create", step, path=str(TASK / name), file_text=content)

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (
            _call(
                "task",
                step,
                name="refund-check",
                description=description,
                prompt=prompt,
                agent_type="general-purpose",
                mode="sync",
            ),
        )


def _bare(text: str) -> str:
    return prompt(_DATETIME.sub("", text))


def _is_summary(conversation: Conversation) -> bool:
    return "summar" in _bare(conversation.last_user_text).lower()[:400]


class CopilotScript(PlanScript):
    def prompts(self, conversation: Conversation) -> list[str]:
        return [_bare(text) for text in super().prompts(conversation)]

    @staticmethod
    def since(conversation: Conversation, text: str) -> tuple[Turn, ...]:
        turns = conversation.turns
        for i in range(len(turns) - 1, -1, -1):
            if turns[i].role == "user" and _bare(turns[i].text) == text:
                return turns[i + 1 :]
        return turns


def _script() -> CopilotScript:
    return CopilotScript(
        CopilotTools(),
        _is_summary,
        # Parts Copilot adds to a prompt (an attachment's path) or sends as one (a
        # background shell's completion, when a command outlives its turn).
        harness=("Image file at path", "<system_notification>"),
    )


# Copilot's own prompt text, which its events copy: the system prompts (``system.message``),
# and the compaction's model-call trace (the request it sent, the conversation snapshot).
OWN_TEXT = OwnText(
    prefixes=("You are the GitHub Copilot CLI", "You are GitHub Copilot", "As a sub-agent"),
    records=lambda record: (
        record.get("type")
        in ("system.message", "model.model_call_success", "model.messages_snapshot")
    ),
)


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": f"{ctx.base_url}/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": ctx.key,
        "COPILOT_MODEL": MODEL,
    }


_C = ("{bin}", "--no-auto-update", "--allow-all", "--disable-client-telemetry", "--no-color")
_CONTINUE = (*_C, "--continue", "-p")

RECIPE = Recipe(
    agent="copilot-cli",
    package="@github/copilot",
    version="1.0.102",
    ecosystem="npm",
    # The platform binary itself: the package's ``copilot`` is a Node loader that runs it
    # with ``spawnSync``, so a SIGINT would stop the loader and never reach the agent.
    bin="node_modules/@github/copilot-linux-x64/copilot",
    format="copilot-cli",
    session_dir=".copilot/session-state",
    steps=(
        # ``--name`` names the new session (``workspace.yaml``'s ``name``, ``user_named``):
        # prompt mode has no ``/rename`` (it goes to the model as a prompt) and ``--name``
        # cannot go with ``--continue``.
        Step("fix", (*_C, "--name", RENAMED, "-p", FIX_PROMPT)),
        Step("resume", (*_CONTINUE, REFUND_PROMPT)),
        Step("interrupt", (*_CONTINUE, SLOW_PROMPT), interrupt_after=15.0),
        Step("compact", (*_CONTINUE, "/compact")),
        Step("after-compact", (*_CONTINUE, AFTER_COMPACT_PROMPT)),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_CONTINUE, IMAGE_PROMPT, "--attachment", IMAGE_FILE)),
    ),
    script=_script,
    env=_env,
    own_text=OWN_TEXT,
    note=(
        "SIGINT aborts the turn: an abort record, and no tool.execution_complete for the "
        "command it stopped."
    ),
    # Not sessions: the workflow database, file backups for rewinds, compaction checkpoints
    # (the summary is in the events too), lock files.
    exclude=(
        "session.db*",
        "rewind-file-snapshots",
        "checkpoints",
        "files",
        "research",
        "*.lock",
        ".session-operation-locks",
    ),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 6,
            "message/assistant": 15,
            "message/context": 1,
            "tool/call": 9,
            "tool/result": 9,
            "compaction": 1,
        },
        # The missing file, the first test run (exit code 1), the interrupted command.
        "tool_errors": 3,
        "titles": [RENAMED, "Check refund handling"],
        # Skipped and counted (minimums): the image attached to a prompt.
        "skipped": {"attachment:file": 1, "record:session.binary_asset": 1},
        "cwd": str(TASK),
        "watch": "*/events.jsonl",
    },
)
