"""Cline CLI (``cline``, the 3.x command-line agent): ``cline --json`` with the
OpenAI-compatible provider (``cline auth openai -b <server>/v1``) on the OpenAI chat dialect.

Its tools: ``run_commands``, ``read_files``, ``editor`` (replaces, or creates a missing file) and
``spawn_agent`` (a sub-agent it waits for). Steps: auth, then the fix. No resume: ``--id
<session>`` always opens the interactive terminal UI (3.0.65 drops the prompt and refuses
``--json`` with it), so a continued session cannot be recorded non-interactively.
Cline 3.x writes ``~/.cline/data/sessions/<id>/<id>.json`` (the session: cwd, title, parent)
and ``<id>.messages.json`` (the conversation), not the extension's ``tasks/<id>/`` folders.
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
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "cline" / "shop"
MODEL = "scripted-model"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


def _run(step: str, command: str) -> ToolCall:
    return _call("run_commands", step, commands=[command])


def _read(step: str, name: str) -> ToolCall:
    return _call("read_files", step, files=[{"path": str(TASK / name)}])


class ClineScript:
    def reply(self, conversation: Conversation) -> Reply:
        prompt = conversation.last_user_text
        if not conversation.tools:
            # A side request: a title, or the summary for a compaction.
            if conversation.mentions("summar"):
                return Reply(text=SUMMARY)
            return Reply(text="Fix the ledger balance")
        if SUBAGENT_PROMPT in conversation.first_user_text:
            if not conversation.tool_results():
                grep = _run("sub-grep", "grep -n -A2 'def refund' ledger.py")
                return Reply(reasoning="Look at refund().", tool_calls=(grep,))
            return Reply(text="refund() appends -amount, so it subtracts the amount.")
        done = len(conversation.tool_results(conversation.since_last_user()))
        if REFUND_PROMPT in prompt:
            if done == 0:
                create = _call(
                    "editor", "refunds", path=str(TASK / "test_refunds.py"), new_text=TEST_REFUNDS
                )
                return Reply(text="I'll add a refund test.", tool_calls=(create,))
            return Reply(text="Added test_refunds.py: a refund of 4 from 10 leaves 6.")
        if FIX_PROMPT in prompt:
            return self._fix(done)
        return Reply(text="Done.")

    def _fix(self, done: int) -> Reply:
        steps = [
            Reply(
                reasoning="First run the failing test to see the error.",
                text="Let me run the tests first.",
                tool_calls=(_run("run-tests", "python3 -m unittest -v test_ledger"),),
            ),
            Reply(
                reasoning="The balance is 7, not 12: the first entry is lost. Read ledger.py.",
                tool_calls=(_read("read-ledger", "ledger.py"),),
            ),
            Reply(
                text="Let me check the project notes too.",
                tool_calls=(_read("read-notes", MISSING_FILE),),
            ),
            Reply(
                text="There are no notes. I'll ask a helper to check the refunds.",
                tool_calls=(
                    _call(
                        "spawn_agent",
                        "spawn",
                        systemPrompt="You review Python code and answer in one sentence.",
                        task=SUBAGENT_PROMPT,
                    ),
                ),
            ),
            Reply(
                reasoning="balance() sums entries[1:]; it must sum them all.",
                text="balance() skips the first entry. Fixing it.",
                tool_calls=(
                    _call(
                        "editor",
                        "fix",
                        path=str(TASK / "ledger.py"),
                        old_text=LEDGER_BUG,
                        new_text=LEDGER_FIX,
                    ),
                ),
            ),
            Reply(
                tool_calls=(_run("rerun", "python3 -m unittest -v test_ledger && seq 1 1500"),),
            ),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text="Fixed: Ledger.balance now sums every entry, and test_ledger passes.")


def _prepare(ctx: RunContext) -> None:
    settings = ctx.home / ".cline" / "data" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    off = {"telemetryOptOut": True, "autoUpdateEnabled": False}
    (settings / "global-settings.json").write_text(json.dumps(off, indent=2))


def _env(ctx: RunContext) -> dict[str, str]:
    return {"CLINE_NO_AUTO_UPDATE": "1"}


_RUN = ("{bin}", "--json", "-c", str(TASK))

OWN_TEXT = OwnText(prefixes=("You are Cline",))  # the session's system_prompt

RECIPE = Recipe(
    agent="cline",
    package="cline",
    version="3.0.65",
    ecosystem="npm",
    bin="node_modules/.bin/cline",
    format="cline-cli",
    session_dir=".cline/data/sessions",
    steps=(
        Step(
            "auth", ("{bin}", "auth", "openai", "-k", "{key}", "-m", MODEL, "-b", "{base_url}/v1")
        ),
        Step("fix", (*_RUN, FIX_PROMPT)),
    ),
    script=ClineScript,
    env=_env,
    prepare=_prepare,
    expect={
        "sessions": 2,
        "children": 1,
        "events": {"message/user": 2, "message/assistant": 10, "tool/call": 7, "tool/result": 7},
        # The failing test run and the missing file.
        "tool_errors": 2,
        "titles": [FIX_PROMPT],
        "cwd": str(TASK),
        # Whole documents, rewritten: titles come with a session's end, no appended lines.
        "whole": True,
    },
    own_text=OWN_TEXT,
)
