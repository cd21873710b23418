"""Qwen Code (``@qwen-code/qwen-code``, Node 22): ``qwen -p ... --yolo`` against the OpenAI
Chat Completions dialect (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL``), usage
statistics, telemetry and update checks off in ``~/.qwen/settings.json``.

Tools: ``run_shell_command``, ``read_file``, ``edit``, ``write_file`` and the ``agent``
tool (a ``general-purpose`` sub-agent, which the non-interactive mode runs in the
background: its answer comes back as a ``<task-notification>``). Steps: the fix,
``--continue`` with the refund prompt, a turn interrupted (SIGINT) while its command runs,
``/compress`` (a ``chat_compression`` record) and a question after it.
"""

from __future__ import annotations

import json

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
    IMAGE_FILE,
    SLOW_PROMPT,
    TITLE,
    WRITE_IMAGE,
    NamedTools,
    PlanScript,
)
from tests.recording.script import Conversation, ToolCall, call

TASK = RECORD_ROOT / "qwen-code" / "shop"
MODEL = "qwen3-coder-plus"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class QwenTools(NamedTools):
    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (
            self.tool_call(
                "agent",
                step,
                description=description,
                prompt=prompt,
                subagent_type="general-purpose",
            ),
        )


def _side_json(conversation: Conversation) -> dict[str, object]:
    if conversation.mentions("next_speaker"):
        return {"reasoning": "The model answered; the user speaks next.", "next_speaker": "user"}
    return {"title": TITLE}


def _is_summary(conversation: Conversation) -> bool:
    return "state_snapshot" in conversation.system or "state_snapshot" in (
        conversation.last_user_text
    )


def _script() -> PlanScript:
    return PlanScript(
        QwenTools(
            TASK,
            "call_",
            ("run_shell_command", "command", "description"),
            ("read_file", "file_path"),
            ("write_file", "file_path", "content"),
            ("edit", "file_path", "old_string", "new_string"),
        ),
        _is_summary,
        harness=("<system-reminder>", "<session_context>", "<task-notification>"),
        side_json=_side_json,
    )


def _env(ctx: RunContext) -> dict[str, str]:
    qwen = ctx.home / ".qwen"
    qwen.mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "openai"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "disableAutoUpdate": True},
    }
    (qwen / "settings.json").write_text(json.dumps(settings, indent=2))
    return {
        "OPENAI_BASE_URL": f"{ctx.base_url}/v1",
        "OPENAI_API_KEY": ctx.key,
        "OPENAI_MODEL": MODEL,
    }


_Q = ("{bin}", "--yolo", "--output-format", "json")

RECIPE = Recipe(
    agent="qwen-code",
    package="@qwen-code/qwen-code",
    version="0.24.4",
    ecosystem="npm",
    bin="node_modules/.bin/qwen",
    format="qwen-code",
    session_dir=".qwen/projects",
    steps=(
        Step("fix", (*_Q, "-p", FIX_PROMPT)),
        Step("resume", (*_Q, "--continue", "-p", REFUND_PROMPT)),
        Step("interrupt", (*_Q, "--continue", "-p", SLOW_PROMPT), interrupt_after=20.0),
        Step("compact", (*_Q, "--continue", "-p", "/compress")),
        Step("after-compact", (*_Q, "--continue", "-p", AFTER_COMPACT_PROMPT)),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_Q, "--continue", "-p", f"@{IMAGE_FILE} {IMAGE_PROMPT}")),
    ),
    script=_script,
    env=_env,
    node="22",
    # Project state beside the chats, not sessions: memory notes, the extraction cursor.
    exclude=("memory", "extract-cursor.json"),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 10,
            "message/assistant": 17,
            "tool/call": 9,
            "tool/result": 9,
            "compaction": 1,
        },
        "tool_errors": 2,
        "titles": ["Check refund handling"],
        "cwd": str(TASK),
        "watch": "*/chats/*.jsonl",
    },
)
