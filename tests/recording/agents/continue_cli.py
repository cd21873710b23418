"""Continue CLI (npm ``@continuedev/cli``, ``cn``): ``cn -p --auto`` with a ``config.yaml``
naming an OpenAI-compatible model (``provider: openai``, ``apiBase``) on the OpenAI chat
dialect.

Steps on one session, each later one ``--resume``\\ d: the fix (Bash, Read, a Read of a
missing file, Edit, a long output), a refund test (Write), ``/compact`` (the summary
request: the session file is rewritten from the summary on), and a question after it.
Continue writes ``~/.continue/sessions/<id>.json``, the whole history rewritten after each
change, and ``sessions.json`` listing them. ``cn -p /compact`` compacts (it asks for the
summary and says "Chat history compacted") but does not save the compacted history: the
next ``--resume`` loads the whole history again, and the file holds no summary. Not
recorded: a turn interrupted (SIGINT) while its command runs (tried: ``cn -p`` saves the
session when a turn ends, so the interrupted one leaves nothing), and the ``Subagent``
tool (it needs a model configured for sub-agents; its conversation is never saved anyway).
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
from tests.recording.agents._plan import NamedTools, PlanScript
from tests.recording.script import Conversation
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "continue" / "shop"


def _is_summary(conversation: Conversation) -> bool:
    # /compact: "Please provide a concise summary of our conversation so far, ..."
    return "summary of our conversation" in conversation.last_user_text


def _script() -> PlanScript:
    return PlanScript(
        NamedTools(
            TASK,
            "call_",
            ("Bash", "command"),
            ("Read", "filepath"),
            ("Write", "filepath", "content"),
            ("Edit", "file_path", "old_string", "new_string"),
        ),
        _is_summary,
    )


def _prepare(ctx: RunContext) -> None:
    (ctx.home / "config.yaml").write_text(
        "name: scripted\nversion: 1.0.0\nschema: v1\nmodels:\n"
        "  - name: scripted\n    provider: openai\n    model: scripted-model\n"
        f"    apiBase: {ctx.base_url}/v1\n    apiKey: {ctx.key}\n"
        "    roles: [chat, edit, apply, summarize]\n"
    )


def _env(ctx: RunContext) -> dict[str, str]:
    return {"CONTINUE_CLI_ENABLE_TELEMETRY": "0", "CONTINUE_METRICS_ENABLED": "0"}


# Continue saves no system message; its system prompt's opening, should one be saved.
OWN_TEXT = OwnText(prefixes=("You are an agent in the Continue CLI",))

_RUN = ("{bin}", "--config", "{home}/config.yaml", "--auto", "-p")

RECIPE = Recipe(
    agent="continue",
    package="@continuedev/cli",
    version="1.5.47",
    ecosystem="npm",
    bin="node_modules/.bin/cn",
    format="continue",
    session_dir=".continue/sessions",
    steps=(
        Step("fix", (*_RUN, FIX_PROMPT)),
        Step("refunds", (*_RUN, REFUND_PROMPT, "--resume")),
        Step("compact", (*_RUN, "/compact", "--resume")),
        Step("after-compact", (*_RUN, AFTER_COMPACT_PROMPT, "--resume")),
    ),
    script=_script,
    env=_env,
    prepare=_prepare,
    expect={
        "sessions": 1,
        "events": {
            "message/user": 3,
            "message/assistant": 7,
            "tool/call": 6,
            "tool/result": 6,
        },
        "tool_errors": 2,  # the failing test run and the missing file
        "cwd": str(TASK),
    },
    own_text=OWN_TEXT,
)
