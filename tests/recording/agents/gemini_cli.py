"""Gemini CLI (``@google/gemini-cli``): ``gemini -p ... --yolo`` against the Gemini dialect
(``GOOGLE_GEMINI_BASE_URL``, the API-key auth type with the fake key), usage statistics,
telemetry and update checks off in ``settings.json``.

Tools: ``run_shell_command``, ``read_file``, ``replace``, ``write_file`` and the
``generalist`` sub-agent through ``invoke_agent`` (it ends with ``complete_task``). Steps: the
fix; ``--resume latest`` with the refund prompt, in a later minute, during which the CLI
compresses the history (the compression threshold is set just under what the session holds
by then: ``/compress`` in ``-p`` races the prompt it is also sent as); a turn interrupted
(SIGINT) while its command runs; a question after the compression.
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
    SUBAGENT_ANSWER,
    TITLE,
    WRITE_IMAGE,
    NamedTools,
    PlanScript,
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "gemini-cli" / "shop"
SUBAGENT = "generalist"
COMPRESS_AT = 10_800  # prompt tokens


# The CLI's own text its chats copy: the session context it opens each chat with (its
# introduction and the folder listing) and its tools' descriptions.
OWN_TEXT = OwnText(prefixes=("<session_context>", "Reads and returns the content"))


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("gemini-", name, step, dict(arguments))


class GeminiTools(NamedTools):
    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        instruction = "Make balance() sum every entry, the first one included."
        arguments = {"file_path": self.path(name), "old_string": old, "new_string": new}
        return self.tool_call("replace", step, instruction=instruction, **arguments)

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (self.tool_call("invoke_agent", step, agent_name=SUBAGENT, prompt=prompt),)


def _side_json(conversation: Conversation) -> dict[str, object]:
    """The JSON side requests: the model router's complexity score, the next-speaker check."""
    if conversation.mentions("complexity_score"):
        return {"complexity_reasoning": "A local, clear fix.", "complexity_score": 30}
    if conversation.mentions("next_speaker"):
        return {"reasoning": "The model answered; the user speaks next.", "next_speaker": "user"}
    return {"title": TITLE}


class GeminiScript(PlanScript):
    def reply(self, conversation: Conversation) -> Reply:
        answer = super().reply(conversation)
        # A sub-agent ends by calling complete_task with its result.
        if answer.text == SUBAGENT_ANSWER and conversation.offers("complete_task"):
            done = _call("complete_task", "sub-done", result={"response": SUBAGENT_ANSWER})
            return Reply(tool_calls=(done,))
        return answer


def _is_summary(conversation: Conversation) -> bool:
    # The compression prompt asks for a <state_snapshot>.
    return "state_snapshot" in conversation.system


def _script() -> GeminiScript:
    return GeminiScript(
        GeminiTools(
            TASK,
            "gemini-",
            ("run_shell_command", "command", "description"),
            ("read_file", "file_path"),
            ("write_file", "file_path", "content"),
        ),
        _is_summary,
        harness=("<session_context>",),
        side_json=_side_json,
    )


def _env(ctx: RunContext) -> dict[str, str]:
    """The environment, after writing ``settings.json``: API-key auth, no usage statistics,
    telemetry or update checks, sub-agents on."""
    gemini = ctx.home / ".gemini"
    gemini.mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "experimental": {"enableAgents": True},
        # A fraction of the model's 1M-token limit: above the fix's largest request (9.8k
        # tokens as the dialect counts them), below the refund turn's first (11.9k), so the
        # CLI compresses before the refund turn's second request.
        "model": {"compressionThreshold": COMPRESS_AT / 1_048_576},
    }
    (gemini / "settings.json").write_text(json.dumps(settings, indent=2))
    return {
        "GEMINI_API_KEY": ctx.key,
        "GOOGLE_GEMINI_BASE_URL": ctx.base_url,
        # The task folder is trusted (headless runs refuse an untrusted one).
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


_G = ("{bin}", "--yolo", "--output-format", "json")

RECIPE = Recipe(
    agent="gemini-cli",
    package="@google/gemini-cli",
    version="0.61.0",
    ecosystem="npm",
    bin="node_modules/.bin/gemini",
    format="gemini-cli",
    session_dir=".gemini/tmp",
    steps=(
        Step("fix", (*_G, "-p", FIX_PROMPT)),
        # A resume in a later minute than the session's start, as resumes are: the CLI then
        # writes a second file for the session (a header only) before it resumes.
        Step("next-minute", ("sh", "-c", "sleep $((61 - $(date +%S | sed 's/^0//')))")),
        Step("resume", (*_G, "--resume", "latest", "-p", REFUND_PROMPT)),
        Step("interrupt", (*_G, "--resume", "latest", "-p", SLOW_PROMPT), interrupt_after=20.0),
        Step("after-compact", (*_G, "--resume", "latest", "-p", AFTER_COMPACT_PROMPT)),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_G, "--resume", "latest", "-p", f"@{IMAGE_FILE} {IMAGE_PROMPT}")),
    ),
    script=_script,
    env=_env,
    own_text=OWN_TEXT,
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 6,
            "message/assistant": 15,
            "tool/call": 10,
            "tool/result": 10,
            "compaction": 1,
        },
        "tool_errors": 1,
        # Skipped and counted (minimums): the image attached to a prompt.
        "skipped": {"user-part:inlineData:image/png": 1},
        "cwd": str(TASK),
        "watch": "shop/chats/session-*.jsonl",
    },
)
