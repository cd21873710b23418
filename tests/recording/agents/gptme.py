"""gptme (PyPI ``gptme``): ``gptme --non-interactive --no-confirm`` with the ``local``
provider (an OpenAI-compatible server at ``OPENAI_BASE_URL``) pointed at the OpenAI Chat
Completions dialect, in the ``tool`` tool format (native tool calls, stored in the
conversation as ``@tool(call id): {...}`` lines with results carrying the call id).

Steps on one conversation, named with ``--name`` so the later ones continue it: the fix
(shell, read, a read of a missing file, an ``ipython`` call starting a sub-agent and waiting
for it, patch, a long shell output), a refund test (save), a turn interrupted (SIGINT)
while its command runs, and a prompt naming an image (attached: the message's ``files``).
``read``, ``ipython`` and ``subagent`` are not enabled by default: ``--tools +...`` adds
them. A reply without a call
gets gptme's ``<system>No tool call detected`` nudge, answered with ``complete``. gptme
writes ``~/.local/share/gptme/logs/<name>/`` with ``conversation.jsonl`` and ``config.toml``
(the workspace, the model, the name the model gave), and the sub-agent's
``subagent-<id>-<suffix>/`` with ``subagent-meta.json`` naming its parent's folder.
"""

from __future__ import annotations

from tests.recording.agents import (
    FIX_PROMPT,
    IMAGE_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    SUBAGENT_PROMPT,
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
    summary_asked,
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "gptme" / "shop"
NAME = "ledger-fix"
MODEL = "local/scripted-model"
HELPER = "refund-check"  # the sub-agent's id: its conversation is subagent-<id>
# gptme's note beside an attached file the model cannot view (the scripted model is no
# vision model): not a prompt either.
NO_VIEWING = "[WARNING: Model doesn't support viewing file"
NUDGE = "<system>"  # gptme's nudge in the user's turn ("No tool call detected"): not a prompt


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class GptmeTools(NamedTools):
    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        patch = f"<<<<<<< ORIGINAL\n        {old}\n=======\n        {new}\n>>>>>>> UPDATED"
        return self.tool_call("patch", step, path=self.path(name), patch=patch)

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        # An ipython call that starts the sub-agent and waits for its answer.
        code = f"subagent({HELPER!r}, {prompt!r})\nsubagent_wait({HELPER!r})"
        return (self.tool_call("ipython", step, code=code),)


class GptmeScript:
    """The plan, and gptme's own step: a reply without a call gets the nudge, answered with
    its ``complete`` tool, which ends the turn."""

    def __init__(self) -> None:
        self.plan = PlanScript(
            GptmeTools(
                TASK, "call_", ("shell", "command"), ("read", "path"), ("save", "path", "content")
            ),
            summary_asked,
            harness=(NUDGE, NO_VIEWING),
        )

    def reply(self, conversation: Conversation) -> Reply:
        if conversation.tools and conversation.last_user_text.lstrip().startswith(NUDGE):
            if SUBAGENT_PROMPT in conversation.first_user_text:
                return Reply(tool_calls=(_call("complete", "sub-done"),))
            prompts = self.plan.prompts(conversation)
            since = self.plan.since(conversation, prompts[-1] if prompts else "")
            return Reply(tool_calls=(_call("complete", f"done-{len(prompts)}-{len(since)}"),))
        return self.plan.reply(conversation)


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
    steps=(
        Step("fix", (*_RUN, FIX_PROMPT)),
        Step("refunds", (*_RUN, REFUND_PROMPT)),
        Step("interrupt", (*_RUN, SLOW_PROMPT), interrupt_after=30.0),
        Step("image-file", WRITE_IMAGE),
        # A path in the prompt attaches the file.
        Step("image", (*_RUN, f"{IMAGE_PROMPT} {{task}}/{IMAGE_FILE}")),
    ),
    script=GptmeScript,
    env=_env,
    # The workspace symlink (to the task folder, which the copy would follow) and locks.
    # events.jsonl: gptme's recovery log, the same messages again (not read).
    exclude=("workspace", ".lock", ".*.lock", "events.jsonl"),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 5,
            "message/assistant": 13,
            "message/context": 10,
            "tool/call": 14,
            "tool/result": 14,
            "session/title": 1,
        },
        "tool_errors": 1,  # the call cut off by the interrupt ("Interrupted by user")
        "titles": [TITLE],
        "cwd": str(TASK),
        "watch": "*/conversation.jsonl",
    },
    own_text=OWN_TEXT,
)
