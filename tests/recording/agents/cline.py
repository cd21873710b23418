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

from tests.recording.agents import FIX_PROMPT, RECORD_ROOT, Recipe, RunContext, Step
from tests.recording.agents._plan import NamedTools, PlanScript, summary_asked
from tests.recording.script import ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "cline" / "shop"
MODEL = "scripted-model"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class ClineTools(NamedTools):
    def shell(self, step: str, command: str, description: str) -> ToolCall:
        return self.tool_call("run_commands", step, commands=[command])

    def read(self, step: str, name: str) -> ToolCall:
        return self.tool_call("read_files", step, files=[{"path": self.path(name)}])

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        system = "You review Python code and answer in one sentence."
        return (self.tool_call("spawn_agent", step, systemPrompt=system, task=prompt),)


def _script() -> PlanScript:
    return PlanScript(
        ClineTools(
            TASK,
            "call_",
            ("run_commands", "commands"),
            ("read_files", "files"),
            # The editor creates a missing file from new_text alone.
            ("editor", "path", "new_text"),
            ("editor", "path", "old_text", "new_text"),
        ),
        summary_asked,
    )


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
    script=_script,
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
