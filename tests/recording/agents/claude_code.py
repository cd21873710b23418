"""Claude Code (``@anthropic-ai/claude-code``): ``claude -p`` against the Anthropic dialect.

Steps: the fix (Bash, Read, a Read of a missing file that errors, an ``Agent`` sub-agent run in
the foreground, Edit, a long Bash output), a ``--resume`` with a second prompt (Write), a
``--continue`` with ``/compact``, and a ``--continue`` after the compaction.
"""

from __future__ import annotations

import json

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    IMAGE_PROMPT,
    LEDGER_BUG,
    LEDGER_FIX,
    MISSING_FILE,
    RECORD_ROOT,
    RED_PNG,
    REFUND_PROMPT,
    SUBAGENT_PROMPT,
    SUMMARY,
    TEST_REFUNDS,
    Recipe,
    RunContext,
    Step,
    session_id_of,
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TITLE = "Ledger balance fix"
TASK = RECORD_ROOT / "claude-code" / "shop"
# The spawning tool: `Agent` in current versions, `Task` before.
SPAWN_TOOLS = ("Agent", "Task")


REVIEW_PROMPT = "Review test_refunds.py and say in one sentence whether it tests a refund."
SLOW_PROMPT = "Run the slow checks too, please."  # interrupted while its command runs


def spawn_tool(conversation: Conversation) -> str:
    return next((t for t in SPAWN_TOOLS if conversation.offers(t)), "Agent")


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("toolu_", name, step, dict(arguments))


class ClaudeCodeScript:
    def reply(self, conversation: Conversation) -> Reply:
        prompt = conversation.last_user_text
        if (
            "create a detailed summary" in prompt
            or "create a detailed summary" in conversation.system
        ):
            return Reply(text=SUMMARY)
        if not conversation.tools:
            # A side request (a title, a topic check): answer briefly, in JSON when asked.
            if conversation.mentions("json"):
                return Reply(
                    text=json.dumps({"title": "Fix the ledger balance", "isNewTopic": True})
                )
            return Reply(text="Fix the ledger balance")
        if SUBAGENT_PROMPT in conversation.first_user_text:
            return self._subagent(conversation)
        if REVIEW_PROMPT in conversation.first_user_text:
            if not conversation.tool_results():
                read = _call("Read", "review-read", file_path=str(TASK / "test_refunds.py"))
                return Reply(tool_calls=(read,))
            return Reply(text="test_refunds.py refunds 4 of 10 and expects 6: it tests a refund.")
        if "<task-notification>" in prompt:  # the background reviewer has finished
            return Reply(text="The reviewer confirms test_refunds.py tests a refund.")
        done = len(conversation.tool_results(conversation.since_last_user()))
        if FIX_PROMPT in prompt:
            return self._fix(conversation, done)
        if REFUND_PROMPT in prompt:
            if done == 0:
                write = _call(
                    "Write",
                    "refunds",
                    file_path=str(TASK / "test_refunds.py"),
                    content=TEST_REFUNDS,
                )
                return Reply(text="I'll add a refund test.", tool_calls=(write,))
            if done == 1:
                # Claude Code's default: a sub-agent in the background, reported back later.
                review = _call(
                    spawn_tool(conversation),
                    "review",
                    description="Review the refund test",
                    prompt=REVIEW_PROMPT,
                    subagent_type="general-purpose",
                )
                return Reply(text="I'll have it reviewed in the background.", tool_calls=(review,))
            return Reply(text="Added test_refunds.py: a refund of 4 from 10 leaves 6.")
        if SLOW_PROMPT in prompt:
            if done == 0:
                # Not a bare `sleep`: Claude Code refuses that as a way to wait.
                slow = _call(
                    "Bash",
                    "slow",
                    command="python3 -c 'import time; time.sleep(60)'",
                    description="Run the slow checks",
                )
                return Reply(text="Running the slow checks.", tool_calls=(slow,))
            return Reply(text="The slow checks were stopped.")
        if IMAGE_PROMPT in prompt:
            return Reply(text="A small red square.")
        if AFTER_COMPACT_PROMPT in prompt:
            return Reply(text="We fixed Ledger.balance and added a refund test.")
        return Reply(text="Done.")

    def _subagent(self, conversation: Conversation) -> Reply:
        if not conversation.tool_results():
            grep = _call(
                "Bash",
                "sub-grep",
                command="grep -n -A2 'def refund' ledger.py",
                description="Find the refund method",
            )
            return Reply(reasoning="Look at refund().", tool_calls=(grep,))
        return Reply(text="refund() appends -amount, so it subtracts the amount from the balance.")

    def _fix(self, conversation: Conversation, done: int) -> Reply:
        spawn = spawn_tool(conversation)
        steps: list[Reply] = [
            Reply(
                reasoning="First run the failing test to see the error.",
                text="Let me run the tests first.",
                tool_calls=(
                    _call(
                        "Bash",
                        "run-tests",
                        command="python3 -m unittest -v test_ledger",
                        description="Run the ledger tests",
                    ),
                ),
            ),
            Reply(
                reasoning="The balance is 7, not 12: the first entry is lost. Read ledger.py.",
                tool_calls=(_call("Read", "read-ledger", file_path=str(TASK / "ledger.py")),),
            ),
            Reply(
                text="Let me check the project notes too.",
                tool_calls=(_call("Read", "read-notes", file_path=str(TASK / MISSING_FILE)),),
            ),
            Reply(
                text="There are no notes. I'll ask a helper to check the refunds meanwhile.",
                tool_calls=(
                    _call(
                        spawn,
                        "spawn",
                        description="Check refund handling",
                        prompt=SUBAGENT_PROMPT,
                        subagent_type="general-purpose",
                        run_in_background=False,
                    ),
                ),
            ),
            Reply(
                reasoning="balance() sums entries[1:]; it must sum them all.",
                text="balance() skips the first entry. Fixing it.",
                tool_calls=(
                    _call(
                        "Edit",
                        "fix",
                        file_path=str(TASK / "ledger.py"),
                        old_string=LEDGER_BUG,
                        new_string=LEDGER_FIX,
                    ),
                ),
            ),
            Reply(
                tool_calls=(
                    _call(
                        "Bash",
                        "rerun",
                        # A long output, on purpose: the transcript keeps it whole or cut.
                        command="python3 -m unittest -v test_ledger && seq 1 1500",
                        description="Run the tests again and print a long listing",
                    ),
                ),
            ),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text="Fixed: Ledger.balance now sums every entry, and test_ledger passes.")


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
    version="2.1.332",
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
        Step("rename", (*_P, "--continue", f"/rename {TITLE}")),
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
        "titles": [TITLE, "Check refund handling", "Review the refund test"],
        "cwd": str(TASK),
        # The transcript grows by lines: watch must pick up an appended turn.
        "watch": "*/*.jsonl",
    },
    own_text=OWN_TEXT,
)
