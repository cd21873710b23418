"""Kimi CLI (PyPI ``kimi-cli``): its Typer CLI, ``--print --yolo -p``, with an
``openai_legacy`` provider in a ``--config-file`` on the OpenAI chat dialect. The package's
``kimi`` command only prints a deprecation notice (the CLI moved to another product):
the recipe runs the CLI the package still ships, ``kimi_cli.cli``, with its Python.

Steps on one session, each later one continued with ``-C``: the fix (Shell, ReadFile, a
read of a missing file, an ``Agent`` sub-agent, StrReplaceFile, a long output), a refund
test (WriteFile), ``/compact`` and a question after it. Kimi writes
``~/.kimi/sessions/<md5 of the work dir>/<session>/wire.jsonl`` (the sub-agent's in
``subagents/<id>/``), ``state.json``, and ``~/.kimi/kimi.json`` naming the work dir.
Kimi CLI needs Python 3.12 or later; 3.12.1 fails at start (a ``super()`` in a frozen
generic dataclass), 3.13 runs it.
"""

from __future__ import annotations

from tests.recording.agents import (
    AFTER_COMPACT_PROMPT,
    FIX_PROMPT,
    LEDGER_BUG,
    LEDGER_FIX,
    MISSING_FILE,
    RECORD_ROOT,
    REFUND_PROMPT,
    SUBAGENT_PROMPT,
    SUMMARY,
    TEST_REFUNDS,
    Recipe,
    RunContext,
    Step,
)
from tests.recording.script import Conversation, Reply, ToolCall, call
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "kimi" / "shop"
MODEL = "scripted-model"


def _call(name: str, step: str, **arguments: object) -> ToolCall:
    return call("tool_", name, step, dict(arguments))


class KimiScript:
    def reply(self, conversation: Conversation) -> Reply:
        if not conversation.tools:  # /compact's request (the history as one message)
            return Reply(text=SUMMARY)
        if SUBAGENT_PROMPT in conversation.first_user_text:
            if not conversation.tool_results():
                read = _call("ReadFile", "sub-read", path=str(TASK / "ledger.py"))
                return Reply(reasoning="Look at refund().", tool_calls=(read,))
            return Reply(text="refund() appends -amount, so it subtracts the amount.")
        prompt = conversation.last_user_text
        done = len(conversation.tool_results(conversation.since_last_user()))
        if AFTER_COMPACT_PROMPT in prompt:
            return Reply(text="We fixed Ledger.balance and added a refund test.")
        if REFUND_PROMPT in prompt:
            if done == 0:
                write = _call("WriteFile", "refunds", path=str(TASK / "test_refunds.py"),
                              content=TEST_REFUNDS)  # fmt: skip
                return Reply(text="I'll add a refund test.", tool_calls=(write,))
            return Reply(text="Added test_refunds.py: a refund of 4 from 10 leaves 6.")
        if FIX_PROMPT in prompt:
            return self._fix(done)
        return Reply(text="Done.")

    def _fix(self, done: int) -> Reply:
        rerun = "python3 -m unittest -v test_ledger && seq 1 1500"
        agent = _call("Agent", "spawn", description="Check refunds", prompt=SUBAGENT_PROMPT,
                      subagent_type="explore")  # fmt: skip
        edit = _call("StrReplaceFile", "fix", path=str(TASK / "ledger.py"),
                     edit={"old": LEDGER_BUG, "new": LEDGER_FIX})  # fmt: skip
        steps = [
            Reply(
                reasoning="Run the failing test first.",
                text="Let me run the tests first.",
                tool_calls=(
                    _call("Shell", "run-tests", command="python3 -m unittest -v test_ledger"),
                ),
            ),
            Reply(tool_calls=(_call("ReadFile", "read-ledger", path=str(TASK / "ledger.py")),)),
            Reply(
                text="Let me check the project notes too.",
                tool_calls=(_call("ReadFile", "read-notes", path=str(TASK / MISSING_FILE)),),
            ),
            Reply(
                text="There are no notes. I'll ask a helper to check the refunds.",
                tool_calls=(agent,),
            ),
            Reply(text="balance() skips the first entry. Fixing it.", tool_calls=(edit,)),
            Reply(tool_calls=(_call("Shell", "rerun", command=rerun),)),
        ]
        if done < len(steps):
            return steps[done]
        return Reply(text="Fixed: Ledger.balance now sums every entry, and test_ledger passes.")


def _prepare(ctx: RunContext) -> None:
    (ctx.home / "config.toml").write_text(
        f'default_model = "scripted"\ntelemetry = false\n\n'
        f'[providers.scripted]\ntype = "openai_legacy"\nbase_url = "{ctx.base_url}/v1"\n'
        f'api_key = "{ctx.key}"\n\n'
        f'[models.scripted]\nprovider = "scripted"\nmodel = "{MODEL}"\n'
        "max_context_size = 128000\n"
    )


def _env(ctx: RunContext) -> dict[str, str]:
    return {"KIMI_DISABLE_TELEMETRY": "1"}


_RUN = ("{bin}", "-c", "from kimi_cli.cli import cli; cli()", "--config-file",
        "{home}/config.toml", "--print", "--yolo")  # fmt: skip

# Kimi's system prompt and agent prompts, should a record copy them.
OWN_TEXT = OwnText(prefixes=("You are Kimi Code CLI", "You are a software engineering expert"))

RECIPE = Recipe(
    agent="kimi",
    package="kimi-cli",
    version="1.52.0",
    ecosystem="pypi",
    python="3.13",
    bin="bin/python",
    format="kimi",
    session_dir=".kimi",
    steps=(
        Step("fix", (*_RUN, "-p", FIX_PROMPT)),
        Step("refunds", (*_RUN, "-C", "-p", REFUND_PROMPT)),
        Step("compact", (*_RUN, "-C", "-p", "/compact")),
        Step("after-compact", (*_RUN, "-C", "-p", AFTER_COMPACT_PROMPT)),
    ),
    script=KimiScript,
    env=_env,
    prepare=_prepare,
    # Kimi's logs, telemetry queue and device id; context.jsonl, the model's context
    # (rewritten on compaction, its system prompt included): not a source.
    exclude=("logs", "telemetry", "device_id", "context*.jsonl"),
    expect={
        "sessions": 2,
        "children": 1,
        "events": {
            "message/user": 5,
            "message/assistant": 12,
            "tool/call": 8,
            "tool/result": 8,
            "command": 1,
            "command/output": 1,
            "compaction": 1,
        },
        "tool_errors": 2,  # the failing test run and the missing file
        "cwd": str(TASK),
        "watch": "sessions/*/*/wire.jsonl",
    },
    own_text=OWN_TEXT,
)
