"""Code Puppy (PyPI ``code-puppy``): ``code-puppy -p PROMPT`` (one prompt, then exit) with a
``custom_openai`` model of ``extra_models.json`` whose ``custom_endpoint`` is the scripted
server (the OpenAI chat dialect), ``yolo_mode`` on (no confirmations), version checks off
(``NO_VERSION_UPDATE``).

Code Puppy autosaves the session after each turn: ``~/.code_puppy/autosaves/<name>.json``
(a versioned envelope of pydantic-ai messages) with ``<name>_meta.json`` beside it (the
working folder as ``scope_key``); a sub-agent run by ``invoke_agent`` keeps its own
history in ``~/.code_puppy/subagent_sessions/<session id>.json`` with a ``.txt`` of its
metadata.

Steps: the fix (``shell``, ``read_file`` and a read of a missing file, an ``invoke_agent``
sub-agent, ``replace_in_file``, a long output), then ``-r`` (resume the session by its
name): the refund test (``create_file``), a turn interrupted (SIGINT) while its command
runs, a question after it.
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
    summary_asked,
)
from tests.recording.script import ToolCall
from tests.recording.scrub import OwnText

TASK = RECORD_ROOT / "code-puppy" / "shop"
HOME = RECORD_ROOT / "code-puppy" / "home"
FOLDER = HOME / ".code_puppy"
MODEL = "scripted-model"
SESSION = "ledger-work"  # the session's name: ``-r`` resumes it


class PuppyTools(NamedTools):
    """``replace_in_file`` takes a list of replacements; ``invoke_agent`` runs a sub-agent
    to its answer in one call."""

    def edit(self, step: str, name: str, old: str, new: str) -> ToolCall:
        return self.tool_call(
            "replace_in_file",
            step,
            file_path=self.path(name),
            replacements=[{"old_str": old, "new_str": new}],
        )

    def spawn(self, step: str, description: str, prompt: str) -> tuple[ToolCall, ...]:
        return (self.tool_call("invoke_agent", step, agent_name="code-puppy", prompt=prompt),)


def _script() -> PlanScript:
    return PlanScript(
        PuppyTools(
            TASK,
            "call_",
            ("shell", "command"),
            ("read_file", "file_path"),
            ("create_file", "file_path", "content"),
        ),
        summary_asked,
    )


def _prepare(ctx: RunContext) -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    (FOLDER / "puppy.cfg").write_text(
        "[puppy]\n"
        "puppy_name = Rex\n"
        "owner_name = Tester\n"
        f"model = {MODEL}\n"
        "yolo_mode = true\n"
        "auto_save_session = true\n"
    )
    endpoint = {"url": f"{ctx.base_url}/v1", "api_key": "$SCRIPTED_KEY"}
    model = {"type": "custom_openai", "name": MODEL, "custom_endpoint": endpoint}
    # The key is named, not written: Code Puppy reads $SCRIPTED_KEY from the environment.
    (FOLDER / "extra_models.json").write_text(
        json.dumps({MODEL: model | {"context_length": 200000}}) + "\n"
    )


def _env(ctx: RunContext) -> dict[str, str]:
    return {
        "SCRIPTED_KEY": ctx.key,
        "NO_VERSION_UPDATE": "1",
        "CODE_PUPPY_NO_SPLASH": "1",
        "CODE_PUPPY_SKIP_TUTORIAL": "1",
        "CODE_PUPPY_NO_TUI": "1",
        "CODE_PUPPY_DISABLE_ASK_USER_QUESTION": "1",
    }


_RUN = ("{bin}", "-m", MODEL, "-r", SESSION)
# Before the question: a context of 1,500 tokens, so that Code Puppy compacts the session
# (its summary asked of the same model) before it answers.
SHRINK = (
    "python3",
    "-c",
    "import json, sys; p = sys.argv[1]; m = json.load(open(p));"
    " m[sys.argv[2]]['context_length'] = 1500; json.dump(m, open(p, 'w'))",
    str(FOLDER / "extra_models.json"),
    MODEL,
)

RECIPE = Recipe(
    agent="code-puppy",
    package="code-puppy",
    version="0.0.946",
    ecosystem="pypi",
    bin="bin/code-puppy",
    format="code-puppy",
    session_dir=".code_puppy",
    steps=(
        Step("fix", (*_RUN, "-p", FIX_PROMPT)),
        Step("refunds", (*_RUN, "-p", REFUND_PROMPT)),
        Step("interrupt", (*_RUN, "-p", SLOW_PROMPT), interrupt_after=20.0),
        Step("shrink", SHRINK),
        Step("after", (*_RUN, "-p", AFTER_COMPACT_PROMPT)),
        Step("image-file", WRITE_IMAGE),
        Step("image", (*_RUN, "-p", f"{IMAGE_PROMPT} {{task}}/{IMAGE_FILE}")),
    ),
    script=_script,
    env=_env,
    prepare=_prepare,
    # Its settings (the fake key's variable, the endpoint), locks, logs, the commands,
    # skills and plug-ins it installs, its prompt history and quick-resume pointers: the
    # sessions are autosaves/ and subagent_sessions/.
    exclude=(
        "puppy.cfg",
        "extra_models.json",
        "*.lock",
        "logs",
        "agents",
        "commands",
        "kennel",
        "plugin-skills",
        "plugins",
        "scripts",
        "skills",
        "command_history.txt",
        "dir_sessions",
        ".flux_bootstrap_*",
        ".session_format_v2_migrated",
        ".contexts_sweep_done",
    ),
    expect={
        "sessions": 2,
        "events": {
            "message/user": 5,
            "message/assistant": 7,
            "tool/call": 3,
            "tool/result": 3,
            # The compaction's summary: what it summarised is no longer in the file.
            "message/context": 1,
        },
        # The command the interrupt stopped ("interrupted" outcome).
        "tool_errors": 1,
        "skipped": {"request:instructions": 7, "user-prompt:binary": 1},
        "titles": ["ledger-work"],
        "whole": True,
        "no_watch": "whole JSON documents rewritten after each turn (test_code_puppy"
        " follows one with watch)",
    },
    note="The compaction (before the question) rewrote the session: the summary, the first"
    " prompt kept, then the turns after the fix; the fix's calls, its invoke_agent call among"
    " them, are no longer in the file, so the sub-agent's session cites no call.",
    # Each request's instructions: Code Puppy's system prompt.
    own_text=OwnText(fields=("instructions",)),
)
