"""Factory Droid (``@factory/cli``): ``droid exec`` with a custom model (BYOK, provider
``anthropic``) pointed at the Anthropic dialect.

The wrapper package ``@factory/cli`` 0.225.1 names a platform package of its own version that
the registry does not offer; the platform package ``@factory/cli-linux-x64`` 0.225.2 carries the
same executable the wrapper would run, so that is what is installed and recorded.

One step: the fix (Execute, Read, a Read of a missing file that errors, a ``Task`` sub-agent
awaited, Edit, a long Execute output), after which Droid compacts the session (its
``compactionTokenLimit`` set low), asking the model for the summary. Offline, Droid can do no
more: ``exec -s <session>`` fetches the session from Factory's service before it continues it,
the ``stream-json`` input fails every message without that service, and a ``Task`` sub-agent
needs the daemon, which needs a Factory login ("No access token available"): the Task call's
result is that error.
"""

from __future__ import annotations

import json

from tests.recording.agents import FIX_PROMPT, RECORD_ROOT, Recipe, RunContext, Step, session_id_of
from tests.recording.agents._plan import NamedTools, PlanScript
from tests.recording.script import Conversation, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "droid" / "shop"
MODEL = "custom:Scripted-0"  # Droid names a custom model by its display name and index
KEY_VAR = "SQ_SCRIPTED_KEY"  # settings.json refers to the key by this variable, never holds it


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("toolu_", name, step, dict(arguments))


class DroidTools(NamedTools):
    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        arguments = {"subagent_type": "worker", "description": description, "prompt": prompt}
        return (self.tool_call("Task", step, **arguments, **{"await": True}),)


def _is_summary(conversation: Conversation) -> bool:
    asked = not conversation.tools or conversation.mentions("create a detailed summary")
    return asked and conversation.mentions("summar")


def _script() -> PlanScript:
    return PlanScript(
        DroidTools(
            TASK,
            "toolu_",
            ("Execute", "command", "summary"),
            ("Read", "file_path"),
            ("Create", "file_path", "content"),
            ("Edit", "file_path", "old_str", "new_str"),
        ),
        _is_summary,
    )


def _prepare(ctx: RunContext) -> None:
    factory = ctx.home / ".factory"
    factory.mkdir(parents=True, exist_ok=True)
    model = {
        "model": "claude-scripted",
        "displayName": "Scripted",
        "baseUrl": ctx.base_url,
        "apiKey": "${" + KEY_VAR + "}",
        "provider": "anthropic",
        "maxOutputTokens": 8192,
    }
    # A low compactionTokenLimit: the session is compacted after the fix (a summary request).
    settings = {"customModels": [model], "cloudSessionSync": False, "compactionTokenLimit": 2500}
    (factory / "settings.json").write_text(json.dumps(settings, indent=2))


def _env(ctx: RunContext) -> dict[str, str]:
    # No documented telemetry switch: the namespace keeps it in; updates are off.
    return {KEY_VAR: ctx.key, "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false"}


_EXEC = ("{bin}", "exec", "-m", MODEL, "--skip-permissions-unsafe", "-o", "json")

OWN_TEXT = OwnText(prefixes=("<system-reminder>",))  # reminders in the user's turns

RECIPE = Recipe(
    agent="droid",
    package="@factory/cli-linux-x64",
    version="0.225.2",
    ecosystem="npm",
    bin="node_modules/@factory/cli-linux-x64/bin/droid",
    format="droid",
    session_dir=".factory/sessions",
    steps=(Step("fix", (*_EXEC, FIX_PROMPT)),),
    script=_script,
    env=_env,
    prepare=_prepare,
    captures={"session_id": session_id_of},
    note="the platform package of @factory/cli (0.225.1's own is not offered)",
    expect={
        "sessions": 1,
        "children": 0,
        "events": {
            "message/user": 1,
            "message/assistant": 8,
            "message/context": 1,
            "tool/call": 6,
            "tool/result": 6,
            "session/title": 1,
            # After the turn, over compactionTokenLimit: Droid asks for a summary.
            "compaction": 1,
        },
        # The failing test run, the missing file, and the Task that could not start.
        "tool_errors": 3,
        "titles": [FIX_PROMPT],
        "cwd": str(TASK),
        "watch": "*/*.jsonl",
    },
    own_text=OWN_TEXT,
)
