"""Nanocoder (``@nanocollective/nanocoder``): ``nanocoder run`` against the OpenAI Chat
Completions dialect, a provider in ``agents.config.json`` (``NANOCODER_CONFIG_DIR``: the
default ``openai-compatible`` SDK provider with the scripted server's ``baseUrl``); the
update check off in ``nanocoder-preferences.json``.

Nanocoder saves a session only from its Ink interface (``useSessionAutosave``: the
``--plain`` runtime, the default without a terminal, saves nothing), so each run is
``--no-plain``; the session file is written when the run exits.

Going on with a saved session (``--continue``, ``--resume``) is for the interactive
interface only; an editor does it over the Agent Client Protocol (``--acp``), which saves to
the same files: ``nanocoder_acp.py`` drives it, as an editor would.

Tools: ``execute_bash``, ``read_file``, ``string_replace``, ``write_file`` and the ``agent``
sub-agent (a ``helper`` defined in ``~/.config/nanocoder/agents``: 1.30.0's package lacks
its built-in ``explore`` and ``plan`` definitions; a sub-agent's conversation is kept in
memory only, so only the call and its result are on disk). Steps: the fix (``run``); over
ACP, the same session loaded: the refund test, a turn cancelled while its command runs, a
question, a prompt with an image and a rename; then a ``run`` with a small context
(``--context-max``) that compacts once its tool has answered. Nanocoder's update check
cannot be switched off (the interface starts it unconditionally): the namespace has no
route for it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    IMAGE_PROMPT,
    LEDGER,
    RECORD_ROOT,
    REFUND_PROMPT,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.agents._plan import (
    IMAGE_FILE,
    SLOW_PROMPT,
    TITLE,
    WRITE_IMAGE,
    NamedTools,
    PlanScript,
    summary_asked,
)
from tests.recording.script import Conversation, ToolCall

TASK = RECORD_ROOT / "nanocoder" / "shop"
PROVIDER, MODEL = "scripted", "scripted-coder"
HELPER = "helper"
# A sub-agent of the user's (agents/<name>.md: YAML front matter, then its instructions).
HELPER_AGENT = f"""---
name: {HELPER}
description: Looks into a question about the code and reports in one sentence.
---

Answer the question you are given about the code in the current folder, in one sentence.
"""
ACP_DRIVER = Path(__file__).with_name("nanocoder_acp.py")


class NanocoderTools(NamedTools):
    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (self.tool_call("agent", step, subagent_type=HELPER, description=prompt),)


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
    helpers = ctx.home / ".config" / "nanocoder" / "agents"
    helpers.mkdir(parents=True, exist_ok=True)
    (helpers / f"{HELPER}.md").write_text(HELPER_AGENT)
    return {
        "SCRIPTED_API_KEY": ctx.key,
        "NANOCODER_CONFIG_DIR": str(config),
        "NANOCODER_DATA_DIR": str(ctx.home / ".local" / "share" / "nanocoder"),
        "NANOCODER_LOG_DISABLE_FILE": "1",
    }


_AGENT = f"{{bin}} --provider {PROVIDER} --model {MODEL} --mode yolo"
_RUN = f"{_AGENT} --trust-directory run"
_RESET = f"import sys; open(sys.argv[1], 'w').write({LEDGER!r})".replace("{", "{{").replace(
    "}", "}}"
)
# The session's turns over ACP, in order (nanocoder_acp.py's actions).
_ACP_ACTIONS = [
    ["prompt", REFUND_PROMPT],
    ["cancel", SLOW_PROMPT, 8],
    ["prompt", AFTER_COMPACT_PROMPT],
    ["image", IMAGE_PROMPT, "{task}/" + IMAGE_FILE],
    ["rename", TITLE],
]


def _json_arg(value: object) -> str:
    """``value`` as a JSON argument whose ``{bin}``, ``{home}`` and ``{task}`` the recorder
    fills in (its other braces kept)."""
    text = json.dumps(value).replace("{", "{{").replace("}", "}}")
    for name in ("bin", "home", "task"):
        text = text.replace("{{" + name + "}}", "{" + name + "}")
    return text


def _prepare(ctx: RunContext) -> None:
    """The ACP client, where a step runs it (a path outside the repository)."""
    (ctx.home / ACP_DRIVER.name).write_text(ACP_DRIVER.read_text())


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
        Step("image-file", WRITE_IMAGE),
        Step(
            "acp",
            (
                "python3",
                "{home}/" + ACP_DRIVER.name,
                _json_arg(["{bin}", *_AGENT.split()[1:], "--acp"]),
                _json_arg(_ACP_ACTIONS),
            ),
        ),
        # The fix again, in a session of its own, in the task as it was: with a context of
        # 10k tokens, Nanocoder compacts once, after the long output's answer.
        Step("reset-task", ("python3", "-c", _RESET, "{task}/ledger.py")),
        Step(
            "compact",
            _in_terminal(
                f"{_AGENT} --context-max 10k --trust-directory run {shlex.quote(FIX_PROMPT)}"
            ),
        ),
    ),
    script=_script,
    env=_env,
    prepare=_prepare,
    note="The fix by `run`; the same session loaded over ACP (nanocoder_acp.py) for the"
    " refund test, a cancelled turn, a question, an image and a rename; the fix again in a"
    " session of its own with a 10k context, which Nanocoder compacts: its file keeps the"
    " summary and the kept messages only.",
    expect={
        "sessions": 2,
        "children": 0,
        "events": {
            "message/user": 5,
            "message/assistant": 14,
            "tool/call": 9,
            "tool/result": 9,
            "compaction": 1,
        },
        # The failing test run, the missing file, the cancelled command.
        "tool_errors": 3,
        "titles": [TITLE],
        "whole": True,
        "skipped": {"message:images": 1, "title:summary": 1},
        "cwd": str(TASK),
        "no_watch": "whole JSON documents (test_nanocoder follows one with watch)",
    },
)
