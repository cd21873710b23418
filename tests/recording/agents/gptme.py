"""gptme (PyPI ``gptme``): ``gptme --non-interactive --no-confirm`` with the ``local``
provider (an OpenAI-compatible server at ``OPENAI_BASE_URL``) pointed at the OpenAI Chat
Completions dialect, in the ``tool`` tool format (native tool calls, stored in the
conversation as ``@tool(call id): {...}`` lines with results carrying the call id).

Two steps on one conversation, named with ``--name`` so the second continues it: the fix
(shell, read, a read of a missing file, an ``ipython`` call starting a sub-agent and waiting
for it, patch, a long shell output), then a refund test (save). ``read``, ``ipython`` and
``subagent`` are not enabled by default: ``--tools +...`` adds them. A reply without a call
gets gptme's ``<system>No tool call detected`` nudge, answered with ``complete``. gptme
writes ``~/.local/share/gptme/logs/<name>/`` with ``conversation.jsonl`` and ``config.toml``
(the workspace, the model, the name the model gave), and the sub-agent's
``subagent-<id>-<suffix>/`` with ``subagent-meta.json`` naming its parent's folder.
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
from tests.recording.script import Conversation, Reply, ToolCall, Turn, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "gptme" / "shop"
NAME = "ledger-fix"
MODEL = "local/scripted-model"
HELPER = "refund-check"  # the sub-agent's id: its conversation is subagent-<id>


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


def _since_prompt(conversation: Conversation) -> tuple[str, tuple[Turn, ...]]:
    """The last prompt the user wrote and the turns after it (gptme's ``<system>`` nudges
    in the user's turn are not prompts)."""
    turns = conversation.turns
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].role == "user" and turns[i].text and not _nudge(turns[i].text):
            return turns[i].text, turns[i + 1 :]
    return "", turns


def _nudge(text: str) -> bool:
    return text.lstrip().startswith("<system>")


class GptmeScript:
    def reply(self, conversation: Conversation) -> Reply:
        if not conversation.tools:  # a side request: a conversation name, a summary
            if conversation.mentions("summar"):
                return Reply(text=SUMMARY)
            return Reply(text="ledger-balance-fix")
        if SUBAGENT_PROMPT in conversation.first_user_text:
            return self._subagent(conversation)
        prompt, since = _since_prompt(conversation)
        if _nudge(conversation.last_user_text):
            # gptme asks for its ``complete`` tool when a reply has no call: end the turn.
            return Reply(tool_calls=(_call("complete", f"done-{len(since)}"),))
        done = len(conversation.tool_results(since))
        if REFUND_PROMPT in prompt:
            if done == 0:
                save = _call("save", "refunds", path=str(TASK / "test_refunds.py"),
                             content=TEST_REFUNDS)  # fmt: skip
                return Reply(text="I'll add a refund test.", tool_calls=(save,))
            return Reply(text="Added test_refunds.py: a refund of 4 from 10 leaves 6.")
        if FIX_PROMPT in prompt:
            return self._fix(done)
        return Reply(text="Done.")

    def _subagent(self, conversation: Conversation) -> Reply:
        if not conversation.tool_results():
            grep = _call("shell", "sub-grep", command="grep -n -A2 'def refund' ledger.py")
            return Reply(text="Looking at refund().", tool_calls=(grep,))
        if _nudge(conversation.last_user_text):
            return Reply(tool_calls=(_call("complete", "sub-done"),))
        return Reply(text="refund() appends -amount, so it subtracts the amount.")

    def _fix(self, done: int) -> Reply:
        patch = (
            f"<<<<<<< ORIGINAL\n        {LEDGER_BUG}\n=======\n        {LEDGER_FIX}\n"
            ">>>>>>> UPDATED"
        )
        steps = [
            Reply(
                text="Let me run the tests first.",
                tool_calls=(
                    _call("shell", "run-tests", command="python3 -m unittest -v test_ledger"),
                ),
            ),
            Reply(tool_calls=(_call("read", "read-ledger", path=str(TASK / "ledger.py")),)),
            Reply(
                text="Let me check the project notes too.",
                tool_calls=(_call("read", "read-notes", path=str(TASK / MISSING_FILE)),),
            ),
            Reply(
                text="There are no notes. I'll ask a helper to check the refunds.",
                tool_calls=(
                    _call(
                        "ipython",
                        "spawn",
                        code=f"subagent({HELPER!r}, {SUBAGENT_PROMPT!r})\n"
                        f"subagent_wait({HELPER!r})",
                    ),
                ),
            ),
            Reply(
                text="balance() skips the first entry. Fixing it.",
                tool_calls=(_call("patch", "fix", path=str(TASK / "ledger.py"), patch=patch),),
            ),
            Reply(
                tool_calls=(
                    _call(
                        "shell", "rerun", command="python3 -m unittest -v test_ledger && seq 1 1500"
                    ),
                ),
            ),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text="Fixed: Ledger.balance now sums every entry, and test_ledger passes.")


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": f"{ctx.base_url}/v1",
        "OPENAI_API_KEY": ctx.key,
        "GPTME_TELEMETRY_ENABLED": "false",
        "GPTME_CHECK_UPDATES": "false",
    }


_RUN = ("{bin}", "--non-interactive", "--no-confirm", "--model", MODEL, "--tool-format", "tool",
        "--tools", "+read,+ipython,+subagent", "--name", NAME)  # fmt: skip

OWN_TEXT = OwnText(prefixes=("You are gptme",))  # its system messages

RECIPE = Recipe(
    agent="gptme",
    package="gptme",
    version="0.35.1",
    ecosystem="pypi",
    bin="bin/gptme",
    format="gptme",
    session_dir=".local/share/gptme/logs",
    steps=(Step("fix", (*_RUN, FIX_PROMPT)), Step("refunds", (*_RUN, REFUND_PROMPT))),
    script=GptmeScript,
    env=_env,
    # The workspace symlink (to the task folder, which the copy would follow) and locks.
    # events.jsonl: gptme's recovery log, the same messages again (not read).
    exclude=("workspace", ".lock", ".*.lock", "events.jsonl"),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 3,
            "message/assistant": 9,
            "message/context": 10,
            "tool/call": 11,
            "tool/result": 11,
            "session/title": 1,
        },
        "titles": ["ledger-balance-fix"],
        "cwd": str(TASK),
        "watch": "*/conversation.jsonl",
    },
    own_text=OWN_TEXT,
)
