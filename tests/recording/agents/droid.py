"""Factory Droid (``@factory/cli``): ``droid exec`` with a custom model (BYOK, provider
``anthropic``) pointed at the Anthropic dialect.

The wrapper package ``@factory/cli`` 0.225.1 names a platform package of its own version that
the registry does not offer; the platform package ``@factory/cli-linux-x64`` 0.225.2 carries the
same executable the wrapper would run, so that is what is installed and recorded.

One step: the fix (Execute, Read, a Read of a missing file that errors, a ``Task`` sub-agent
awaited, Edit, a long Execute output), after which Droid compacts the session (its
``compactionTokenLimit`` set low), asking the model for the summary. Offline, Droid can do no
more: ``exec -s <session>`` fetches the session from Factory's service before it continues it,
the ``stream-json`` input fails every message without that service, and a ``Task`` sub-agent
needs the daemon, which needs a Factory login ("No access token available"): the Task call's
result is that error.
"""

from __future__ import annotations

import json

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
    session_id_of,
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "droid" / "shop"
MODEL = "custom:Scripted-0"  # Droid names a custom model by its display name and index
KEY_VAR = "SQ_SCRIPTED_KEY"  # settings.json refers to the key by this variable, never holds it


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("toolu_", name, step, dict(arguments))


class DroidScript:
    def reply(self, conversation: Conversation) -> Reply:
        prompt = conversation.last_user_text
        if not conversation.tools or conversation.mentions("create a detailed summary"):
            if conversation.mentions("summar"):
                return Reply(text=SUMMARY)
            return Reply(text="Fix the ledger balance")
        if SUBAGENT_PROMPT in conversation.first_user_text:
            if not conversation.tool_results():
                grep = _call(
                    "Execute",
                    "sub-grep",
                    summary="Find the refund method",
                    command="grep -n -A2 'def refund' ledger.py",
                )
                return Reply(reasoning="Look at refund().", tool_calls=(grep,))
            return Reply(text="refund() appends -amount, so it subtracts the amount.")
        done = len(conversation.tool_results(conversation.since_last_user()))
        if FIX_PROMPT in prompt:
            return self._fix(done)
        if REFUND_PROMPT in prompt:
            if done == 0:
                create = _call(
                    "Create",
                    "refunds",
                    file_path=str(TASK / "test_refunds.py"),
                    content=TEST_REFUNDS,
                )
                return Reply(text="I'll add a refund test.", tool_calls=(create,))
            return Reply(text="Added test_refunds.py: a refund of 4 from 10 leaves 6.")
        return Reply(text="Done.")

    def _fix(self, done: int) -> Reply:
        steps = [
            Reply(
                reasoning="First run the failing test to see the error.",
                text="Let me run the tests first.",
                tool_calls=(
                    _call(
                        "Execute",
                        "run-tests",
                        summary="Run the ledger tests",
                        command="python3 -m unittest -v test_ledger",
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
                text="There are no notes. I'll ask a helper to check the refunds.",
                tool_calls=(
                    _call(
                        "Task",
                        "spawn",
                        subagent_type="worker",
                        description="Check refund handling",
                        prompt=SUBAGENT_PROMPT,
                        **{"await": True},
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
                        old_str=LEDGER_BUG,
                        new_str=LEDGER_FIX,
                    ),
                ),
            ),
            Reply(
                tool_calls=(
                    _call(
                        "Execute",
                        "rerun",
                        summary="Run the tests and print a long listing",
                        command="python3 -m unittest -v test_ledger && seq 1 1500",
                    ),
                ),
            ),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text="Fixed: Ledger.balance now sums every entry, and test_ledger passes.")


def _prepare(ctx: RunContext) -> None:
    factory = ctx.home / ".factory"
    factory.mkdir(parents=True, exist_ok=True)
    model = {
        "model": "claude-scripted",
        "displayName": "Scripted",
        "baseUrl": ctx.base_url,
        "apiKey": "${" + KEY_VAR + "}",
        "provider": "anthropic",
        "maxOutputTokens": 8192,
    }
    # A low compactionTokenLimit: the session is compacted after the fix (a summary request).
    settings = {"customModels": [model], "cloudSessionSync": False, "compactionTokenLimit": 2500}
    (factory / "settings.json").write_text(json.dumps(settings, indent=2))


def _env(ctx: RunContext) -> dict[str, str]:
    # No documented telemetry switch: the namespace keeps it in; updates are off.
    return {KEY_VAR: ctx.key, "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false"}


_EXEC = ("{bin}", "exec", "-m", MODEL, "--skip-permissions-unsafe", "-o", "json")

OWN_TEXT = OwnText(prefixes=("<system-reminder>",))  # reminders in the user's turns

RECIPE = Recipe(
    agent="droid",
    package="@factory/cli-linux-x64",
    version="0.225.2",
    ecosystem="npm",
    bin="node_modules/@factory/cli-linux-x64/bin/droid",
    format="droid",
    session_dir=".factory/sessions",
    steps=(Step("fix", (*_EXEC, FIX_PROMPT)),),
    script=DroidScript,
    env=_env,
    prepare=_prepare,
    captures={"session_id": session_id_of},
    note="the platform package of @factory/cli (0.225.1's own is not offered)",
    expect={
        "sessions": 1,
        "children": 0,
        "events": {
            "message/user": 1,
            "message/assistant": 8,
            "message/context": 1,
            "tool/call": 6,
            "tool/result": 6,
            "session/title": 1,
            # After the turn, over compactionTokenLimit: Droid asks for a summary.
            "compaction": 1,
        },
        # The failing test run, the missing file, and the Task that could not start.
        "tool_errors": 3,
        "titles": [FIX_PROMPT],
        "cwd": str(TASK),
        "watch": "*/*.jsonl",
    },
    own_text=OWN_TEXT,
)
