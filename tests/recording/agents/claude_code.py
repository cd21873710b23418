"""Claude Code (``@anthropic-ai/claude-code``): ``claude -p`` against the Anthropic dialect.

Tools: ``Bash``, ``Read``, ``Edit``, ``Write`` and ``Agent`` (a ``general-purpose`` sub-agent,
in the foreground). Steps: the fix, a ``--resume`` with the refund prompt (after the Write, a
second sub-agent reviews the test in the background, reported back by a task notification),
an image in a stream-json message, a turn interrupted (SIGINT) while its command runs,
``/compact``, a question after it and ``/rename``.
"""

from __future__ import annotations

import json
import re

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    IMAGE_PROMPT,
    RECORD_ROOT,
    RED_PNG,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
    session_id_of,
)
from tests.recording.agents._plan import FINAL_REFUND, SLOW_PROMPT, TITLE, NamedTools, PlanScript
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

RENAME = "Ledger balance fix"  # the title /rename gives
TASK = RECORD_ROOT / "claude-code" / "shop"
REVIEW_PROMPT = "Review test_refunds.py and say in one sentence whether it tests a refund."
REVIEW_ANSWER = "test_refunds.py refunds 4 of 10 and expects 6: it tests a refund."
NOTIFIED = "<task-notification>"  # the background reviewer has finished
# A local command's record (/compact's), which Claude Code sends in the same user message as
# the next prompt, before it.
LOCAL_COMMAND = re.compile(r"^<local-command-caveat>.*</local-command-stdout>\s*", re.S)


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("toolu_", name, step, dict(arguments))


class ClaudeCodeTools(NamedTools):
    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (self.agent(step, description, prompt, background=False),)

    def agent(self, step: str, description: str, prompt: str, *, background: bool) -> ToolCall:
        return self.tool_call(
            "Agent",
            step,
            description=description,
            prompt=prompt,
            subagent_type="general-purpose",
            run_in_background=background,
        )


def _is_summary(conversation: Conversation) -> bool:
    asked = "create a detailed summary"
    return asked in conversation.last_user_text or asked in conversation.system


class ClaudeCodeScript:
    """The plan, and Claude Code's own step: after the refund test is written, a second
    sub-agent reviews it in the background (Claude Code's default), reported back later by
    a task notification."""

    def __init__(self) -> None:
        self.tools = ClaudeCodeTools(
            TASK,
            "toolu_",
            # Not a bare `sleep` for the slow command: Claude Code refuses that as a way to wait.
            ("Bash", "command", "description"),
            ("Read", "file_path"),
            ("Write", "file_path", "content"),
            ("Edit", "file_path", "old_string", "new_string"),
        )
        self.plan = PlanScript(
            self.tools,
            _is_summary,
            side_json=lambda _: {"title": TITLE, "isNewTopic": True},
            unfold=lambda text: (LOCAL_COMMAND.sub("", text),),
        )

    def reply(self, conversation: Conversation) -> Reply:
        conversation = self.plan.as_told(conversation)
        if not conversation.tools or _is_summary(conversation):
            return self.plan.reply(conversation)
        if REVIEW_PROMPT in conversation.first_user_text:
            if not conversation.tool_results():
                return Reply(tool_calls=(self.tools.read("review-read", "test_refunds.py"),))
            return Reply(text=REVIEW_ANSWER)
        if NOTIFIED in conversation.last_user_text:
            return Reply(text="The reviewer confirms test_refunds.py tests a refund.")
        prompts = self.plan.prompts(conversation)
        prompt = prompts[-1] if prompts else ""
        done = len(conversation.tool_results(self.plan.since(conversation, prompt)))
        if prompt.startswith(REFUND_PROMPT[:20]) and done >= 1:
            if done == 1:
                review = self.tools.agent(
                    "review", "Review the refund test", REVIEW_PROMPT, background=True
                )
                return Reply(text="I'll have it reviewed in the background.", tool_calls=(review,))
            return Reply(text=FINAL_REFUND)
        return self.plan.reply(conversation)


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": ctx.base_url,
        "ANTHROPIC_API_KEY": ctx.key,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Inside the namespace the agent runs as (namespaced) root, where
        # --dangerously-skip-permissions is refused unless the agent is told it is sandboxed.
        "IS_SANDBOX": "1",
    }


# An image prompt goes in as a stream-json user message (the only way -p takes an image).
_STREAM = (
    "{bin}",
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--dangerously-skip-permissions",
)
_IMAGE = [
    {"type": "text", "text": IMAGE_PROMPT},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": RED_PNG}},
]
_P = ("{bin}", "-p", "--output-format", "json", "--dangerously-skip-permissions")

# Claude Code copies what it sends the model into its transcript: prompt snapshots, skill
# and agent listings, request copies; and its reminders into the user's turns.
_REQUEST_COPIES = frozenset({"attachment", "api-request", "api-request-blob", "api-request-shape"})
OWN_TEXT = OwnText(
    prefixes=("<system-reminder>",), records=lambda record: record.get("type") in _REQUEST_COPIES
)

RECIPE = Recipe(
    agent="claude-code",
    package="@anthropic-ai/claude-code",
    version="2.1.337",
    ecosystem="npm",
    bin="node_modules/.bin/claude",
    format="claude-code",
    session_dir=".claude/projects",
    steps=(
        Step("fix", (*_P, FIX_PROMPT)),
        Step("resume", (*_P, "--resume", "{session_id}", REFUND_PROMPT)),
        Step(
            "image",
            (*_STREAM, "--continue", "--input-format", "stream-json"),
            stdin=json.dumps({"type": "user", "message": {"role": "user", "content": _IMAGE}})
            + "\n",
        ),
        # Ctrl-C while the command runs: an aborted turn.
        Step("interrupt", (*_P, "--continue", SLOW_PROMPT), interrupt_after=6.0),
        Step("compact", (*_P, "--continue", "/compact")),
        Step("after-compact", (*_P, "--continue", AFTER_COMPACT_PROMPT)),
        Step("rename", (*_P, "--continue", f"/rename {RENAME}")),
    ),
    script=ClaudeCodeScript,
    env=_env,
    captures={"session_id": session_id_of},
    # The package ships a native executable: no Node needed.
    node=None,
    expect={
        "sessions": 3,
        # The foreground refund check and the background reviewer.
        "children": 2,
        "events": {
            "message/user": 4,
            "message/assistant": 12,
            "message/context": 1,  # the background agent's task-notification
            "tool/call": 10,
            "tool/result": 10,
            "compaction": 1,
            "session/title": 2,
            # /compact and /rename, each with its output (/rename's is a system record).
            "command": 2,
            "command/output": 2,
        },
        "tool_errors": 1,
        # What Claude Code writes itself when the turn is aborted: the interruption marker
        # (a user record) and "No response requested." (an assistant record, model <synthetic>).
        # The background reviewer's task-notification cites the Agent call that started it.
        "notifications_citing_calls": 1,
        "harness_texts": ["[Request interrupted by user for tool use]", "No response requested."],
        # Skipped and counted, by kind (minimums): the image attached to a prompt.
        "skipped": {"user-block:image": 1},
        "titles": [RENAME, "Check refund handling", "Review the refund test"],
        "cwd": str(TASK),
        # The transcript grows by lines: watch must pick up an appended turn.
        "watch": "*/*.jsonl",
    },
    own_text=OWN_TEXT,
)
