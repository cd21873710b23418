"""Continue CLI (npm ``@continuedev/cli``, ``cn``): ``cn -p --auto`` with a ``config.yaml``
naming an OpenAI-compatible model (``provider: openai``, ``apiBase``) on the OpenAI chat
dialect.

Steps on one session, each later one ``--resume``\\ d: the fix (Bash, Read, a Read of a
missing file, Edit, a long output), a refund test (Write), ``/compact`` (the summary
request: the session file is rewritten from the summary on), and a question after it.
Continue writes ``~/.continue/sessions/<id>.json``, the whole history rewritten after each
change, and ``sessions.json`` listing them. ``cn -p /compact`` compacts (it asks for the
summary and says "Chat history compacted") but does not save the compacted history: the
next ``--resume`` loads the whole history again, and the file holds no summary. Not
recorded: the ``Subagent`` tool (it needs a model configured for sub-agents; its
conversation is never saved anyway).
"""

from __future__ import annotations

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    LEDGER_BUG,
    LEDGER_FIX,
    MISSING_FILE,
    RECORD_ROOT,
    REFUND_PROMPT,
    SUMMARY,
    TEST_REFUNDS,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "continue" / "shop"
TITLE = "Ledger balance fix"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class ContinueScript:
    def reply(self, conversation: Conversation) -> Reply:
        if conversation.mentions("summar") and AFTER_COMPACT_PROMPT not in (
            conversation.last_user_text
        ):
            return Reply(text=SUMMARY)  # /compact asks for a summary of the history
        if not conversation.tools:
            return Reply(text=TITLE)  # a title for the session
        prompt = conversation.last_user_text
        done = len(conversation.tool_results(conversation.since_last_user()))
        if AFTER_COMPACT_PROMPT in prompt:
            return Reply(text="We fixed Ledger.balance and added a refund test.")
        if REFUND_PROMPT in prompt:
            if done == 0:
                write = _call("Write", "refunds", filepath=str(TASK / "test_refunds.py"),
                              content=TEST_REFUNDS)  # fmt: skip
                return Reply(text="I'll add a refund test.", tool_calls=(write,))
            return Reply(text="Added test_refunds.py: a refund of 4 from 10 leaves 6.")
        if FIX_PROMPT in prompt:
            return self._fix(done)
        return Reply(text="Done.")

    def _fix(self, done: int) -> Reply:
        steps = [
            Reply(
                text="Let me run the tests first.",
                tool_calls=(
                    _call("Bash", "run-tests", command="python3 -m unittest -v test_ledger"),
                ),
            ),
            Reply(tool_calls=(_call("Read", "read-ledger", filepath=str(TASK / "ledger.py")),)),
            Reply(
                text="Let me check the project notes too.",
                tool_calls=(_call("Read", "read-notes", filepath=str(TASK / MISSING_FILE)),),
            ),
            Reply(
                text="There are no notes. balance() skips the first entry. Fixing it.",
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
                        "Bash", "rerun", command="python3 -m unittest -v test_ledger && seq 1 1500"
                    ),
                ),
            ),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text="Fixed: Ledger.balance now sums every entry, and test_ledger passes.")


def _prepare(ctx: RunContext) -> None:
    (ctx.home / "config.yaml").write_text(
        "name: scripted\nversion: 1.0.0\nschema: v1\nmodels:\n"
        "  - name: scripted\n    provider: openai\n    model: scripted-model\n"
        f"    apiBase: {ctx.base_url}/v1\n    apiKey: {ctx.key}\n"
        "    roles: [chat, edit, apply, summarize]\n"
    )


def _env(ctx: RunContext) -> dict[str, str]:
    return {"CONTINUE_CLI_ENABLE_TELEMETRY": "0", "CONTINUE_METRICS_ENABLED": "0"}


# Continue saves no system message; its system prompt's opening, should one be saved.
OWN_TEXT = OwnText(prefixes=("You are an agent in the Continue CLI",))

_RUN = ("{bin}", "--config", "{home}/config.yaml", "--auto", "-p")

RECIPE = Recipe(
    agent="continue",
    package="@continuedev/cli",
    version="1.5.47",
    ecosystem="npm",
    bin="node_modules/.bin/cn",
    format="continue",
    session_dir=".continue/sessions",
    steps=(
        Step("fix", (*_RUN, FIX_PROMPT)),
        Step("refunds", (*_RUN, REFUND_PROMPT, "--resume")),
        Step("compact", (*_RUN, "/compact", "--resume")),
        Step("after-compact", (*_RUN, AFTER_COMPACT_PROMPT, "--resume")),
    ),
    script=ContinueScript,
    env=_env,
    prepare=_prepare,
    expect={
        "sessions": 1,
        "events": {
            "message/user": 3,
            "message/assistant": 7,
            "tool/call": 6,
            "tool/result": 6,
        },
        "tool_errors": 2,  # the failing test run and the missing file
        "cwd": str(TASK),
    },
    own_text=OWN_TEXT,
)
