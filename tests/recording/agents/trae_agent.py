"""Trae Agent (ByteDance's ``trae-agent``, not published on a registry: installed from its
public source at commit e839e55, version 0.1.0, into its own venv; its dependencies come
from PyPI): ``trae-cli run TASK -w TASK_DIR -t TRAJECTORY`` with a config file naming an
``openai`` provider whose ``base_url`` is the scripted server (the OpenAI Responses
dialect) and the fake key; lakeview (a second model summarising each step for the console)
off.

Trae Agent keeps no sessions to continue: each ``run`` is one trajectory JSON (default
``trajectories/trajectory_<local time>.json`` under the folder it was started in; here the
file ``-t`` names), rewritten whole after each LLM interaction and each agent step. A run
ends when the model calls ``task_done`` (the script adds it where the plan ends a turn with
text alone: a reply without a tool call makes Trae ask again).

Steps: the fix (a failing test run, a read of ledger.py and of a missing file, the edit, a
long output), the refund test (another run), and a run interrupted (SIGINT) while its
command runs. No sub-agents, compaction, titles or images: Trae Agent has none.
"""

from __future__ import annotations

from tests.recording.agents import (
    AGENTS_CACHE,
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import SLOW_PROMPT, NamedTools, PlanScript, summary_asked
from tests.recording.script import Conversation, Reply, ToolCall
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "trae-agent" / "shop"
# Its source: a checkout of bytedance/trae-agent at commit e839e55 (``git archive`` of it),
# made before recording (the recorder reaches only package registries).
SOURCE = AGENTS_CACHE / "trae-agent-src"
TRAJECTORIES = "trajectories"
# Trae's user message: the project path, then the task after this line.
ISSUE_INTRO = "Here's the issue text:\n"
CONFIG = """\
agents:
    trae_agent:
        enable_lakeview: false
        model: scripted
        max_steps: 30
        tools:
            - bash
            - str_replace_based_edit_tool
            - sequentialthinking
            - task_done
model_providers:
    openai:
        api_key: {key}
        provider: openai
        base_url: {base_url}/v1
models:
    scripted:
        model_provider: openai
        model: scripted-model
        max_tokens: 4096
        temperature: 0.5
        top_p: 1
        top_k: 0
        max_retries: 1
        parallel_tool_calls: false
"""


class TraeTools(NamedTools):
    """``bash`` (a command), and ``str_replace_based_edit_tool`` whose ``command`` says what
    it does: ``view`` a file, ``str_replace`` in it, ``create`` it."""

    def read(self, step: str, name: str) -> ToolCall:
        return self.tool_call(
            "str_replace_based_edit_tool", step, command="view", path=self.path(name)
        )

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        return self.tool_call(
            "str_replace_based_edit_tool", step, command="str_replace", path=self.path(name),
            old_str=old, new_str=new,
        )  # fmt: skip

    def write(self, step: str, name: str, content: str) -> ToolCall:
        return self.tool_call(
            "str_replace_based_edit_tool", step, command="create", path=self.path(name),
            file_text=content,
        )  # fmt: skip


def _task(text: str) -> tuple[str, ...]:
    """The prompt Trae's user message wraps: what follows its issue line."""
    if ISSUE_INTRO in text:
        return (text.split(ISSUE_INTRO, 1)[1].strip(),)
    return (text,)


class TraeScript:
    """The plan; where it ends a turn with text alone, the text comes with ``task_done``."""

    def __init__(self) -> None:
        self.tools = TraeTools(TASK, "call_", ("bash", "command"), ("", ""), ("", "", ""))
        self.plan = PlanScript(self.tools, summary_asked, unfold=_task)

    def reply(self, conversation: Conversation) -> Reply:
        reply = self.plan.reply(conversation)
        if reply.tool_calls or not conversation.tools:
            return reply
        done = self.tools.tool_call("task_done", "done")
        return Reply(text=reply.text, reasoning=reply.reasoning, tool_calls=(done,))


def _prepare(ctx: RunContext) -> None:
    (ctx.home / "trae_config.yaml").write_text(CONFIG.format(key=ctx.key, base_url=ctx.base_url))


def _env(ctx: RunContext) -> dict[str, str]:
    return {}


def _run(task: str, name: str) -> tuple[str, ...]:
    return ("{bin}", "run", task, "--config-file", "{home}/trae_config.yaml", "-w", "{task}",
            "-t", f"{{home}}/{TRAJECTORIES}/trajectory_{name}.json")  # fmt: skip


RECIPE = Recipe(
    agent="trae-agent",
    package="trae-agent",
    version="0.1.0",
    ecosystem="pypi",
    bin="bin/trae-cli",
    format="trae-agent",
    session_dir=TRAJECTORIES,
    python="3.12",
    # What it imports without declaring (its docker mode's ``docker`` and ``pexpect``), and
    # the pydantic its lock file pins (mcp 1.12.2 imports what later pydantic removed).
    extra_packages=("docker", "pexpect", "pydantic==2.11.5"),
    source=SOURCE,
    steps=(
        Step("fix", _run(FIX_PROMPT, "fix")),
        Step("refunds", _run(REFUND_PROMPT, "refunds")),
        Step("interrupt", _run(SLOW_PROMPT, "interrupt"), interrupt_after=20.0),
    ),
    script=TraeScript,
    env=_env,
    prepare=_prepare,
    expect={
        "sessions": 3,
        "events": {
            "message/user": 3,
            "message/assistant": 7,
            "tool/call": 6,
            "tool/result": 6,
            # Each finished run's end (the interrupted run has none).
            "message/context": 2,
        },
        # The failing test run and the missing file.
        "tool_errors": 2,
        "skipped": {"message:system": 3, "call:task_done": 2, "call:unfinished": 1},
        "cwd": str(TASK),
        "whole": True,
    },
    note="Installed from bytedance/trae-agent's public source at commit e839e55 (version"
    " 0.1.0; the package is not published). The interrupted run's last LLM interaction is"
    " recorded but its step never is (the interrupt skips it and the run's end).",
    # Trae's system prompt, copied into each run's first LLM interaction and first step.
    own_text=OwnText(prefixes=("You are an expert AI software engineering agent.",)),
)
