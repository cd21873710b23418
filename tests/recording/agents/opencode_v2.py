"""OpenCode (``opencode-ai``) prompted through its v2 session API (``opencode serve``,
``POST /api/session/:id/prompt``), whose runner writes the conversation to the
``session_message`` table alone (the v1 recording, ``opencode.py``, leaves it empty).

How the v2 runner finds its model (read in the 1.18.33 binary, SessionRunnerModel.resolve):
the session's model, else the catalogue's default (``model`` in ``opencode.json``), taken only
from a provider the v2 catalogue lists whose API is ``@ai-sdk/openai-compatible`` with a URL.
The v1 file's provider is converted into that catalogue, its URL read from the provider's
``api`` (not ``options.baseURL``) and its key from ``options.apiKey`` as written (no ``{env:}``
substitution), so this recipe's file says both. The v2 runner's tools are ``bash``, ``read``,
``edit`` and ``write`` on ``path`` and others; it has no ``task`` tool (no sub-agent), and its
``/wait`` answers 503 (not available yet), so the driver polls ``/api/session/active``.

Steps, in one served session: the fix (tool calls, a failing read), the refund test, and a
turn interrupted (``/interrupt``) while its command runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.recording.agents import FIX_PROMPT, RECORD_ROOT, REFUND_PROMPT, Recipe, RunContext, Step
from tests.recording.agents._plan import SLOW_PROMPT, NamedTools
from tests.recording.agents.opencode import (
    CHECKPOINT,
    DB,
    PROVIDER,
    OpenCodeScript,
    _env,
    _is_summary,
    write_config,
)

TASK = RECORD_ROOT / "opencode-v2" / "shop"
DRIVER = Path(__file__).with_name("opencode_v2_serve.py")
PORT = "4597"


def _script() -> OpenCodeScript:
    tools = NamedTools(
        TASK,
        "call_",
        ("bash", "command"),
        ("read", "path"),
        ("write", "path", "content"),
        ("edit", "path", "oldString", "newString"),
    )
    return OpenCodeScript(tools, _is_summary)


def _env_v2(ctx: RunContext) -> dict[str, str]:
    env = _env(ctx)
    config_file = ctx.home / ".config" / "opencode" / "opencode.json"
    write_config(ctx, config_file)
    config = json.loads(config_file.read_text())
    provider = config["provider"][PROVIDER]
    provider["api"] = f"{ctx.base_url}/v1"
    # The v2 catalogue sends options.apiKey as written: the fake key itself (the file stays
    # outside the recording).
    provider["options"]["apiKey"] = ctx.key
    config_file.write_text(json.dumps(config, indent=2))
    return env


RECIPE = Recipe(
    agent="opencode-v2",
    package="opencode-ai",
    version="1.18.33",
    ecosystem="npm",
    bin="node_modules/.bin/opencode",
    format="opencode",
    session_dir=".local/share/opencode",
    steps=(
        Step(
            "serve",
            (
                "python3",
                str(DRIVER),
                "{bin}",
                PORT,
                FIX_PROMPT,
                REFUND_PROMPT,
                "interrupt:" + SLOW_PROMPT,
            ),
            timeout=600,
        ),
        Step("checkpoint", ("python3", "-c", CHECKPOINT, "{home}/" + DB)),
    ),
    script=_script,
    env=_env_v2,
    exclude=("log", "repos", "snapshot", "*.db-shm", "*.db-wal"),
    expect={
        "sessions": 1,
        "children": 0,
        "events": {"message/user": 3, "message/assistant": 10, "tool/call": 7, "tool/result": 7},
        # The read of a missing file and the call cut off by the interrupt.
        "tool_errors": 2,
        "cwd": str(TASK),
        # A database read whole: titles come with the sessions' ends.
        "whole": True,
    },
)
