"""OpenHands CLI (``openhands``, its agent SDK ``openhands-sdk``; Python 3.12): ``openhands
--headless --json --override-with-envs`` against the OpenAI Chat Completions dialect through
LiteLLM (``LLM_BASE_URL``, ``LLM_API_KEY``, ``LLM_MODEL`` with an ``openai/`` model name);
LiteLLM's model cost map is read from its local copy (``LITELLM_LOCAL_MODEL_COST_MAP``).

Tools: ``terminal``, ``file_editor`` (view, create, str_replace; every call names its
``security_risk``) and the ``task`` sub-agent (a ``general-purpose`` sub-conversation, in
``subagents/`` of its parent). Steps: the fix, ``--resume --last`` with the refund prompt, a
turn interrupted (SIGINT) while its command runs, a condensation (the condenser's
``max_size`` lowered in ``agent_settings.json`` so the next turn condenses), and a question
after it.
"""

from __future__ import annotations

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    AGENTS_CACHE,
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

TASK = RECORD_ROOT / "openhands" / "shop"
VERSION = "1.16.0"
MODEL = "openai/gpt-4o"
PYTHON = str(AGENTS_CACHE / f"openhands-{VERSION}" / "bin" / "python")
# The agent the conversation was made with, its condenser's window lowered (a summary once
# the view holds more than this many events), saved where the CLI loads its agent from. (No
# braces: a step's argv is formatted.)
CONDENSE = """
import glob, json, os, sys
from openhands.sdk import Agent
home = sys.argv[1]
(state,) = glob.glob(os.path.join(home, ".openhands/conversations/*/base_state.json"))
agent = Agent.model_validate(json.load(open(state))["agent"])
condenser = agent.condenser.model_copy(update=dict(max_size=int(sys.argv[2]), keep_first=1))
agent = agent.model_copy(update=dict(condenser=condenser))
open(os.path.join(home, ".openhands/agent_settings.json"), "w").write(agent.model_dump_json())
"""


def _call(tool: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", tool, step, {**arguments, "security_risk": "LOW"})


class OpenHandsTools:
    def shell(self, step: str, command: str, description: str) -> ToolCall:
        return _call("terminal", step, command=command, summary=description)

    def read(self, step: str, name: str) -> ToolCall:
        return _call("file_editor", step, command="view", path=str(TASK / name))

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        return _call(
            "file_editor", step, command="str_replace", path=str(TASK / name), old_str=old,
            new_str=new,
        )  # fmt: skip

    def write(self, step: str, name: str, content: str) -> ToolCall:
        return _call(
            "file_editor", step, command="create", path=str(TASK / name), file_text=content
        )

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (
            _call(
                "task",
                step,
                description=description,
                prompt=prompt,
                subagent_type="general-purpose",
            ),
        )


def _is_summary(conversation: Conversation) -> bool:
    # The condenser's prompt: "You are maintaining a context-aware state summary ..."
    return "context-aware state summary" in conversation.last_user_text


def _script() -> PlanScript:
    return PlanScript(OpenHandsTools(), _is_summary)


# The system prompt and the condenser's prompt, which the events copy.
OWN_TEXT = OwnText(prefixes=("You are OpenHands agent", "You are maintaining a context-aware"))


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "LLM_API_KEY": ctx.key,
        "LLM_BASE_URL": f"{ctx.base_url}/v1",
        "LLM_MODEL": MODEL,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENHANDS_SUPPRESS_BANNER": "1",
    }


_H = ("{bin}", "--headless", "--json", "--override-with-envs")
_RESUME = (*_H, "--resume", "--last")

RECIPE = Recipe(
    agent="openhands",
    package="openhands",
    version=VERSION,
    ecosystem="pypi",
    python="3.12",
    bin="bin/openhands",
    format="openhands",
    session_dir=".openhands/conversations",
    steps=(
        Step("fix", (*_H, "-t", FIX_PROMPT)),
        Step("resume", (*_RESUME, "-t", REFUND_PROMPT)),
        # After the CLI has started (15-30 s here) and before the terminal gives up waiting for
        # output (30 s after the command starts).
        Step("interrupt", (*_RESUME, "-t", SLOW_PROMPT), interrupt_after=40.0),
        Step("condense-settings", (PYTHON, "-c", CONDENSE, "{home}", "16")),
        Step("after-compact", (*_RESUME, "-t", AFTER_COMPACT_PROMPT)),
    ),
    script=_script,
    env=_env,
    own_text=OWN_TEXT,
    exclude=("*.lock",),
    note=(
        "The CLI takes a task as text only (no image). SIGINT stops the run before the "
        "command's observation is written; the next run, resumed, runs that action again "
        "after the new prompt and writes its observation then."
    ),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 5,
            "message/assistant": 14,
            "tool/call": 9,
            "tool/result": 9,
            "compaction": 1,
        },
        # The missing file, and the first test run (exit code 1).
        "tool_errors": 2,
        "titles": ["Check refund handling"],
        "cwd": str(TASK),
        # Folders of whole event files: titles come with the sessions' ends.
        "whole": True,
    },
)
