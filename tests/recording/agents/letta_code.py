"""Letta Code (``@letta-ai/letta-code``): ``letta -p --backend local`` (its local backend,
which keeps conversations on disk as Pi's session format) against the OpenAI Chat
Completions dialect, through its OpenRouter provider with ``OPENROUTER_BASE_URL`` set to
the scripted server (a catalogue model id, so the backend accepts it; a model of a
provider connected with ``letta connect`` is refused); telemetry and the auto-updater off
with ``LETTA_CODE_TELEM=0``, ``DO_NOT_TRACK`` and ``DISABLE_AUTOUPDATER=1``.

Tools: ``Bash``, ``Read``, ``Edit``, ``Write`` and the ``Agent`` sub-agent (run in the
background as an agent of its own, in that agent's default conversation). Steps: the fix
(a new conversation), ``--conversation`` with the refund prompt, a turn interrupted
(SIGINT) while its command runs, and a question after it. No compaction (see ``note``).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import SLOW_PROMPT, PlanScript
from tests.recording.script import Conversation, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "letta-code" / "shop"
MODEL = "openrouter/moonshotai/kimi-k2.6"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class LettaTools:
    def shell(self, step: str, command: str, description: str) -> ToolCall:
        return _call("Bash", step, command=command, description=description)

    def read(self, step: str, name: str) -> ToolCall:
        return _call("Read", step, file_path=str(TASK / name))

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        return _call("Edit", step, file_path=str(TASK / name), old_string=old, new_string=new)

    def write(self, step: str, name: str, content: str) -> ToolCall:
        return _call("Write", step, file_path=str(TASK / name), content=content)

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (
            _call("Agent", step, description=description, prompt=prompt,
                  subagent_type="general-purpose"),
        )  # fmt: skip


def _is_summary(conversation: Conversation) -> bool:
    return "summar" in conversation.system.lower() and not conversation.tools


def _script() -> PlanScript:
    return PlanScript(LettaTools(), _is_summary, harness=("<system-reminder>",))


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "OPENROUTER_API_KEY": ctx.key,
        "OPENROUTER_BASE_URL": f"{ctx.base_url}/v1",
        "LETTA_CODE_DEV_PI_PROVIDER": "openrouter",
        "LETTA_LOCAL_BACKEND_EXPERIMENTAL": "1",
        "LETTA_CODE_TELEM": "0",
        "DO_NOT_TRACK": "1",
        "DISABLE_AUTOUPDATER": "1",
        "LETTA_DISABLE_LSP_DOWNLOAD": "1",
    }


def _output(name: str) -> Callable[[str], str | None]:
    """A value of ``letta -p --output-format json``'s result (``conversation_id``,
    ``agent_id``): later steps continue that conversation."""

    def read(stdout: str) -> str | None:
        try:
            value = json.loads(stdout).get(name)
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, str) else None

    return read


_B = ("node", "{bin}", "--backend", "local", "--output-format", "json")
_L = (*_B, "--model", MODEL)
# Continuing steps name no model: --model applies the model's defaults to the agent again
# (its context_window_limit among them).
_C = (*_B, "--conversation", "{conversation_id}")

RECIPE = Recipe(
    agent="letta-code",
    package="@letta-ai/letta-code",
    version="0.32.18",
    ecosystem="npm",
    bin="node_modules/@letta-ai/letta-code/letta.js",
    format="letta-code",
    session_dir=".letta/lc-local-backend",
    node="22",
    steps=(
        Step("fix", (*_L, "-p", FIX_PROMPT)),
        Step("resume", (*_C, "-p", REFUND_PROMPT)),
        Step("interrupt", (*_C, "-p", SLOW_PROMPT), interrupt_after=15.0),
        Step("question", (*_C, "-p", AFTER_COMPACT_PROMPT)),
    ),
    captures={"conversation_id": _output("conversation_id")},
    # The agents' records (their system prompts), their memory repositories and the system
    # prompt each conversation keeps are Letta Code's own text, not conversations.
    exclude=("agents", "memfs", "system-prompt.json"),
    own_text=OwnText(prefixes=("<system-reminder>",), keep_prefix=True),
    script=_script,
    env=_env,
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 5,
            "message/assistant": 14,
            "message/context": 17,
            "tool/call": 9,
            "tool/result": 9,
        },
        # The interrupted call, which Letta Code closed itself on the next turn; a failed
        # read is written as a plain result (isError false).
        "tool_errors": 1,
        "titles": ["Check refund handling"],
        "cwd": str(TASK),
        "watch": "conversations/*/messages.jsonl",
    },
    note=(
        "No compaction: `-p /compact` is a prompt, not the command, and the local backend "
        "compacts on its own estimate, which follows the provider's reported usage (the "
        "scripted server does not count tool definitions) while the window must hold the "
        "system prompt and tools: no window satisfies both. The sub-agent (Agent tool) runs "
        "in the background as an agent of its own; its answer is not delivered to the parent "
        "within `-p`."
    ),
)
