"""Pi (``@mariozechner/pi-coding-agent``): ``pi -p`` against the OpenAI Chat Completions
dialect, a custom provider in ``~/.pi/agent/models.json``; startup network operations
(update checks, install telemetry) off with ``PI_OFFLINE`` and ``enableInstallTelemetry``.

Tools: ``bash``, ``read``, ``edit``, ``write`` (Pi has no sub-agent). Steps: the fix,
``--continue`` with the refund prompt, at whose end Pi compacts (its context window is set
just under what the session holds by then: ``/compact`` is a prompt in ``-p`` mode), a turn
interrupted (SIGINT) while its command runs, and a question after it.
"""

from __future__ import annotations

import json

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
)
from tests.recording.script import Conversation

TASK = RECORD_ROOT / "pi" / "shop"
PROVIDER, MODEL = "scripted", "scripted-coder"


def _is_summary(conversation: Conversation) -> bool:
    # Pi's compaction asks for a summary in its structured format.
    return "summar" in conversation.system.lower() and not conversation.tools


def _script() -> PlanScript:
    return PlanScript(
        NamedTools(
            TASK,
            "call_",
            ("bash", "command"),
            ("read", "path"),
            ("write", "path", "content"),
            ("edit", "path", "oldText", "newText"),
        ),
        _is_summary,
    )


def _env(ctx: RunContext) -> dict[str, str]:
    """The environment, after writing ``models.json`` (the scripted provider) and
    ``settings.json`` (no install telemetry)."""
    agent = ctx.home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            PROVIDER: {
                "baseUrl": f"{ctx.base_url}/v1",
                "api": "openai-completions",
                "apiKey": "SCRIPTED_API_KEY",
                # Auto-compaction when the context passes contextWindow - reserveTokens
                # (settings): 2000 tokens as the dialect counts them, above the fix's last
                # request (1964), below the refund turn's last (2015).
                "models": [
                    {
                        "id": MODEL,
                        "reasoning": True,
                        "input": ["text", "image"],
                        "contextWindow": 4000,
                    }
                ],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models, indent=2))
    settings = {
        "enableInstallTelemetry": False,
        "compaction": {"enabled": True, "reserveTokens": 2000, "keepRecentTokens": 200},
    }
    (agent / "settings.json").write_text(json.dumps(settings, indent=2))
    return {"SCRIPTED_API_KEY": ctx.key, "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}


_P = ("{bin}", "--provider", PROVIDER, "--model", MODEL, "-p")

RECIPE = Recipe(
    agent="pi",
    package="@mariozechner/pi-coding-agent",
    version="0.73.1",
    ecosystem="npm",
    bin="node_modules/.bin/pi",
    format="pi",
    session_dir=".pi/agent/sessions",
    steps=(
        Step("fix", (*_P, FIX_PROMPT)),
        Step("resume", (*_P, "--continue", REFUND_PROMPT)),
        Step("interrupt", (*_P, "--continue", SLOW_PROMPT), interrupt_after=20.0),
        Step("after-compact", (*_P, "--continue", AFTER_COMPACT_PROMPT)),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_P, "--continue", f"@{IMAGE_FILE}", IMAGE_PROMPT)),
    ),
    script=_script,
    env=_env,
    expect={
        "sessions": 1,
        "children": 0,
        "events": {
            "message/user": 5,
            "message/assistant": 12,
            "tool/call": 7,
            "tool/result": 7,
            "compaction": 1,
        },
        "tool_errors": 3,
        # Skipped and counted (minimums): the image attached to a prompt.
        "skipped": {"user-block:image": 1},
        "cwd": str(TASK),
        "watch": "*/*.jsonl",
    },
)
