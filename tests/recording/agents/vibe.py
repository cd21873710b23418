"""Mistral Vibe (PyPI ``mistral-vibe``): ``vibe -p --auto-approve`` with a provider of its
own in ``$VIBE_HOME/config.toml`` (an OpenAI-style ``api_base``, the key from an environment
variable) on the OpenAI chat dialect. 3.x has no ``--legacy-harness``: its runtime writes the
unified store, ``~/.vibe/logs/session/unified/<session>/`` (``CURRENT``, ``meta.json``,
``generations/``, ``chunks/``, ``journal/``).

Steps on one session, each later one continued with ``-c``: the fix (bash, read_file, a
read of a missing file, a sub-agent, edit, a long output), the refund test (write_file), a
turn interrupted (SIGINT) while its command runs, and a question. The model's window and
``auto_compact_threshold`` are set to the smallest 3.x accepts, so Vibe compacts in the
fix's turn after the long output; its context then quotes the prompts between
``<previous_user_messages>`` messages, the summary and the items after it ("shown
reduced"), and the turn goes on. 3.x has no ``task`` tool: the sub-agent is spawned from
TypeScript through ``run_typescript`` (``tools.agents.spawn``); its answer comes back to
the parent as a "Runtime notification". Vibe needs Python 3.12; 3.0.3 pins
``certifi==2026.10.19``, which the registry no longer offers (``requirement_swaps``).
"""

from __future__ import annotations

import json

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import (
    FINAL_FIX,
    SLOW_PROMPT,
    NamedTools,
    PlanScript,
    summary_asked,
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "vibe" / "shop"
MODEL = "scripted-model"
KEY_VAR = "SCRIPTED_API_KEY"
COMPACTED = "You are continuing a trajectory after a context compaction."
REDUCED = "<system>Items after the summary"  # what came after the summary, in brief
# 3.x refuses a threshold outside its bounds for the model's window: 10 000 tokens is the
# lowest it takes, for the smallest window it accepts (13 334).
CONTEXT_WINDOW = 13334
COMPACT_AT = 10000


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class VibeTools(NamedTools):
    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        # 3.x has no task tool: a child is spawned from TypeScript (``tools.agents``); it
        # inherits the parent's configuration, and its answer comes back as a notification.
        message = json.dumps(prompt)
        code = f"return await tools.agents.spawn({{ name: 'refunds', message: {message} }});"
        return (self.tool_call("run_typescript", step, code=code),)


def _is_summary(conversation: Conversation) -> bool:
    # Vibe's compaction prompt: "You are performing a CONTEXT CHECKPOINT COMPACTION. ..."
    return "CONTEXT CHECKPOINT COMPACTION" in conversation.last_user_text or summary_asked(
        conversation
    )


def _unfold(text: str) -> tuple[str, ...]:
    """After compacting, Vibe's context quotes the user's prompts, one message each, between
    its own messages (the opener, the summary, the items after it): not prompts."""
    if text.startswith((COMPACTED, "</previous_user_messages>", REDUCED)):
        return ()
    return (text,)


class VibeScript:
    """The plan; after a compaction inside the fix's turn (the long output was its last
    call), the turn ends with the fix's final answer."""

    def __init__(self) -> None:
        self.plan = PlanScript(
            VibeTools(
                TASK,
                "call_",
                ("bash", "command"),
                ("read_file", "path"),
                ("write_file", "path", "content"),
                ("edit", "file_path", "old_string", "new_string"),
            ),
            _is_summary,
            # Vibe's context warning as the budget fills; a child's answer, delivered.
            harness=("<vibe_warning>", "Runtime notification:"),
            unfold=_unfold,
        )

    def reply(self, conversation: Conversation) -> Reply:
        turns = conversation.turns
        if turns and turns[-1].role == "user" and turns[-1].text.startswith(REDUCED):
            return Reply(text=FINAL_FIX)
        return self.plan.reply(conversation)


def _prepare(ctx: RunContext) -> None:
    vibe_home = ctx.home / ".vibe"
    vibe_home.mkdir(parents=True, exist_ok=True)
    (vibe_home / "config.toml").write_text(
        f'active_model = "scripted"\nenable_telemetry = false\nenable_update_checks = false\n'
        f"enable_auto_update = false\n\n"
        f'[[providers]]\nname = "scripted"\napi_base = "{ctx.base_url}/v1"\n'
        f'api_key_env_var = "{KEY_VAR}"\n\n'
        f'[[models]]\nname = "{MODEL}"\nprovider = "scripted"\nalias = "scripted"\n'
        # The smallest window and threshold 3.x takes: it compacts after the long output.
        f"max_context_length = {CONTEXT_WINDOW}\nauto_compact_threshold = {COMPACT_AT}\n"
    )


def _env(ctx: RunContext) -> dict[str, str]:
    return {KEY_VAR: ctx.key, "VIBE_HOME": str(ctx.home / ".vibe")}


_RUN = ("{bin}", "--auto-approve")

# Vibe's system prompt and its tool definitions: 2.x in each session's meta.json
# (``system_prompt``, ``tools_available``), 3.x in the journal's copy of each request
# (``tool_catalog``) and the runtime state's ``tool_groups``.
OWN_TEXT = OwnText(
    prefixes=("You are Mistral Vibe", "You help users get complex tasks done"),
    fields=("system_prompt", "tools_available", "tool_catalog", "tool_groups"),
)

RECIPE = Recipe(
    agent="vibe",
    package="mistral-vibe",
    version="3.0.3",
    ecosystem="pypi",
    python="3.12",
    bin="bin/vibe",
    format="vibe",
    session_dir=".vibe/logs/session",
    steps=(
        Step("fix", (*_RUN, "-p", FIX_PROMPT)),
        Step("refunds", (*_RUN, "-c", "-p", REFUND_PROMPT)),
        # Vibe 3.x takes 10-15 s to start here: the command must be running when Ctrl-C comes.
        Step("interrupt", (*_RUN, "-c", "-p", SLOW_PROMPT), interrupt_after=25.0),
        Step("after-compact", (*_RUN, "-c", "-p", AFTER_COMPACT_PROMPT)),
    ),
    script=VibeScript,
    env=_env,
    prepare=_prepare,
    # Vibe's session index, its registry of running sessions, and its plugin cache (its own
    # skills' text).
    exclude=("active", ".session-index.json", "plugins"),
    note="mistral-vibe 3.0.3 pins certifi==2026.10.19, which the registry no longer offers:"
    " installed with certifi 2026.10.19.post1 and the wheel with --no-deps",
    requirement_swaps={"certifi==2026.10.19": "certifi==2026.10.19.post1"},
    expect={
        "sessions": 2,
        # The child spawned from run_typescript (agents.spawn).
        "children": 1,
        "events": {
            "message/user": 5,
            "message/assistant": 14,
            "tool/call": 9,
            "tool/result": 9,
            # Vibe compacts inside the fix's turn, after the long output.
            "compaction": 1,
        },
        # The missing file, and the command cut off by the interrupt.
        "tool_errors": 2,
        "cwd": str(TASK),
    },
    own_text=OWN_TEXT,
)
