"""Open Interpreter (PyPI ``open-interpreter``): ``interpreter --stdin -y`` (one prompt read
from stdin, its code run without asking) with a LiteLLM model ``openai/scripted-model`` on
the scripted server (``--api_base``, ``--api_key``; the OpenAI chat dialect with native
tool calls: its ``execute`` function, a language and the code), ``--offline`` and
``--disable_telemetry``; LiteLLM's cost map read from the package.

Steps: the fix (a failing test run, ``cat`` of ledger.py and of a missing file, the edit in
Python, a long output), then the refund test: each ``--stdin`` run is a conversation of its
own (a resumed conversation is only offered by the interactive ``--conversations`` menu).
Open Interpreter writes ``conversations/<first words>__<time>.json`` in its config folder
when a chat turn is over. No sub-agents, compaction, titles or times.
"""

from __future__ import annotations

import shlex

from tests.recording.agents import FIX_PROMPT, RECORD_ROOT, REFUND_PROMPT, Recipe, RunContext, Step
from tests.recording.agents._plan import NamedTools, PlanScript, summary_asked
from tests.recording.script import ToolCall

TASK = RECORD_ROOT / "open-interpreter" / "shop"
CONFIG_DIR = ".config/open-interpreter"


class InterpreterTools(NamedTools):
    """Everything through ``execute``: shell commands, and Python for the file edits."""

    def shell(self, step: str, command: str, description: str) -> ToolCall:
        return self.tool_call("execute", step, language="shell", code=f"cd {TASK} && {command}")

    def read(self, step: str, name: str) -> ToolCall:
        return self.shell(step, f"cat {name}", "Read")

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        code = (
            f"import pathlib\np = pathlib.Path({str(TASK / name)!r})\n"
            f"p.write_text(p.read_text().replace({old!r}, {new!r}))\nprint('edited')"
        )
        return self.tool_call("execute", step, language="python", code=code)

    def write(self, step: str, name: str, content: str) -> ToolCall:
        code = f"printf %s {shlex.quote(content)} > {name}"
        return self.shell(step, code, "Write")


def _script() -> PlanScript:
    return PlanScript(
        InterpreterTools(TASK, "call_", ("execute", "code"), ("execute", "code"), ("", "", "")),
        summary_asked,
    )


def _env(ctx: RunContext) -> dict[str, str]:
    return {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "DISABLE_TELEMETRY": "true"}


_RUN = (
    "{bin}", "--stdin", "-y", "--offline", "--disable_telemetry", "--model",
    "openai/scripted-model", "--api_base", "{base_url}/v1", "--api_key", "{key}",
    "--context_window", "100000", "--max_tokens", "4000", "--llm_supports_functions",
)  # fmt: skip

RECIPE = Recipe(
    agent="open-interpreter",
    package="open-interpreter",
    version="0.4.3",
    ecosystem="pypi",
    bin="bin/interpreter",
    format="open-interpreter",
    session_dir=CONFIG_DIR,
    python="3.12",
    extra_packages=("setuptools<81",),
    steps=(
        Step("fix", _RUN, stdin=FIX_PROMPT + "\n"),
        Step("refunds", _RUN, stdin=REFUND_PROMPT + "\n"),
    ),
    script=_script,
    env=_env,
    # Its profiles (the settings it writes on first run) are not conversations.
    exclude=("profiles",),
    expect={
        "sessions": 2,
        "events": {"message/user": 2, "message/assistant": 6, "tool/call": 6, "tool/result": 6},
        "whole": True,
    },
    note="Open Interpreter records no exit status: the failing test run and the missing file"
    " are outputs like any other. Its model must be told it supports function calls"
    " (--llm_supports_functions): LiteLLM knows no such model, and without them Open"
    " Interpreter asks for code in markdown.",
)
