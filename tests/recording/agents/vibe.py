"""Mistral Vibe (PyPI ``mistral-vibe``): ``vibe --legacy-harness -p --auto-approve`` with a
provider of its own in ``$VIBE_HOME/config.toml`` (an OpenAI-style ``api_base``, the key
from an environment variable) on the OpenAI chat dialect. ``--legacy-harness``: the agent
loop that writes the 2.x session folders (the default harness writes the unified store).

Steps on one session: the fix (bash, read_file, a read of a missing file, a ``task``
sub-agent, edit, a long output), then a refund test (write_file) continued with ``-c``.
Vibe writes ``~/.vibe/logs/session/session_<time>_<id8>/`` (``meta.json``,
``messages.jsonl``) and the sub-agent's folder under its ``agents/``. Vibe needs Python 3.12.
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

TASK = RECORD_ROOT / "vibe" / "shop"
MODEL = "scripted-model"
TITLE = "Ledger balance fix"
KEY_VAR = "SCRIPTED_API_KEY"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class VibeScript:
    def reply(self, conversation: Conversation) -> Reply:
        if not conversation.tools:  # a side request: a title, a compaction summary
            if conversation.mentions("summar"):
                return Reply(text=SUMMARY)
            return Reply(text=TITLE)
        if SUBAGENT_PROMPT in conversation.first_user_text:
            if not conversation.tool_results():
                read = _call("read_file", "sub-read", file_path=str(TASK / "ledger.py"))
                return Reply(text="Looking at refund().", tool_calls=(read,))
            return Reply(text="refund() appends -amount, so it subtracts the amount.")
        prompt = conversation.last_user_text
        done = len(conversation.tool_results(conversation.since_last_user()))
        if REFUND_PROMPT in prompt:
            if done == 0:
                write = _call("write_file", "refunds", file_path=str(TASK / "test_refunds.py"),
                              content=TEST_REFUNDS)  # fmt: skip
                return Reply(text="I'll add a refund test.", tool_calls=(write,))
            return Reply(text="Added test_refunds.py: a refund of 4 from 10 leaves 6.")
        if FIX_PROMPT in prompt:
            return self._fix(done)
        return Reply(text="Done.")

    def _fix(self, done: int) -> Reply:
        rerun = "python3 -m unittest -v test_ledger && seq 1 1500"
        steps = [
            Reply(
                text="Let me run the tests first.",
                reasoning="Run the failing test.",
                tool_calls=(
                    _call("bash", "run-tests", command="python3 -m unittest -v test_ledger"),
                ),
            ),
            Reply(
                tool_calls=(_call("read_file", "read-ledger", file_path=str(TASK / "ledger.py")),)
            ),
            Reply(
                text="Let me check the project notes too.",
                tool_calls=(_call("read_file", "read-notes", file_path=str(TASK / MISSING_FILE)),),
            ),
            Reply(
                text="There are no notes. I'll ask a helper to check the refunds.",
                tool_calls=(_call("task", "spawn", task=SUBAGENT_PROMPT, agent="explore"),),
            ),
            Reply(
                text="balance() skips the first entry. Fixing it.",
                tool_calls=(
                    _call(
                        "edit",
                        "fix",
                        file_path=str(TASK / "ledger.py"),
                        old_string=LEDGER_BUG,
                        new_string=LEDGER_FIX,
                    ),
                ),
            ),
            Reply(tool_calls=(_call("bash", "rerun", command=rerun),)),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text="Fixed: Ledger.balance now sums every entry, and test_ledger passes.")


def _prepare(ctx: RunContext) -> None:
    vibe_home = ctx.home / ".vibe"
    vibe_home.mkdir(parents=True, exist_ok=True)
    (vibe_home / "config.toml").write_text(
        f'active_model = "scripted"\nenable_telemetry = false\n\n'
        f'[[providers]]\nname = "scripted"\napi_base = "{ctx.base_url}/v1"\n'
        f'api_key_env_var = "{KEY_VAR}"\n\n'
        f'[[models]]\nname = "{MODEL}"\nprovider = "scripted"\nalias = "scripted"\n'
    )


def _env(ctx: RunContext) -> dict[str, str]:
    return {KEY_VAR: ctx.key, "VIBE_HOME": str(ctx.home / ".vibe")}


_RUN = ("{bin}", "--legacy-harness", "--auto-approve")

# Vibe's system prompt (``meta.json``'s ``system_prompt``) and its tool definitions
# (``tools_available``), in each session's meta.json.
OWN_TEXT = OwnText(prefixes=("You are Mistral Vibe",), fields=("system_prompt", "tools_available"))

RECIPE = Recipe(
    agent="vibe",
    package="mistral-vibe",
    version="2.26.1",
    ecosystem="pypi",
    python="3.12",
    bin="bin/vibe",
    format="vibe",
    session_dir=".vibe/logs/session",
    steps=(
        Step("fix", (*_RUN, "-p", FIX_PROMPT)),
        Step("refunds", (*_RUN, "-c", "-p", REFUND_PROMPT)),
    ),
    script=VibeScript,
    env=_env,
    prepare=_prepare,
    # Vibe's session index and its registry of running sessions, not sessions.
    exclude=("active", ".session_index.json"),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 3,
            "message/assistant": 10,
            "tool/call": 8,
            "tool/result": 8,
        },
        "tool_errors": 2,  # the failing test run and the missing file
        "cwd": str(TASK),
    },
    own_text=OWN_TEXT,
)
