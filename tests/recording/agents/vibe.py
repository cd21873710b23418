"""Mistral Vibe (PyPI ``mistral-vibe``): ``vibe --legacy-harness -p --auto-approve`` with a
provider of its own in ``$VIBE_HOME/config.toml`` (an OpenAI-style ``api_base``, the key
from an environment variable) on the OpenAI chat dialect. ``--legacy-harness``: the agent
loop that writes the 2.x session folders (the default harness writes the unified store).

Steps on one session, each later one continued with ``-c``: the fix (bash, read_file, a
read of a missing file, a ``task`` sub-agent, edit, a long output), the refund test
(write_file), a turn interrupted (SIGINT) while its command runs, and a question after a
compaction: the model's ``auto_compact_threshold`` is set low, so Vibe compacts before the
refund prompt (its context then quotes the prompts, the one being answered last).
Vibe writes ``~/.vibe/logs/session/session_<time>_<id8>/`` (``meta.json``,
``messages.jsonl``) and the sub-agent's folder under its ``agents/``. Vibe needs Python 3.12.
"""

from __future__ import annotations

import re

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import SLOW_PROMPT, NamedTools, PlanScript, summary_asked
from tests.recording.script import Conversation, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "vibe" / "shop"
MODEL = "scripted-model"
KEY_VAR = "SCRIPTED_API_KEY"
COMPACTED = "You are continuing a trajectory after a context compaction."
PRESERVED = re.compile(r"<previous_user_message>\n(.*?)\n</previous_user_message>", re.S)
COMPACT_AT = 1200  # context tokens: past the fix's, before the long output is in the context


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class VibeTools(NamedTools):
    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        # The read-only ``explore`` agent: it reads where the plan's sub-agent would grep.
        return (self.tool_call("task", step, task=prompt, agent="explore"),)


def _is_summary(conversation: Conversation) -> bool:
    # Vibe's compaction prompt: "You are performing a CONTEXT CHECKPOINT COMPACTION. ..."
    return "CONTEXT CHECKPOINT COMPACTION" in conversation.last_user_text or summary_asked(
        conversation
    )


def _unfold(text: str) -> tuple[str, ...]:
    """After compacting, Vibe's context quotes the user's prompts (the one being answered
    last) before the summary: they are the prompts."""
    if text.startswith(COMPACTED):
        return tuple(PRESERVED.findall(text))
    return (text,)


def _script() -> PlanScript:
    return PlanScript(
        VibeTools(
            TASK,
            "call_",
            ("bash", "command"),
            ("read_file", "file_path"),
            ("write_file", "file_path", "content"),
            ("edit", "file_path", "old_string", "new_string"),
        ),
        _is_summary,
        # Vibe's context warning as the budget fills.
        harness=("<vibe_warning>",),
        unfold=_unfold,
    )


def _prepare(ctx: RunContext) -> None:
    vibe_home = ctx.home / ".vibe"
    vibe_home.mkdir(parents=True, exist_ok=True)
    (vibe_home / "config.toml").write_text(
        f'active_model = "scripted"\nenable_telemetry = false\n\n'
        f'[[providers]]\nname = "scripted"\napi_base = "{ctx.base_url}/v1"\n'
        f'api_key_env_var = "{KEY_VAR}"\n\n'
        f'[[models]]\nname = "{MODEL}"\nprovider = "scripted"\nalias = "scripted"\n'
        # Low: the session is compacted before the refund prompt.
        f"auto_compact_threshold = {COMPACT_AT}\n"
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
        Step("interrupt", (*_RUN, "-c", "-p", SLOW_PROMPT), interrupt_after=12.0),
        Step("after-compact", (*_RUN, "-c", "-p", AFTER_COMPACT_PROMPT)),
    ),
    script=_script,
    env=_env,
    prepare=_prepare,
    # Vibe's session index and its registry of running sessions, not sessions.
    exclude=("active", ".session_index.json"),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 5,
            "message/assistant": 14,
            "tool/call": 9,
            "tool/result": 9,
            # Vibe compacts before the refund prompt (its threshold set low).
            "compaction": 1,
        },
        # The failing test run, the missing file, and the call cut off by the interrupt.
        "tool_errors": 3,
        "cwd": str(TASK),
    },
    own_text=OWN_TEXT,
)
