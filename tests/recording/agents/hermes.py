"""Hermes agent (PyPI ``hermes-agent``): ``hermes -z`` (one-shot) with the ``custom``
provider, an OpenAI-compatible endpoint named in ``$HERMES_HOME/config.yaml`` (``model:
provider, base_url, default, api_key``; Hermes reads no base URL from the environment), on
the OpenAI chat dialect.

Steps: the fix (``terminal``, ``read_file``, a read of a missing file, a ``delegate_task``
sub-agent, ``patch``, a long output), then, continuing the same session with ``hermes chat
--continue -q`` (``-z`` resumes nothing), the refund test (``write_file``), a turn
interrupted (SIGINT) while its command runs, a question after it, and a prompt with an
image (``--image``: Hermes has the model describe it first, and writes the description
before the prompt): Hermes appends to
the session's rows, and leaves them in ``state.db``'s -wal file (the scrub folds it in).
Hermes writes every session and message into ``$HERMES_HOME/state.db`` (SQLite); the
sub-agent is a session whose ``parent_session_id`` is the fix's.
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
from tests.recording.agents._plan import (
    IMAGE_FILE,
    SLOW_PROMPT,
    WRITE_IMAGE,
    NamedTools,
    PlanScript,
    summary_asked,
)
from tests.recording.script import ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "hermes" / "shop"
MODEL = "scripted-model"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("call_", name, step, dict(arguments))


class HermesTools(NamedTools):
    def shell(self, step: str, command: str, description: str) -> ToolCall:
        # The terminal starts elsewhere than the task folder.
        return self.tool_call("terminal", step, command=f"cd {TASK} && {command}")

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        arguments = {"path": self.path(name), "old_string": old, "new_string": new}
        return self.tool_call("patch", step, mode="replace", **arguments)

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        context = f"The project is in {TASK}."
        return (self.tool_call("delegate_task", step, goal=prompt, context=context),)


def _script() -> PlanScript:
    return PlanScript(
        HermesTools(
            TASK,
            "call_",
            ("terminal", "command"),
            ("read_file", "path"),
            ("write_file", "path", "content"),
        ),
        summary_asked,
    )


def _config(ctx: RunContext) -> str:
    return (
        "model:\n"
        "  provider: custom\n"
        f"  base_url: {ctx.base_url}/v1\n"
        f"  default: {MODEL}\n"
        f"  api_key: {ctx.key}\n"
    )


def _prepare(ctx: RunContext) -> None:
    hermes_home = ctx.home / ".hermes"
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.yaml").write_text(_config(ctx))


def _env(ctx: RunContext) -> dict[str, str]:
    return {"HERMES_HOME": str(ctx.home / ".hermes"), "HERMES_YOLO_MODE": "1"}


# The system prompt Hermes keeps with each session (its persona, tool guidance, skills).
OWN_TEXT = OwnText(columns=(("sessions", "system_prompt"),))

_CHAT = ("{bin}", "chat", "-Q", "--yolo", "--continue", "-q")

RECIPE = Recipe(
    agent="hermes",
    package="hermes-agent",
    version="0.19.0",
    ecosystem="pypi",
    bin="bin/hermes",
    format="hermes",
    session_dir=".hermes",
    steps=(
        Step("fix", ("{bin}", "-z", FIX_PROMPT)),
        Step("refunds", (*_CHAT, REFUND_PROMPT)),
        Step("interrupt", (*_CHAT, SLOW_PROMPT), interrupt_after=30.0),
        # A prompt after the interrupted turn: what tells its call was cut off.
        Step("after", (*_CHAT, AFTER_COMPACT_PROMPT)),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_CHAT, IMAGE_PROMPT, "--image", f"{{task}}/{IMAGE_FILE}")),
    ),
    script=_script,
    env=_env,
    prepare=_prepare,
    # Hermes's other files: its settings (the fake key), persona, logs, caches, the
    # delegation's live log, a snapshot of its skills prompt. The -wal file is kept: Hermes
    # may leave rows in it (`chat` does), and the scrub folds it into state.db.
    exclude=(
        "config.yaml",
        "SOUL.md",
        "auth.lock",
        "logs",
        "cache",
        ".skills_prompt_snapshot.json",
    ),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 6,
            "message/assistant": 15,
            "tool/call": 9,
            "tool/result": 9,
            # Hermes's description of the attached image, before its prompt.
            "message/context": 1,
        },
        # The missing file, and the call cut off by the interrupt.
        "tool_errors": 2,
        "cwd": str(TASK),
    },
    own_text=OWN_TEXT,
)
