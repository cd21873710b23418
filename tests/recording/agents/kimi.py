"""Kimi CLI (PyPI ``kimi-cli``): its Typer CLI, ``--print --yolo -p``, with an
``openai_legacy`` provider in a ``--config-file`` on the OpenAI chat dialect. The package's
``kimi`` command only prints a deprecation notice (the CLI moved to another product):
the recipe runs the CLI the package still ships, ``kimi_cli.cli``, with its Python.

Steps on one session, each later one continued with ``-C``: the fix (Shell, ReadFile, a
read of a missing file, an ``Agent`` sub-agent, StrReplaceFile, a long output), a refund
test (WriteFile), a turn interrupted (SIGINT) while its command runs, ``/compact`` and a
question after it. Kimi writes
``~/.kimi/sessions/<md5 of the work dir>/<session>/wire.jsonl`` (the sub-agent's in
``subagents/<id>/``), ``state.json``, and ``~/.kimi/kimi.json`` naming the work dir.
Kimi CLI needs Python 3.12 or later; 3.12.1 fails at start (a ``super()`` in a frozen
generic dataclass), 3.13 runs it.
"""

from __future__ import annotations

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import SLOW_PROMPT, NamedTools, PlanScript
from tests.recording.script import Conversation, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "kimi" / "shop"
MODEL = "scripted-model"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("tool_", name, step, dict(arguments))


class KimiTools(NamedTools):
    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        edit = {"old": old, "new": new}
        return self.tool_call("StrReplaceFile", step, path=self.path(name), edit=edit)

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        # The read-only ``explore`` agent: it reads where the plan's sub-agent would grep.
        arguments = {"description": description, "prompt": prompt, "subagent_type": "explore"}
        return (self.tool_call("Agent", step, **arguments),)


def _is_summary(conversation: Conversation) -> bool:
    # /compact's request: the history as one message, no tools offered.
    return not conversation.tools


def _script() -> PlanScript:
    return PlanScript(
        KimiTools(
            TASK,
            "tool_",
            ("Shell", "command"),
            ("ReadFile", "path"),
            ("WriteFile", "path", "content"),
        ),
        _is_summary,
    )


def _prepare(ctx: RunContext) -> None:
    (ctx.home / "config.toml").write_text(
        f'default_model = "scripted"\ntelemetry = false\n\n'
        f'[providers.scripted]\ntype = "openai_legacy"\nbase_url = "{ctx.base_url}/v1"\n'
        f'api_key = "{ctx.key}"\n\n'
        f'[models.scripted]\nprovider = "scripted"\nmodel = "{MODEL}"\n'
        "max_context_size = 128000\n"
    )


def _env(ctx: RunContext) -> dict[str, str]:
    return {"KIMI_DISABLE_TELEMETRY": "1"}


_RUN = ("{bin}", "-c", "from kimi_cli.cli import cli; cli()", "--config-file",
        "{home}/config.toml", "--print", "--yolo")  # fmt: skip

# Kimi's system prompt and agent prompts, should a record copy them.
OWN_TEXT = OwnText(prefixes=("You are Kimi Code CLI", "You are a software engineering expert"))

RECIPE = Recipe(
    agent="kimi",
    package="kimi-cli",
    version="1.52.0",
    ecosystem="pypi",
    python="3.13",
    bin="bin/python",
    format="kimi",
    session_dir=".kimi",
    steps=(
        Step("fix", (*_RUN, "-p", FIX_PROMPT)),
        Step("refunds", (*_RUN, "-C", "-p", REFUND_PROMPT)),
        Step("interrupt", (*_RUN, "-C", "-p", SLOW_PROMPT), interrupt_after=10.0),
        Step("compact", (*_RUN, "-C", "-p", "/compact")),
        Step("after-compact", (*_RUN, "-C", "-p", AFTER_COMPACT_PROMPT)),
    ),
    script=_script,
    env=_env,
    prepare=_prepare,
    # Kimi's logs, telemetry queue and device id; context.jsonl, the model's context
    # (rewritten on compaction, its system prompt included): not a source.
    exclude=("logs", "telemetry", "device_id", "context*.jsonl"),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 6,
            "message/assistant": 15,
            "tool/call": 9,
            "tool/result": 9,
            "command": 1,
            "command/output": 1,
            "compaction": 1,
        },
        # The failing test run, the missing file, and the call cut off by the interrupt.
        "tool_errors": 3,
        "cwd": str(TASK),
        "watch": "sessions/*/*/wire.jsonl",
    },
    own_text=OWN_TEXT,
)
