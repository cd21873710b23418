"""The Codex CLI (``@openai/codex``): ``codex exec`` against the OpenAI Responses dialect, a
model provider in ``$CODEX_HOME/config.toml`` (``wire_api = "responses"``).

Tools: ``exec_command`` runs every command (reads included: Codex has no read tool), the
freeform ``apply_patch`` edits, ``spawn_agent``/``wait_agent`` run a sub-agent
(``multi_agent_v2``). Steps: the fix, ``exec resume --last`` with the refund prompt, a resume
interrupted (SIGINT) while its command runs, and a resume whose
``model_auto_compact_token_limit`` is below what the session holds, so Codex compacts before
answering (it asks the model for the summary: a local compaction).
"""

from __future__ import annotations

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    IMAGE_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import IMAGE_FILE, SLOW_PROMPT, WRITE_IMAGE, PlanScript
from tests.recording.script import Conversation, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "codex" / "shop"
MODEL = "gpt-5.5"  # a model Codex knows (its metadata: tools, instructions)


# Codex's own prompt text, which its rollouts copy: the base instructions, the developer
# messages (skills, permissions, multi-agent roles) and the skills listing of world_state.
OWN_TEXT = OwnText(
    prefixes=(
        "You are Codex",
        "You are a coding agent",
        "You are `/root`",
        "You are an agent in a team",
        "<skills_instructions>",
        "<permissions instructions>",
        "<multi_agent_mode>",
        "<collaboration_mode>",
        "## Skills",
    )
)


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


def _patch(*lines: str) -> str:
    return "\n".join(("*** Begin Patch", *lines, "*** End Patch")) + "\n"


class CodexTools:
    def shell(self, step: str, command: str, description: str) -> ToolCall:
        return _call("exec_command", step, cmd=command, workdir=str(TASK))

    def read(self, step: str, name: str) -> ToolCall:
        return self.shell(step, f"cat {name}", f"Read {name}")

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        lines = ("@@ class Ledger:", f"-        {old}", f"+        {new}")
        return _call("apply_patch", step, input=_patch(f"*** Update File: {name}", *lines))

    def write(self, step: str, name: str, content: str) -> ToolCall:
        added = tuple(f"+{line}" for line in content.splitlines())
        return _call("apply_patch", step, input=_patch(f"*** Add File: {name}", *added))

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        # multi_agent_v2: spawn_agent returns at once, wait_agent waits for the answer; the
        # sub-agent starts without the parent's history (fork_turns "none").
        spawn = _call(
            "spawn_agent", step, task_name="check_refunds", message=prompt, fork_turns="none"
        )
        return (spawn, _call("wait_agent", f"{step}-wait", timeout_ms=60000))


def _is_summary(conversation: Conversation) -> bool:
    # Codex's compaction prompt: "You are performing a CONTEXT CHECKPOINT COMPACTION. ..."
    return "CONTEXT CHECKPOINT COMPACTION" in conversation.last_user_text


def _script() -> PlanScript:
    return PlanScript(
        CodexTools(),
        _is_summary,
        harness=(
            "<environment_context>",
            "# AGENTS.md",
            "<user_instructions>",
            "<turn_aborted>",
            "Message Type: FINAL_ANSWER",  # a sub-agent's answer, delivered to its parent
        ),
    )


def _env(ctx: RunContext) -> dict[str, str]:
    """The environment, after writing ``config.toml``: the provider is the scripted server,
    update checks, analytics and feedback are off."""
    codex_home = ctx.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    config = f"""model = "{MODEL}"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "{ctx.base_url}/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[history]
persistence = "none"

[features]
multi_agent_v2 = true
"""
    (codex_home / "config.toml").write_text(config)
    return {"CODEX_HOME": str(codex_home), "SCRIPTED_API_KEY": ctx.key}


_EXEC = ("{bin}", "exec", "--json", "--skip-git-repo-check")
_YOLO = ("--dangerously-bypass-approvals-and-sandbox",)
_RESUME = (*_EXEC, "resume", "--last", *_YOLO)

RECIPE = Recipe(
    agent="codex",
    package="@openai/codex",
    version="0.171.0",
    ecosystem="npm",
    bin="node_modules/.bin/codex",
    format="codex",
    session_dir=".codex/sessions",
    steps=(
        Step("fix", (*_EXEC, *_YOLO, FIX_PROMPT)),
        Step("resume", (*_RESUME, REFUND_PROMPT)),
        # Before exec_command yields (10 s): later, the command goes on in the background
        # and the turn ends on its own.
        Step("interrupt", (*_RESUME, SLOW_PROMPT), interrupt_after=8.0),
        Step(
            "compact",
            (*_RESUME, "-c", "model_auto_compact_token_limit=4000", AFTER_COMPACT_PROMPT),
        ),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_RESUME, "-i", IMAGE_FILE, IMAGE_PROMPT)),
    ),
    script=_script,
    env=_env,
    own_text=OWN_TEXT,
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 6,
            "message/assistant": 16,
            "tool/call": 10,
            "tool/result": 10,
            "compaction": 1,
        },
        "titles": ["check_refunds"],
        "tool_errors": 3,
        # Skipped and counted (minimums): the image attached to a prompt.
        "skipped": {"user-part:input_image": 1},
        "cwd": str(TASK),
        # Rollouts grow by lines: watch must pick up an appended turn.
        "watch": "*/*/*/rollout-*.jsonl",
    },
)
