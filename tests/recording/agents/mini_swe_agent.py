"""mini-SWE-agent (PyPI ``mini-swe-agent``): ``mini -y --exit-immediately -t TASK`` with a
LiteLLM model ``openai/scripted-model`` whose base URL (``OPENAI_BASE_URL``) is the scripted
server, on the OpenAI chat dialect with native tool calls (its default ``mini.yaml``).

mini-SWE-agent has one tool, ``bash``, and no sessions to continue: each run is one
trajectory, ``<MSWEA_GLOBAL_CONFIG_DIR>/last_mini_run.traj.json`` (default
``~/.config/mini-swe-agent``; overwritten by the next run) or the file ``-o`` names, rewritten
whole after each step. A run ends when the model issues ``echo
COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` (the script adds it where the plan ends a turn).

Steps: the fix (a failing test run, ``cat`` of ledger.py and of a missing file, the edit, a
long output) saved with ``-o``; the refund test, another run with ``-o``; a run interrupted
(SIGINT) while its command runs, which asks the user what to do and, its stdin closed,
ends with the exception (the default output file). No sub-agents, compaction, titles or
images: mini-SWE-agent has none. LiteLLM's model cost map is read from the package
(``LITELLM_LOCAL_MODEL_COST_MAP``), and cost tracking is off (the scripted model has no
price).
"""

from __future__ import annotations

import shlex

from tests.recording.agents import (
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

TASK = RECORD_ROOT / "mini-swe-agent" / "shop"
CONFIG_DIR = ".config/mini-swe-agent"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
# mini.yaml's instance template: "Please solve this issue: {{task}}", then its own rules.
TASK_INTRO = "Please solve this issue: "


class MiniTools(NamedTools):
    """Everything through ``bash``: reads with ``cat``, the edit with Python, the write with
    a here-document (mini.yaml's own examples)."""

    def read(self, step: str, name: str) -> ToolCall:
        return self.tool_call("bash", step, command=f"cat {name}")

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        code = f"import pathlib; p = pathlib.Path({name!r}); p.write_text(p.read_text().replace({old!r}, {new!r}))"  # noqa: E501
        return self.tool_call("bash", step, command=f"python3 -c {shlex.quote(code)}")

    def write(self, step: str, name: str, content: str) -> ToolCall:
        return self.tool_call("bash", step, command=f"cat <<'EOF' > {name}\n{content}EOF")


def _task(text: str) -> tuple[str, ...]:
    """The prompt a mini.yaml instance message wraps: its first line, after the intro."""
    if text.startswith(TASK_INTRO):
        return (text[len(TASK_INTRO) :].split("\n", 1)[0],)
    return (text,)


class MiniScript:
    """The plan; where it ends a turn with text alone, the text comes with the submission
    command (a reply without a tool call is a format error to mini-SWE-agent)."""

    def __init__(self) -> None:
        self.plan = PlanScript(
            MiniTools(TASK, "call_", ("bash", "command"), ("bash", "command"), ("bash", "", "")),
            summary_asked,
            unfold=_task,
        )

    def reply(self, conversation: Conversation) -> Reply:
        reply = self.plan.reply(conversation)
        if reply.tool_calls or not conversation.tools:
            return reply
        submit = self.plan.tools.shell("submit", SUBMIT, "Submit")
        return Reply(text=reply.text, reasoning=reply.reasoning, tool_calls=(submit,))


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "MSWEA_GLOBAL_CONFIG_DIR": str(ctx.home / CONFIG_DIR),
        "MSWEA_CONFIGURED": "true",  # no first-run questions
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_COST_TRACKING": "ignore_errors",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_BASE_URL": f"{ctx.base_url}/v1",
        "OPENAI_API_KEY": ctx.key,
    }


def _run(task: str, *output: str) -> tuple[str, ...]:
    return ("{bin}", "-y", "--exit-immediately", "-m", "openai/scripted-model", "-t", task,
            *output)  # fmt: skip


RECIPE = Recipe(
    agent="mini-swe-agent",
    package="mini-swe-agent",
    version="2.4.6",
    ecosystem="pypi",
    bin="bin/mini",
    format="mini-swe-agent",
    session_dir=CONFIG_DIR,
    python="3.12",
    steps=(
        Step("fix", _run(FIX_PROMPT, "-o", f"{{home}}/{CONFIG_DIR}/fix.traj.json")),
        Step("refunds", _run(REFUND_PROMPT, "-o", f"{{home}}/{CONFIG_DIR}/refunds.traj.json")),
        Step("interrupt", _run(SLOW_PROMPT), interrupt_after=20.0),
    ),
    script=MiniScript,
    env=_env,
    # mini-SWE-agent's settings (.env: the first-run answers) and its prompt history.
    exclude=(".env", "interactive_history.txt"),
    expect={
        "sessions": 3,
        "events": {
            "message/user": 3,
            "message/assistant": 10,
            "tool/call": 9,
            "tool/result": 9,
            # Each run's exit: Submitted twice, then the interrupted run's EOFError.
            "message/context": 3,
        },
        # The failing test run and the missing file (exit status 1), and the command the
        # interrupt stopped ("action was not executed").
        "tool_errors": 3,
        "skipped": {"message:system": 3},
        "whole": True,
    },
    note="The interrupted run asks the user what to do; its stdin closed, it ends with the"
    " EOFError it records as its exit.",
    # mini.yaml's templates (the instance message wraps the task in its own rules; the
    # trajectory's config keeps every template).
    own_text=OwnText(
        prefixes=(TASK_INTRO,),
        fields=(
            "system_template",
            "instance_template",
            "format_error_template",
            "observation_template",
        ),
        keep_prefix=True,
    ),
)
