"""Nanocoder (``@nanocollective/nanocoder``): ``nanocoder run`` against the OpenAI Chat
Completions dialect, a provider in ``agents.config.json`` (``NANOCODER_CONFIG_DIR``: the
default ``openai-compatible`` SDK provider with the scripted server's ``baseUrl``); the
update check off in ``nanocoder-preferences.json``.

Nanocoder saves a session only from its Ink interface (``useSessionAutosave``: the
``--plain`` runtime, the default without a terminal, saves nothing), so each run is
``--no-plain``; the session file is written when the run exits.

Tools: ``execute_bash``, ``read_file``, ``string_replace``, ``write_file`` and the ``agent``
sub-agent (``explore``: its conversation is kept in memory only, so only the call and its
result are on disk).
"""

from __future__ import annotations

import json
import shlex

from tests.recording.agents import (
    FIX_PROMPT,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import NamedTools, PlanScript, summary_asked
from tests.recording.script import Conversation, ToolCall

TASK = RECORD_ROOT / "nanocoder" / "shop"
PROVIDER, MODEL = "scripted", "scripted-coder"


class NanocoderTools(NamedTools):
    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (self.tool_call("agent", step, subagent_type="explore", description=prompt),)


def _is_summary(conversation: Conversation) -> bool:
    # The LLM compaction asks, without tools, to summarise a conversation segment.
    return summary_asked(conversation)


def _script() -> PlanScript:
    return PlanScript(
        NanocoderTools(
            TASK,
            "call_",
            ("execute_bash", "command"),
            ("read_file", "path"),
            ("write_file", "path", "content"),
            ("string_replace", "path", "old_str", "new_str"),
        ),
        _is_summary,
    )


def _env(ctx: RunContext) -> dict[str, str]:
    config = ctx.home / ".config" / "nanocoder"
    config.mkdir(parents=True, exist_ok=True)
    agents = {
        "nanocoder": {
            "providers": [
                {
                    "name": PROVIDER,
                    "baseUrl": f"{ctx.base_url}/v1",
                    "apiKey": "$SCRIPTED_API_KEY",
                    "models": [MODEL],
                }
            ],
        }
    }
    (config / "agents.config.json").write_text(json.dumps(agents, indent=2))
    return {
        "SCRIPTED_API_KEY": ctx.key,
        "NANOCODER_CONFIG_DIR": str(config),
        "NANOCODER_DATA_DIR": str(ctx.home / ".local" / "share" / "nanocoder"),
        "NANOCODER_LOG_DISABLE_FILE": "1",
    }


_RUN = f"{{bin}} --provider {PROVIDER} --model {MODEL} --mode yolo --trust-directory run"


def _in_terminal(command: str) -> tuple[str, ...]:
    """``command`` in a pseudo-terminal (``script``): Ink needs a terminal's raw mode."""
    return ("script", "-qfec", command, "/dev/null")

RECIPE = Recipe(
    agent="nanocoder",
    package="@nanocollective/nanocoder",
    version="1.30.0",
    ecosystem="npm",
    bin="node_modules/.bin/nanocoder",
    format="nanocoder",
    session_dir=".local/share/nanocoder/sessions",
    node="22",
    steps=(
        Step("fix", _in_terminal(f"{_RUN} {shlex.quote(FIX_PROMPT)}")),
        Step("refund", _in_terminal(f"{_RUN} {shlex.quote(REFUND_PROMPT)}")),
    ),
    script=_script,
    env=_env,
    expect={},
)
