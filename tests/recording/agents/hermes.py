"""Hermes agent (PyPI ``hermes-agent``): ``hermes -z`` (one-shot) with the ``custom``
provider, an OpenAI-compatible endpoint named in ``$HERMES_HOME/config.yaml`` (``model:
provider, base_url, default, api_key``; Hermes reads no base URL from the environment), on
the OpenAI chat dialect.

Steps: the fix (``terminal``, ``read_file``, a read of a missing file, a ``delegate_task``
sub-agent, ``patch``, a long output), then the refund test (``write_file``) continuing the
same session with ``hermes chat --continue -q`` (``-z`` resumes nothing): Hermes appends to
the session's rows, and leaves them in ``state.db``'s -wal file (the scrub folds it in).
Hermes writes every session and message into ``$HERMES_HOME/state.db`` (SQLite); the
sub-agent is a session whose ``parent_session_id`` is the fix's.
"""

from __future__ import annotations

from tests.recording.agents import (
    FIX_PROMPT,
    LEDGER_BUG,
    LEDGER_FIX,
    MISSING_FILE,
    RECORD_ROOT,
    REFUND_PROMPT,
    SUBAGENT_PROMPT,
    SUMMARY,
    TEST_REFUNDS,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "hermes" / "shop"
MODEL = "scripted-model"
TITLE = "Ledger balance fix"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class HermesScript:
    def reply(self, conversation: Conversation) -> Reply:
        if not conversation.tools:  # a side request: a title, a compaction summary
            if conversation.mentions("summar"):
                return Reply(text=SUMMARY)
            return Reply(text=TITLE)
        if conversation.mentions(SUBAGENT_PROMPT) and not conversation.mentions(FIX_PROMPT):
            return self._subagent(conversation)
        since = conversation.since_last_user()
        done = len(conversation.tool_results(since))
        prompt = conversation.last_user_text
        if REFUND_PROMPT in prompt:
            if done == 0:
                write = _call("write_file", "refunds", path=str(TASK / "test_refunds.py"),
                              content=TEST_REFUNDS)  # fmt: skip
                return Reply(text="I'll add a refund test.", tool_calls=(write,))
            return Reply(text="Added test_refunds.py: a refund of 4 from 10 leaves 6.")
        if FIX_PROMPT in prompt:
            return self._fix(done)
        return Reply(text="Done.")

    def _subagent(self, conversation: Conversation) -> Reply:
        if not conversation.tool_results():
            grep = _call("terminal", "sub-grep",
                         command=f"grep -n -A2 'def refund' {TASK / 'ledger.py'}")  # fmt: skip
            return Reply(text="Looking at refund().", tool_calls=(grep,))
        return Reply(text="refund() appends -amount, so it subtracts the amount.")

    def _fix(self, done: int) -> Reply:
        steps = [
            Reply(
                text="Let me run the tests first.",
                tool_calls=(
                    _call(
                        "terminal",
                        "run-tests",
                        command=f"cd {TASK} && python3 -m unittest -v test_ledger",
                    ),
                ),
            ),
            Reply(tool_calls=(_call("read_file", "read-ledger", path=str(TASK / "ledger.py")),)),
            Reply(
                text="Let me check the project notes too.",
                tool_calls=(_call("read_file", "read-notes", path=str(TASK / MISSING_FILE)),),
            ),
            Reply(
                text="There are no notes. I'll ask a helper to check the refunds.",
                tool_calls=(
                    _call(
                        "delegate_task",
                        "spawn",
                        goal=SUBAGENT_PROMPT,
                        context=f"The project is in {TASK}.",
                    ),
                ),
            ),
            Reply(
                text="balance() skips the first entry. Fixing it.",
                tool_calls=(
                    _call(
                        "patch",
                        "fix",
                        mode="replace",
                        path=str(TASK / "ledger.py"),
                        old_string=LEDGER_BUG,
                        new_string=LEDGER_FIX,
                    ),
                ),
            ),
            Reply(
                tool_calls=(
                    _call(
                        "terminal",
                        "rerun",
                        command=f"cd {TASK} && python3 -m unittest -v test_ledger && seq 1 1500",
                    ),
                ),
            ),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text="Fixed: Ledger.balance now sums every entry, and test_ledger passes.")


def _config(ctx: RunContext) -> str:
    return (
        "model:\n"
        "  provider: custom\n"
        f"  base_url: {ctx.base_url}/v1\n"
        f"  default: {MODEL}\n"
        f"  api_key: {ctx.key}\n"
    )


def _prepare(ctx: RunContext) -> None:
    hermes_home = ctx.home / ".hermes"
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.yaml").write_text(_config(ctx))


def _env(ctx: RunContext) -> dict[str, str]:
    return {"HERMES_HOME": str(ctx.home / ".hermes"), "HERMES_YOLO_MODE": "1"}


# The system prompt Hermes keeps with each session (its persona, tool guidance, skills).
OWN_TEXT = OwnText(columns=(("sessions", "system_prompt"),))

RECIPE = Recipe(
    agent="hermes",
    package="hermes-agent",
    version="0.19.0",
    ecosystem="pypi",
    bin="bin/hermes",
    format="hermes",
    session_dir=".hermes",
    steps=(
        Step("fix", ("{bin}", "-z", FIX_PROMPT)),
        Step("refunds", ("{bin}", "chat", "-Q", "--yolo", "--continue", "-q", REFUND_PROMPT)),
    ),
    script=HermesScript,
    env=_env,
    prepare=_prepare,
    # Hermes's other files: its settings (the fake key), persona, logs, caches, the
    # delegation's live log, a snapshot of its skills prompt. The -wal file is kept: Hermes
    # may leave rows in it (`chat` does), and the scrub folds it into state.db.
    exclude=(
        "config.yaml",
        "SOUL.md",
        "auth.lock",
        "logs",
        "cache",
        ".skills_prompt_snapshot.json",
    ),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 3,
            "message/assistant": 9,
            "tool/call": 8,
            "tool/result": 8,
        },
        "tool_errors": 1,
        "cwd": str(TASK),
    },
    own_text=OWN_TEXT,
)
